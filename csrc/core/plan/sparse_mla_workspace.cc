/*!
 * \file core/plan/sparse_mla_workspace.cc
 * \brief The FlashMLA sparse backend's load-time WorkspaceManager reservation (sparse_mla_workspace.h).
 */
#include "vllm_mem/plan/sparse_mla_workspace.h"

#include <vector>

#include "core/base/checked_math.h"
#include "core/plan/mxfp4_backend.h"
#include "core/plan/workspace_manager.h"

namespace vllm_mem {
namespace {

constexpr int64_t kBf16Bytes = 2;
// FlashMLA sparse's prefill kernel pads heads to 64 on SM90 (and on SM100 from 0.32).
constexpr int64_t kSm90PrefillPaddingHeads = 64;

bool Fp8Cache(const std::string& kv_cache_dtype) { return kv_cache_dtype.starts_with("fp8"); }

/*! vllm/platforms/cuda.py's sparse MLA priorities: whether FlashMLA sparse is the backend picked. */
bool PicksFlashMlaSparse(int capability, bool fp8, int64_t heads, const SparseMlaWorkspaceRule& rule) {
  if (capability >= 90 && capability < 100) return fp8 || !rule.sm90_flash_attn_for_bf16;
  if (capability >= 100 && capability < 110) {
    if (fp8) return !rule.sm100_flashinfer_for_fp8;
    return heads > rule.sm100_flashinfer_max_heads;
  }
  return false;  // FlashMLA sparse supports the SM90 and SM100 families only
}

int64_t Piece(int64_t rows, int64_t width, const char* field) {
  return WorkspacePieceBytes(CheckedMul(CheckedMul(rows, width, field), kBf16Bytes, field), field);
}

}  // namespace

SparseMlaLoadWorkspace EstimateSparseMlaLoadWorkspace(const ModelSpec& spec, const SparseMlaWorkspaceOptions& o,
                                                      const SparseMlaWorkspaceRule& rule) {
  SparseMlaLoadWorkspace out;
  if (!spec.mla || spec.mla->index_topk == 0) return out;
  RequirePositive(o.tensor_parallel_size, "tensor_parallel_size");
  RequirePositive(o.max_num_batched_tokens, "max_num_batched_tokens");
  RequirePositive(o.max_model_len_tokens, "max_model_len");
  if (!o.gpu_known || o.compute_capability.empty()) {
    out.modelled = false;
    return out;
  }
  const bool fp8 = Fp8Cache(o.kv_cache_dtype);
  const int capability = CapabilityInt(o.compute_capability);
  const int64_t heads = CeilDiv(spec.num_attention_heads, o.tensor_parallel_size);
  out.flashmla_sparse = PicksFlashMlaSparse(capability, fp8, heads, rule);
  if (!out.flashmla_sparse) return out;
  const auto& a = *spec.mla;
  const int64_t q_width = a.kv_lora_rank + a.qk_rope_head_dim;  // 576 for DeepSeek-V3.2
  const int64_t tokens = o.max_num_batched_tokens;
  const int64_t padding = capability >= 100 ? rule.sm100_prefill_padding_heads : kSm90PrefillPaddingHeads;
  const int64_t padded_heads = padding > 0 ? CeilDiv(heads, padding) * padding : heads;
  std::vector<int64_t> pieces;
  if (rule.query_buffer) {
    const int64_t q_heads = !fp8 && rule.query_heads_padded_for_bf16_kv ? padded_heads : heads;
    pieces.push_back(Piece(CheckedMul(tokens, q_heads, "max_num_batched_tokens"), q_width, "max_num_batched_tokens"));
  }
  if (fp8 && rule.prefill_rows_per_max_model_len_tokens > 0) {
    const bool long_context =
        rule.long_context_above_tokens > 0 && o.max_model_len_tokens > rule.long_context_above_tokens;
    const int64_t per_token = long_context ? rule.long_context_prefill_rows_per_max_model_len_tokens
                                           : rule.prefill_rows_per_max_model_len_tokens;
    pieces.push_back(Piece(CheckedMul(o.max_model_len_tokens, per_token, "max_model_len"), q_width, "max_model_len"));
    if (rule.fp8_mqa_prefill_buffers) {
      const int64_t padded_rows = CheckedMul(tokens, padded_heads, "max_num_batched_tokens");
      pieces.push_back(Piece(padded_rows, q_width, "max_num_batched_tokens"));
      pieces.push_back(Piece(padded_rows, a.kv_lora_rank, "max_num_batched_tokens"));
      pieces.push_back(
          Piece(CheckedMul(tokens, heads, "max_num_batched_tokens"), a.kv_lora_rank, "max_num_batched_tokens"));
    }
  }
  for (const int64_t p : pieces) out.reserved_bytes = CheckedAdd(out.reserved_bytes, p, "max_num_batched_tokens");
  return out;
}

int64_t SharedWorkspaceProfileGrowth(int64_t request_bytes, int64_t reserved_bytes, bool keeps_views) {
  if (request_bytes <= reserved_bytes) return 0;
  return keeps_views ? request_bytes : request_bytes - reserved_bytes;
}

}  // namespace vllm_mem
