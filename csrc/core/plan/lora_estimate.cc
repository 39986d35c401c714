/*!
 * \file core/plan/lora_estimate.cc
 * \brief --enable-lora: vLLM's adapter slots, the Punica wrapper's metadata and the shrink
 *        buffer of the profile run (lora_estimate.h), from the layer shapes vLLM's LoRA
 *        wrappers allocate.
 */
#include "vllm_mem/plan/lora_estimate.h"

#include <string>

#include "core/base/checked_math.h"
#include "core/model/config_readers.h"
#include "core/model/parallelism.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/model/dtype.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "enable_lora";

/*! vLLM's LogitsProcessorWithLoRA.create_lora_weights bound (vllm/lora/layers/logits_processor.py). */
constexpr int64_t kLoraMaxVocabSize = 258048;

/*! The family's LoRA layout (model_families.json "lora_layout"); "" where no family entry says
 *  how vLLM wraps its layers, which is refused by name. */
std::string LoraLayout(const std::string& model_type) {
  const JsonValue* v = FamilyTrait(model_type, "lora_layout");
  return v != nullptr ? v->AsString() : "";
}

/*! Whether embed_tokens and lm_head get slots: the family's vLLM class lists them in
 *  embedding_modules (model_families.json "lora_embedding_modules") and is the top-level model.
 *  get_supported_lora_modules (vllm/lora/utils.py) reads model.embedding_modules of the top-level
 *  model, and the multimodal wrappers (Mistral3ForConditionalGeneration, LlavaForConditionalGeneration)
 *  list none: the v0.21.0 Ministral-3 LoRA start-up's 0.081-0.085 GiB is the decoder slots without
 *  them (tests/python/test_lora.py). */
bool LoraEmbeddingModules(const ModelSpec& spec) {
  return FamilyFlag(spec.model_type, "lora_embedding_modules", false) && !spec.vision.has_value();
}

int64_t LoraDTypeBytes(const ModelSpec& spec, const LoraOptions& o) {
  // LoRAConfig.verify_with_model_config: "auto" is the model's dtype.
  const std::string& lora = o.lora_dtype.empty() ? std::string("auto") : o.lora_dtype;
  if (lora != "auto") return DTypeSizeBytes(ParseDType(lora, "lora_dtype"));
  return DTypeSizeBytes(ResolveModelDType(o.dtype.empty() ? "auto" : o.dtype, spec.dtype, "dtype"));
}

/*! One wrapped linear's lora_a_stacked + lora_b_stacked elements for one slot: \p slices
 *  sub-projections each rank_a x in (lora_a) and out_i x rank (lora_b, out_total summed). */
int64_t LinearSlotElems(int64_t slices, int64_t rank_a, int64_t in, int64_t out_total, int64_t rank) {
  const int64_t a = CheckedMul(CheckedMul(slices, rank_a, kField), in, kField);
  return CheckedAdd(a, CheckedMul(out_total, rank, kField), kField);
}

/*! One decoder layer's slot elements (one slot) on one TP rank: qkv_proj (3 slices, column
 *  parallel: MergedQKVParallelLinearWithLoRA), o_proj (row parallel), gate_up_proj (2 slices,
 *  MergedColumnParallelLinearWithLoRA; fc1 alone when the MLP is not gated) and down_proj (row
 *  parallel). Column-parallel: lora_a (rank or rank / tp fully sharded, in), lora_b (out / tp,
 *  rank). Row-parallel: lora_a (rank, in / tp), lora_b (out, or out / tp fully sharded, rank). */
int64_t DecoderLayerSlotElems(const ModelSpec& spec, const LoraOptions& o, const LayerSpec& layer) {
  const int64_t tp = o.tensor_parallel_size, r = o.max_lora_rank, h = spec.hidden_size;
  const int64_t column_a = o.fully_sharded_loras ? r / tp : r;
  const int64_t row_b_out = o.fully_sharded_loras ? h / tp : h;
  const int64_t q = CheckedMul(AttentionHeadsPerRank(spec.num_attention_heads, tp), spec.head_dim, kField);
  const int64_t kv = CheckedMul(KvHeadsPerRank(spec.num_kv_heads, tp), spec.head_dim, kField);
  int64_t e = LinearSlotElems(3, column_a, h, CheckedAdd(q, 2 * kv, kField), r);
  e = CheckedAdd(e, LinearSlotElems(1, r, q, row_b_out, r), kField);
  if (!layer.mlp) return e;
  const int64_t inter = CeilDiv(layer.intermediate_size > 0 ? layer.intermediate_size : spec.intermediate_size, tp);
  const int64_t mlp_slices = spec.traits.gated_mlp ? 2 : 1;
  e = CheckedAdd(e, LinearSlotElems(mlp_slices, column_a, h, CheckedMul(mlp_slices, inter, kField), r), kField);
  return CheckedAdd(e, LinearSlotElems(1, r, inter, row_b_out, r), kField);
}

/*! A tensor's bytes as the caching allocator counts them (its 512-byte blocks). */
int64_t Allocated(int64_t bytes) { return AllocatorBlockBytes(bytes, kField); }

/*! The Punica wrapper's GPU index tensors (vllm/lora/punica_wrapper/punica_base.py and
 *  punica_gpu.py with lora_kernel_metadata.py): int64 _token_lora_indices (T), _sampler_indices
 *  and _sampler_indices_padded (S), _embeddings_indices (2, T); two LoRAKernelMeta (T and S
 *  rows), each int32 token_lora_mapping and token_indices_sorted_by_lora_ids (rows),
 *  active_lora_ids and num_tokens_per_lora (max_loras + 1), lora_token_start_loc (max_loras + 2). */
int64_t PunicaMetadataBytes(const LoraOptions& o) {
  const int64_t t = o.max_num_batched_tokens, s = o.max_num_seqs, l = o.max_loras;
  int64_t b = CheckedAdd(Allocated(8 * t), CheckedMul(2, Allocated(8 * s), kField), kField);
  b = CheckedAdd(b, Allocated(16 * t), kField);
  for (const int64_t rows : {t, s}) {
    const int64_t meta = 2 * Allocated(4 * rows) + 2 * Allocated(4 * (l + 1)) + Allocated(4 * (l + 2));
    b = CheckedAdd(b, meta, kField);
  }
  return b;
}

}  // namespace

void CheckLoraSupported(const ModelSpec& spec, const LoraOptions& o) {
  RequirePositive(o.max_loras, "max_loras");
  RequirePositive(o.max_lora_rank, "max_lora_rank");
  RequirePositive(o.tensor_parallel_size, "tensor_parallel_size");
  const std::string layout = LoraLayout(spec.model_type);
  if (layout.empty()) {
    throw Unsupported(std::string(kField) + ": vLLM's LoRA layers for model_type " + EchoValue(spec.model_type) +
                      " are not modelled (model_families.json has no lora_layout for it)");
  }
  bool moe = spec.moe.has_value();
  for (const LayerSpec& layer : spec.layers) moe = moe || layer.moe || layer.recurrent_state;
  if (moe || spec.mla || spec.hybrid) {
    throw Unsupported(std::string(kField) + ": LoRA on " +
                      (spec.mla ? "MLA attention"
                       : moe    ? "MoE experts or recurrent layers"
                                : "hybrid layers") +
                      " (vLLM's FusedMoE / MLA LoRA wrappers) is not modelled");
  }
  if (const JsonValue* refusal = FamilyTrait(spec.model_type, "lora_tied_lm_head_refusal");
      refusal != nullptr && spec.tie_word_embeddings) {
    throw Unsupported(std::string(kField) + ": " + refusal->AsString());
  }
  if (LoraEmbeddingModules(spec) && spec.vocab_size > kLoraMaxVocabSize) {
    throw InvalidArgument(kField, "When using LoRA, vocab size must be <= 258048 (the model's vocab_size is " +
                                      std::to_string(spec.vocab_size) + ")");
  }
  if (o.fully_sharded_loras && o.max_lora_rank % o.tensor_parallel_size != 0) {
    // vllm/distributed/utils.py divide(): the fully sharded layers split the rank over TP.
    throw InvalidArgument("max_lora_rank", std::to_string(o.max_lora_rank) + " is not divisible by " +
                                               std::to_string(o.tensor_parallel_size) +
                                               " (fully_sharded_loras splits the rank over tensor_parallel_size)");
  }
}

LoraSlotBreakdown EstimateLoraSlots(const ModelSpec& spec, const LoraOptions& o, int64_t first_layer, int64_t end_layer,
                                    bool first_rank, bool last_rank) {
  CheckLoraSupported(spec, o);
  const int64_t slot_bytes = CheckedMul(o.max_loras, LoraDTypeBytes(spec, o), kField);
  LoraSlotBreakdown b;
  int64_t elems = 0;
  for (int64_t i = first_layer; i < end_layer; ++i) {
    elems = CheckedAdd(elems, DecoderLayerSlotElems(spec, o, spec.layers.at(static_cast<size_t>(i))), kField);
  }
  b.decoder_layers_bytes = CheckedMul(elems, slot_bytes, kField);
  if (LoraEmbeddingModules(spec)) {
    const int64_t r = o.max_lora_rank, h = spec.hidden_size, v = spec.vocab_size;
    // VocabParallelEmbeddingWithLoRA: lora_a (org_vocab_size, rank), lora_b (1, embedding_dim, rank),
    // not split over TP; LogitsProcessorWithLoRA: lora_a (1, rank, hidden), lora_b (1, vocab_size, rank).
    const int64_t table = CheckedMul(CheckedAdd(v, h, kField), r, kField);
    if (first_rank) b.embedding_bytes = CheckedMul(table, slot_bytes, kField);
    if (last_rank) {
      b.lm_head_bytes = CheckedMul(table, slot_bytes, kField);
      // At TP > 1 the wrapper keeps get_sharded_to_full_mapping() on the GPU: one int64 per row of
      // the vocabulary padded to DEFAULT_VOCAB_PADDING_SIZE (64; None at TP 1).
      if (o.tensor_parallel_size > 1) b.lm_head_bytes += Allocated(CheckedMul(CeilDiv(v, 64) * 64, 8, kField));
    }
  }
  b.punica_metadata_bytes = PunicaMetadataBytes(o);
  b.total_bytes = CheckedAdd(CheckedAdd(b.decoder_layers_bytes, b.embedding_bytes, kField),
                             CheckedAdd(b.lm_head_bytes, b.punica_metadata_bytes, kField), kField);
  return b;
}

int64_t LoraShrinkBufferBytes(int64_t slices, int64_t tokens, int64_t max_lora_rank) {
  constexpr int64_t kFloat32Bytes = 4;
  return CheckedMul(CheckedMul(CheckedMul(slices, tokens, kField), max_lora_rank, kField), kFloat32Bytes, kField);
}

}  // namespace vllm_mem
