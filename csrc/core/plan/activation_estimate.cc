/*!
 * \file core/plan/activation_estimate.cc
 * \brief Profile-run activation peak: the forward of max_num_batched_tokens tokens and the
 *        dummy sampler run, term by term.
 */
#include "vllm_mem/plan/activation_estimate.h"

#include <algorithm>
#include <cmath>

#include "core/base/checked_math.h"
#include "vllm_mem/model/dtype.h"
#include "vllm_mem/base/error.h"
#include "core/model/parallelism.h"

namespace vllm_mem {
namespace {

int64_t Scaled(double factor, int64_t bytes, const char* field) {
  const double v = factor * static_cast<double>(bytes);
  if (!(v < 9.0e18 && v > -9.0e18)) throw InvalidArgument(field, "size overflows 64 bits");
  return static_cast<int64_t>(std::llround(v));
}

struct ForwardTerms {
  int64_t hidden = 0, mlp = 0, attention = 0;
};

// Per-token element counts of one layer's largest temporaries on one tensor-parallel rank.
ForwardTerms ForwardPerRank(const ModelSpec& spec, int64_t tokens, int64_t tp, int64_t dtype_bytes,
                            const ActivationConstants& c) {
  ForwardTerms t;
  const int64_t td = CheckedMul(tokens, dtype_bytes, "max_num_batched_tokens");
  t.hidden = Scaled(c.hidden_tensors, CheckedMul(td, spec.hidden_size, "activation"), "activation");

  // MLP: the merged gate+up output (2I) and the activation's output (I) are alive together;
  // an ungated MLP (Phi) holds fc1's output and its GELU (2I). Column-parallel: I / tp.
  const int64_t mlp_factor = spec.traits.gated_mlp ? 3 : 2;
  int64_t dense = 0;
  bool any_dense = false, any_moe = false;
  for (const auto& layer : spec.layers) (layer.moe ? any_moe : any_dense) = true;
  if (spec.layers.empty()) any_dense = true;
  if (any_dense && spec.intermediate_size > 0) {
    dense = CheckedMul(td, mlp_factor * CeilDiv(spec.intermediate_size, tp), "activation");
  }
  int64_t moe = 0;
  if (any_moe && spec.moe) {
    // vLLM's fused MoE keeps three caches per routed token copy: gate+up (2I_e), the
    // activation (I_e) and the expert output (H); the router logits are float32.
    const auto& m = *spec.moe;
    const int64_t copies = CheckedMul(td, m.num_experts_per_token, "activation");
    const int64_t per_copy = 3 * CeilDiv(m.expert_intermediate_size, tp) + spec.hidden_size;
    moe = CheckedMul(copies, per_copy, "activation");
    moe = CheckedAdd(moe, CheckedMul(CheckedMul(tokens, m.num_experts, "activation"), 4, "activation"), "activation");
    const int64_t shared_inter = m.shared_expert_intermediate_size +
                                 m.num_shared_experts * m.expert_intermediate_size;
    if (shared_inter > 0) moe = CheckedAdd(moe, CheckedMul(td, 3 * CeilDiv(shared_inter, tp), "activation"), "activation");
  }
  t.mlp = std::max(dense, moe);

  // Attention: q, k, v and the output, head-parallel.
  const int64_t heads = CeilDiv(spec.num_attention_heads, tp);
  int64_t per_token = 0;
  if (spec.mla) {
    const auto& a = *spec.mla;
    // Queries, the compressed KV latent, and the per-head K/V decompressed for prefill.
    per_token = heads * (a.qk_nope_head_dim + a.qk_rope_head_dim) + a.kv_lora_rank + a.qk_rope_head_dim +
                heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim) + heads * a.v_head_dim;
  } else {
    const int64_t kv_heads = KvHeadsPerRank(spec.num_kv_heads, tp);
    per_token = (heads + 2 * kv_heads) * spec.head_dim + heads * spec.head_dim;
  }
  t.attention = CheckedMul(td, per_token, "activation");
  return t;
}

int64_t ActivationDTypeBytes(const ModelSpec& spec, const std::string& dtype) {
  // Quantized checkpoints still compute in the served dtype (bf16 / fp16).
  return DTypeSizeBytes(ResolveModelDType(dtype.empty() ? "auto" : dtype, spec.dtype, "dtype"));
}

}  // namespace

int64_t ForwardActivationBytes(const ModelSpec& spec, int64_t num_tokens, int64_t tensor_parallel_size,
                               const std::string& dtype, const ActivationConstants& constants) {
  RequirePositive(num_tokens, "num_tokens");
  RequirePositive(tensor_parallel_size, "tensor_parallel_size");
  ForwardTerms t = ForwardPerRank(spec, num_tokens, tensor_parallel_size, ActivationDTypeBytes(spec, dtype), constants);
  return CheckedAdd(t.hidden, std::max(t.mlp, t.attention), "activation");
}

ActivationBreakdown EstimateActivationPeak(const ModelSpec& spec, const ActivationOptions& o) {
  RequirePositive(o.max_num_batched_tokens, "max_num_batched_tokens");
  RequirePositive(o.max_num_seqs, "max_num_seqs");
  ValidateParallelism(spec.num_layers, o.tensor_parallel_size, o.pipeline_parallel_size);
  if (o.pp_rank < 0 || o.pp_rank >= o.pipeline_parallel_size) {
    throw InvalidArgument("pp_rank", "must be in [0, pipeline_parallel_size), got " + std::to_string(o.pp_rank));
  }
  const int64_t dtype_bytes = ActivationDTypeBytes(spec, o.dtype);
  const int64_t tokens = o.max_num_batched_tokens;
  ForwardTerms t = ForwardPerRank(spec, tokens, o.tensor_parallel_size, dtype_bytes, o.constants);

  ActivationBreakdown b;
  b.hidden_states_bytes = t.hidden;
  b.mlp_intermediate_bytes = t.mlp;
  b.attention_bytes = t.attention;
  b.forward_bytes = CheckedAdd(t.hidden, std::max(t.mlp, t.attention), "activation");
  const int64_t hidden_out = CheckedMul(CheckedMul(tokens, spec.hidden_size, "activation"), dtype_bytes, "activation");
  if (o.pipeline_parallel_size > 1) b.pipeline_buffers_bytes = CheckedMul(hidden_out, 2, "activation");
  if (o.pp_rank == o.pipeline_parallel_size - 1) {
    // The dummy sampler run: one row of logits per request, gathered to the full vocabulary
    // on every tensor-parallel rank, while the forward's output is still referenced.
    const int64_t rows = std::min(o.max_num_seqs, tokens);
    const int64_t logit_elems = CheckedMul(rows, spec.vocab_size, "activation");
    b.logits_bytes = CheckedMul(logit_elems, dtype_bytes, "activation");
    b.sampler_bytes = Scaled(o.constants.sampler_bytes_per_logit, logit_elems, "activation");
    b.sampler_phase_bytes = CheckedAdd(CheckedAdd(hidden_out, b.logits_bytes, "activation"), b.sampler_bytes, "activation");
  }
  b.sampler_dominates = b.sampler_phase_bytes > b.forward_bytes;
  b.peak_bytes = CheckedAdd(std::max(b.forward_bytes, b.sampler_phase_bytes), b.pipeline_buffers_bytes, "activation");
  return b;
}

}  // namespace vllm_mem
