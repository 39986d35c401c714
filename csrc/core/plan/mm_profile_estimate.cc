/*!
 * \file core/plan/mm_profile_estimate.cc
 * \brief The encoder budget and the dummy encoder batch of vLLM's profile run, term by term.
 */
#include "vllm_mem/plan/mm_profile_estimate.h"

#include <algorithm>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/model/dtype.h"
#include "vllm_mem/model/vision_profile_item.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "multimodal profile";

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kField); }
int64_t Add(int64_t a, int64_t b) { return CheckedAdd(a, b, kField); }

/*! Elements per patch token of the tower's largest layer on one TP rank (mm_encoder_tp_mode
 *  "weights", the default: projections split over tp, the residual stream replicated). The
 *  tower runs eagerly (it is not torch.compile'd), so vLLM's custom ops take their
 *  forward_native path under the compiled engine's default custom_ops "none" and materialize
 *  their temporaries.
 *  - SigLIP (vllm siglip.py SiglipEncoderLayer): the residual and the normed input (2 h), fc1's
 *    output and its GELU (2 I), or attention's qkv, rotated-free q/k/v views, output (4 h);
 *  - Pixtral (vllm pixtral.py PixtralHFTransformerBlock / PixtralHFMLP), at a layer past the
 *    first: the layer input, the attention output, their sum and the normed input, the
 *    transformer's own input (PixtralHFVisionModel.forward's patch_embeds, also held by
 *    PixtralHFTransformer.forward's hidden_states_pool = [x]) and the patch convolution's outputs
 *    the forward keeps in patch_embeds_list (6 h); the rotary cos and sin in the model dtype
 *    (PixtralRotaryEmbedding, head_dim each); and the MLP's merged gate_up (2 I) with
 *    SiluAndMul.forward_native's silu(x[:d]) (I) and its product (I): 4 I. */
int64_t LayerElementsPerToken(const VisionEncoderSpec& v, int64_t tp) {
  const int64_t h = v.hidden_size;
  const int64_t inter = CeilDiv(v.intermediate_size, tp);
  if (v.encoder == VisionEncoderKind::kPixtral) {
    const int64_t rotary = v.num_heads > 0 ? Mul(2, h / v.num_heads) : 0;
    return Add(Add(Mul(6, h), Mul(4, inter)), rotary);
  }
  return Add(Mul(2, h), std::max(Mul(2, inter), CeilDiv(Mul(4, h), tp)));
}

}  // namespace

MmEncoderBudget ComputeMmEncoderBudget(const MmBudgetOptions& o) {
  RequirePositive(o.max_tokens_per_item, "max_tokens_per_item");
  RequirePositive(o.max_num_batched_tokens, "max_num_batched_tokens");
  RequirePositive(o.max_num_seqs, "max_num_seqs");
  RequirePositive(o.max_model_len, "max_model_len");
  RequireNonNegative(o.limit_per_prompt, "limit_mm_per_prompt");
  MmEncoderBudget b;
  // A modality limited to 0 is not a tower modality: no budget, no profile run ("All non-text
  // modalities supported by the model have been explicitly disabled via limit_mm_per_prompt").
  if (o.limit_per_prompt == 0) return b;
  b.encoder_compute_budget_tokens = std::max(o.max_num_batched_tokens, o.max_tokens_per_item);
  b.encoder_cache_size_tokens = b.encoder_compute_budget_tokens;
  b.encoder_budget_tokens = std::min(b.encoder_compute_budget_tokens, b.encoder_cache_size_tokens);
  const int64_t encoder_items = b.encoder_budget_tokens / o.max_tokens_per_item;
  b.max_items_per_prompt = std::max<int64_t>(1, std::min(o.limit_per_prompt, o.max_model_len / o.max_tokens_per_item));
  int64_t requests = o.max_num_seqs;
  if (!o.chunked_prefill) requests = std::min(requests, o.max_num_batched_tokens / o.max_tokens_per_item);
  const int64_t decoder_items = Mul(requests, b.max_items_per_prompt);
  b.max_items_per_batch = std::max<int64_t>(1, std::min(encoder_items, decoder_items));
  return b;
}

MmProfileBreakdown EstimateMmProfile(const ModelSpec& spec, const MmProfileOptions& o) {
  MmProfileBreakdown m;
  if (!spec.vision) return m;
  const std::optional<VisionDummyItem> item = LargestVisionItem(*spec.vision);
  if (!item) return m;
  m.modelled = true;
  if (o.skip_mm_profiling || o.limit_mm_per_prompt == 0) return m;
  RequirePositive(o.tensor_parallel_size, "tensor_parallel_size");
  MmBudgetOptions bo;
  bo.max_tokens_per_item = item->prompt_tokens;
  bo.max_num_batched_tokens = o.max_num_batched_tokens;
  bo.max_num_seqs = o.max_num_seqs;
  bo.max_model_len = o.max_model_len;
  bo.limit_per_prompt = o.limit_mm_per_prompt < 0 ? kDefaultMmLimitPerPrompt : o.limit_mm_per_prompt;
  m.budget = ComputeMmEncoderBudget(bo);
  if (m.budget.encoder_budget_tokens == 0) return m;
  m.runs = true;
  m.items = m.budget.max_items_per_batch;
  const int64_t dtype_bytes =
      DTypeSizeBytes(ResolveModelDType(o.dtype.empty() ? "auto" : o.dtype, spec.dtype, "dtype"));
  const VisionEncoderSpec& v = *spec.vision;
  const int64_t patches = Mul(m.items, item->patch_tokens);
  m.pixel_bytes = Mul(Mul(m.items, item->pixel_elements), dtype_bytes);
  m.encoder_output_bytes = Mul(Mul(Mul(m.items, item->embed_rows), spec.hidden_size), dtype_bytes);
  if (v.encoder == VisionEncoderKind::kPixtral && o.pixtral_dense_block_mask) {
    // transformers' generate_block_attention_mask: torch.full((N, N), finfo.min) in the patch
    // embeddings' dtype over every patch of the batch, expanded (not copied) to the heads.
    m.attention_mask_bytes = Mul(Mul(patches, patches), dtype_bytes);
  }
  m.encoder_layer_bytes = Mul(Mul(patches, LayerElementsPerToken(v, o.tensor_parallel_size)), dtype_bytes);
  m.encoder_phase_bytes = Add(Add(m.pixel_bytes, m.attention_mask_bytes), m.encoder_layer_bytes);
  m.resident_bytes = Add(m.pixel_bytes, m.encoder_output_bytes);
  return m;
}

}  // namespace vllm_mem
