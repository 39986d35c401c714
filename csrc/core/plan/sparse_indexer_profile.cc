/*!
 * \file core/plan/sparse_indexer_profile.cc
 * \brief DeepSeek-V3.2's indexer in vLLM's profile run (sparse_indexer_profile.h).
 */
#include "vllm_mem/plan/sparse_indexer_profile.h"

#include "core/base/checked_math.h"
#include "core/plan/workspace_manager.h"

namespace vllm_mem {
namespace {

// Each key's scale is one float32, whatever index_head_dim is: the op's buffers are
// [keys, index_head_dim] fp8 and [keys, 4] uint8 (vLLM hard-codes the 4).
constexpr int64_t kKeyScaleBytes = 4;
int64_t WorkspacePiece(int64_t bytes) { return WorkspacePieceBytes(bytes, "max_model_len"); }

}  // namespace

SparseIndexerProfileBytes EstimateSparseIndexerProfile(const ModelSpec& spec, int64_t max_model_len_tokens,
                                                       const SparseIndexerProfile& rule) {
  SparseIndexerProfileBytes out;
  if (!spec.mla || spec.mla->index_head_dim <= 0) return out;
  RequirePositive(max_model_len_tokens, "max_model_len");
  RequireNonNegative(rule.keys_per_max_model_len_tokens, "keys_per_max_model_len_tokens");
  RequireNonNegative(rule.radix_topk_workspace_bytes, "radix_topk_workspace_bytes");
  RequireNonNegative(rule.logits_reserve_bytes, "logits_reserve_bytes");
  RequireNonNegative(rule.long_context_above_tokens, "long_context_above_tokens");
  RequireNonNegative(rule.long_context_keys_per_max_model_len_tokens, "long_context_keys_per_max_model_len");
  const int64_t head_dim = spec.mla->index_head_dim;
  const bool long_context = rule.long_context_above_tokens > 0 && max_model_len_tokens > rule.long_context_above_tokens;
  const int64_t keys_per_token =
      long_context ? rule.long_context_keys_per_max_model_len_tokens : rule.keys_per_max_model_len_tokens;
  out.keys = CheckedMul(max_model_len_tokens, keys_per_token, "max_model_len");
  const int64_t values_bytes = CheckedMul(out.keys, head_dim, "max_model_len");
  const int64_t scales_bytes = CheckedMul(out.keys, kKeyScaleBytes, "max_model_len");
  if (rule.in_workspace) {
    out.workspace_bytes =
        CheckedAdd(CheckedAdd(WorkspacePiece(values_bytes), WorkspacePiece(scales_bytes), "max_model_len"),
                   WorkspacePiece(rule.radix_topk_workspace_bytes), "max_model_len");
  } else {
    // sparse_attn_indexer_fake: the flattened keys [keys, head_dim + 4] uint8, then .contiguous()
    // copies of their value and scale columns, all three alive until the op returns.
    const int64_t flattened = CheckedAdd(values_bytes, scales_bytes, "max_model_len");
    out.transient_bytes = CheckedAdd(CheckedAdd(AllocatorBlockBytes(flattened, "max_model_len"),
                                                AllocatorBlockBytes(values_bytes, "max_model_len"), "max_model_len"),
                                     AllocatorBlockBytes(scales_bytes, "max_model_len"), "max_model_len");
  }
  // The stand-in for the prefill logits comes after the workspace request, inside the same op.
  if (rule.logits_reserve_bytes > 0) {
    out.transient_bytes = CheckedAdd(out.transient_bytes,
                                     AllocatorBlockBytes(rule.logits_reserve_bytes, "max_model_len"), "max_model_len");
  }
  return out;
}

}  // namespace vllm_mem
