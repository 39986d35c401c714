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

/*! The Qwen-VL towers' largest live set per patch token of one block, in model-dtype elements,
 *  on one TP rank (vllm qwen2_vl.py, qwen2_5_vl.py, qwen3_vl.py; run eagerly, custom ops native,
 *  and a Python argument stays alive until its call returns). Attention (Qwen2_5_VisionAttention,
 *  the three towers' pattern): the block input and norm1's output (2 h), the qkv projection
 *  (3 h / tp), torch.cat([q, k]) for the rotary (2 h / tp), its rotated copy (2 h / tp), the
 *  flash-attention output (h / tp) and proj's output (h): 3 h + 8 h / tp; flash-attention
 *  materializes no [N, N] score (FLASH_ATTN, vLLM's vision backend on Hopper). MLP:
 *  - Qwen2.5-VL (RMSNorm with residual, gated SiLU): the input, the attention output, norm2's output
 *    and its residual (4 h), gate_up (2 I / tp), SiluAndMul.forward_native's silu and product
 *    (2 I / tp): 4 h + 4 I / tp; RMSNorm.forward_native's float32 sum of x and the residual, with
 *    both float32 copies, beside the input and the attention output: 8 h;
 *  - Qwen2-VL (LayerNorm, fc1 + QuickGELU x * sigmoid(1.702 x)): input and norm2's output (2 h),
 *    fc1's output, sigmoid's and the product (3 I / tp);
 *  - Qwen3-VL (LayerNorm, fc1 + GELU-tanh): the input, norm2's output and the interpolated position
 *    embeddings the tower's forward keeps as a local through every block (3 h), fc1's output and the
 *    activation (2 I / tp); its attention phase holds those embeddings too (+ h). */
int64_t QwenBlockElementsPerToken(const VisionEncoderSpec& v, int64_t tp) {
  const int64_t h = v.hidden_size;
  const int64_t inter = CeilDiv(v.intermediate_size, tp);
  const int64_t attention = Add(Mul(3, h), CeilDiv(Mul(8, h), tp));
  switch (v.encoder) {
    case VisionEncoderKind::kQwen25Vl:
      return std::max({attention, Mul(8, h), Add(Mul(4, h), Mul(4, inter))});
    case VisionEncoderKind::kQwen3Vl:
      return std::max(Add(attention, h), Add(Mul(3, h), Mul(2, inter)));
    default:  // Qwen2-VL
      return std::max(attention, Add(Mul(2, h), Mul(3, inter)));
  }
}

/*! The Qwen-VL towers' encoder working set over \p patches: the block's live set, the rotary table
 *  every block reads ((patches, head_dim / 2) float32: Qwen2_5_VisionRotaryEmbedding's frequencies
 *  indexed per patch), and Qwen3-VL's DeepStack features, each (patches / merge^2, out_hidden_size),
 *  kept from their layer to the tower's end (all of them at the last blocks). */
int64_t QwenEncoderLayerBytes(const VisionEncoderSpec& v, int64_t patches, int64_t tp, int64_t dtype_bytes) {
  constexpr int64_t kFloat32Bytes = 4;
  const int64_t block = Mul(Mul(patches, QwenBlockElementsPerToken(v, tp)), dtype_bytes);
  const int64_t rotary = Mul(Mul(patches, (v.hidden_size / v.num_heads) / 2), kFloat32Bytes);
  const int64_t merged_rows = patches / Mul(v.spatial_merge_size, v.spatial_merge_size);
  const int64_t deepstack = Mul(Mul(Mul(v.num_deepstack_mergers, merged_rows), v.out_hidden_size), dtype_bytes);
  return Add(Add(block, rotary), deepstack);
}

bool IsQwenVlTower(VisionEncoderKind kind) {
  return kind == VisionEncoderKind::kQwen2Vl || kind == VisionEncoderKind::kQwen25Vl ||
         kind == VisionEncoderKind::kQwen3Vl;
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
  // Qwen3-VL's tower returns its merger output and one DeepStack feature per
  // deepstack_visual_indexes entry side by side (torch.cat(..., dim=1)), and the encoder cache keeps
  // that whole row: (1 + len(deepstack_visual_indexes)) text-width embeddings per token.
  const int64_t embeds_per_row = Add(1, v.num_deepstack_mergers);
  m.encoder_output_bytes = Mul(Mul(Mul(Mul(m.items, item->embed_rows), embeds_per_row), spec.hidden_size), dtype_bytes);
  if (v.encoder == VisionEncoderKind::kPixtral && o.pixtral_dense_block_mask) {
    // transformers' generate_block_attention_mask: torch.full((N, N), finfo.min) in the patch
    // embeddings' dtype over every patch of the batch, expanded (not copied) to the heads.
    m.attention_mask_bytes = Mul(Mul(patches, patches), dtype_bytes);
  }
  m.encoder_layer_bytes = IsQwenVlTower(v.encoder)
                              ? QwenEncoderLayerBytes(v, patches, o.tensor_parallel_size, dtype_bytes)
                              : Mul(Mul(patches, LayerElementsPerToken(v, o.tensor_parallel_size)), dtype_bytes);
  m.encoder_phase_bytes = Add(Add(m.pixel_bytes, m.attention_mask_bytes), m.encoder_layer_bytes);
  m.resident_bytes = Add(m.pixel_bytes, m.encoder_output_bytes);
  return m;
}

}  // namespace vllm_mem
