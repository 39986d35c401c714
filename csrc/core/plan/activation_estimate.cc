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
#include "vllm_mem/plan/lora_estimate.h"

namespace vllm_mem {
namespace {

int64_t Scaled(double factor, int64_t bytes, const char* field) {
  const double v = factor * static_cast<double>(bytes);
  if (!(v < 9.0e18 && v > -9.0e18)) throw InvalidArgument(field, "size overflows 64 bits");
  return static_cast<int64_t>(std::llround(v));
}

struct ForwardTerms {
  int64_t hidden = 0, mlp = 0, attention = 0;
  // persistent: vLLM's WorkspaceManager buffer (the fused-MoE workspace, or DeepSeek-V3.2's indexer
  // request where larger), alive from the first layer that asks on, through the sampler
  int64_t moe_workspace = 0;
};

// The fused-MoE layer's memory at the profile batch, from vLLM v0.19's code path for unquantized /
// fp8 / mxfp4 experts (vllm/model_executor/layers/fused_moe/):
//  - modular_kernel.py FusedMoEModularKernel._allocate_buffers: with M = min(tokens,
//    VLLM_FUSED_MOE_CHUNK_SIZE), one common buffer of max(|workspace13|, |fused_out|) elements and
//    workspace2, both from current_workspace_manager() (a persistent buffer reused by all layers);
//  - fused_moe.py TritonExperts.workspace_shapes: workspace13 = (M, topk, max(N/2, K)),
//    workspace2 = (M, topk, max(N, K)), fused_out = (tokens, K), N = 2 * I / tp (w13 output),
//    K = hidden (apply() puts intermediate_cache1/3 in workspace2, cache2 in workspace13);
//  - router logits [tokens, E] in the model dtype, topk_weights float32 and topk_ids int32
//    [tokens, topk] (topk_softmax), moe_align_block_size's sorted_token_ids int32
//    [tokens * topk + E * (BLOCK_SIZE_M - 1)] with BLOCK_SIZE_M <= 64 in the default configs;
//  - a shared expert (Qwen-MoE / DeepSeek) is a dense gated MLP on the same tokens whose output
//    is kept until it is added to the routed output.
struct MoeTerms {
  int64_t workspace = 0, transient = 0;
};

MoeTerms MoeLayerBytes(const ModelSpec& spec, int64_t tokens, int64_t tp, int64_t dtype_bytes,
                       const ActivationConstants& c) {
  MoeTerms t;
  const auto& m = *spec.moe;
  RequirePositive(c.fused_moe_chunk_tokens, "fused_moe_chunk_tokens");
  const int64_t chunk = std::min(tokens, c.fused_moe_chunk_tokens);
  const int64_t n = CheckedMul(2, CeilDiv(m.expert_intermediate_size, tp), "activation");
  const int64_t k = spec.hidden_size;
  const int64_t topk = m.num_experts_per_token;
  const int64_t ws13 = CheckedMul(CheckedMul(chunk, topk, "activation"), std::max(n / 2, k), "activation");
  const int64_t out = CheckedMul(tokens, k, "activation");
  const int64_t ws2 = CheckedMul(CheckedMul(chunk, topk, "activation"), std::max(n, k), "activation");
  t.workspace = CheckedMul(CheckedAdd(std::max(ws13, out), ws2, "activation"), dtype_bytes, "activation");

  constexpr int64_t kAlignBlockTokens = 64;  // largest BLOCK_SIZE_M of the default fused-MoE configs
  const int64_t copies = CheckedMul(tokens, topk, "activation");
  int64_t routing = CheckedMul(CheckedMul(tokens, m.num_experts, "activation"), dtype_bytes, "activation");
  routing = CheckedAdd(routing, CheckedMul(copies, 8, "activation"), "activation");  // f32 weights + i32 ids
  routing = CheckedAdd(routing,
                       CheckedMul(CheckedAdd(copies, CheckedMul(m.num_experts, kAlignBlockTokens - 1, "activation"),
                                             "activation"),
                                  4, "activation"),
                       "activation");
  int64_t shared = 0;
  const int64_t shared_inter = m.shared_expert_intermediate_size + m.num_shared_experts * m.expert_intermediate_size;
  if (shared_inter > 0) {
    // gate_up (2 I_s) and its activation (I_s) while computed, then the H-wide output.
    shared = CheckedMul(CheckedMul(tokens, dtype_bytes, "activation"),
                        CheckedAdd(3 * CeilDiv(shared_inter, tp), k, "activation"), "activation");
  }
  t.transient = CheckedAdd(routing, shared, "activation");
  return t;
}

// Per-token element counts of one layer's largest temporaries on one tensor-parallel rank.
// \p indexer_workspace_bytes: DeepSeek-V3.2's indexer's WorkspaceManager request, made in layer 0's
// attention, so every MLP runs over it and the fused-MoE layers share (grow) that one buffer;
// \p reserved_bytes: what the sparse MLA backend reserved in it at load (counted with the weights).
ForwardTerms ForwardPerRank(const ModelSpec& spec, int64_t tokens, int64_t tp, int64_t dtype_bytes,
                            const ActivationConstants& c, int64_t indexer_workspace_bytes = 0,
                            int64_t reserved_bytes = 0) {
  const bool keeps_views = c.sparse_mla_workspace.keeps_views;
  const int64_t indexer_growth = SharedWorkspaceProfileGrowth(indexer_workspace_bytes, reserved_bytes, keeps_views);
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
    dense = CheckedAdd(CheckedMul(td, mlp_factor * CeilDiv(spec.intermediate_size, tp), "activation"), indexer_growth,
                       "activation");
  }
  t.moe_workspace = indexer_growth;
  int64_t moe = 0;
  if (any_moe && spec.moe) {
    const MoeTerms mt = MoeLayerBytes(spec, tokens, tp, dtype_bytes, c);
    // MXFP4 experts (gpt-oss) run vLLM's OAI triton_kernels path, whose buffers the held-out
    // gpt-oss-20b start-up shows are not held through the sampler (its 2.87 GiB peak equals the
    // sampler phase without them); the Triton fused-MoE path of bf16/fp8 experts keeps its
    // WorkspaceManager buffer (Qwen1.5-MoE: 2.47 GiB = sampler phase + workspace), the one buffer
    // an indexer's request has already sized, grown to the larger of the two.
    const bool mxfp4_experts = spec.quantization && spec.quantization->method == "mxfp4";
    if (!mxfp4_experts) {
      t.moe_workspace =
          SharedWorkspaceProfileGrowth(std::max(mt.workspace, indexer_workspace_bytes), reserved_bytes, keeps_views);
    }
    const int64_t layer_workspace =
        mxfp4_experts ? CheckedAdd(mt.workspace, indexer_growth, "activation") : t.moe_workspace;
    moe = CheckedAdd(layer_workspace, mt.transient, "activation");
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

/*! --enable-lora: each LoRA linear shrinks into a float32 (slices, tokens, max_lora_rank) buffer
 *  beside its output (lora_estimate.h); at the MLP's peak gate_up_proj's (2 slices; fc1's 1), at
 *  attention's qkv_proj's (3 slices). Returns the buffer of the term that sets the forward peak. */
int64_t AddLoraShrinkBuffers(const ModelSpec& spec, int64_t tokens, int64_t max_lora_rank, ForwardTerms& t) {
  if (max_lora_rank <= 0) return 0;
  const int64_t mlp = LoraShrinkBufferBytes(spec.traits.gated_mlp ? 2 : 1, tokens, max_lora_rank);
  const int64_t attention = LoraShrinkBufferBytes(3, tokens, max_lora_rank);
  t.mlp = CheckedAdd(t.mlp, mlp, "activation");
  t.attention = CheckedAdd(t.attention, attention, "activation");
  return t.mlp >= CheckedAdd(t.attention, t.moe_workspace, "activation") ? mlp : attention;
}

/*! The Triton top-k/top-p kernel's buffer: one float32 vocabulary row per program, for
 *  min(SMs, rows) programs (topk_topp_triton.py apply_top_k_top_p_triton; cached across calls, so
 *  it stays allocated through the rest of the sampler run). */
int64_t SamplerKernelBufferBytes(int64_t rows, int64_t vocab_size, const ActivationConstants& c) {
  RequireNonNegative(c.sampler_kernel_programs, "sampler_kernel_programs");
  RequireNonNegative(c.sampler_fixed_bytes, "sampler_fixed_bytes");
  constexpr int64_t kFloat32Bytes = 4;
  const int64_t programs = std::min(c.sampler_kernel_programs, rows);
  return CheckedMul(CheckedMul(programs, vocab_size, "activation"), kFloat32Bytes, "activation");
}

/*! The multimodal profile run for the activation options (mm_profile_estimate.h). */
MmProfileBreakdown MultimodalProfile(const ModelSpec& spec, const ActivationOptions& o) {
  MmProfileOptions mo;
  mo.max_num_batched_tokens = o.max_num_batched_tokens;
  mo.max_num_seqs = o.max_num_seqs;
  mo.max_model_len = o.max_model_len > 0 ? o.max_model_len : o.max_num_batched_tokens;
  mo.limit_mm_per_prompt = o.limit_mm_per_prompt;
  mo.mm_processor_kwargs = o.mm_processor_kwargs;
  mo.language_model_only = o.language_model_only;
  mo.skip_mm_profiling = o.skip_mm_profiling;
  mo.mm_dummy_options = o.mm_dummy_options;
  mo.tensor_parallel_size = o.tensor_parallel_size;
  mo.dtype = o.dtype;
  mo.pixtral_dense_block_mask = o.pixtral_dense_block_mask;
  mo.qwen25_vision_qkv_copies = o.qwen25_vision_qkv_copies;
  mo.qwen25_vision_fp32_rotary = o.qwen25_vision_fp32_rotary;
  mo.qwen3_vl_dummy_video = o.qwen3_vl_dummy_video;
  mo.mm_modality_tie_by_name = o.mm_modality_tie_by_name;
  mo.qwen_vl_image_factor_pair = o.qwen_vl_image_factor_pair;
  mo.moonvit_dense_attention_mask = o.moonvit_dense_attention_mask;
  return EstimateMmProfile(spec, mo);
}

int64_t ActivationDTypeBytes(const ModelSpec& spec, const std::string& dtype) {
  // Quantized checkpoints still compute in the served dtype (bf16 / fp16).
  return DTypeSizeBytes(ResolveModelDType(dtype.empty() ? "auto" : dtype, spec.dtype, "dtype"));
}

/*! The drafter's forward on \p tokens tokens (EagleProposer.dummy_run: K passes of the same
 *  shape, each freeing its temporaries, so one pass's peak), over the fused-MoE workspace the
 *  target left allocated: vLLM's WorkspaceManager keeps one buffer for every MoE layer, grown to
 *  the largest request, so a MoE drafter shares it. */
int64_t DrafterForwardBytes(const ActivationOptions& o, int64_t tokens, int64_t dtype_bytes,
                            int64_t target_moe_workspace_bytes) {
  RequirePositive(o.drafter_tensor_parallel_size, "draft_tensor_parallel_size");
  // The drafter runs in the target's dtype (the draft ModelConfig gets dtype=target.dtype).
  // DeepSeek-V3.2's MTP layer carries the indexer, whose op takes the same no-metadata branch in the
  // drafter's dummy run (EagleProposer.dummy_run: set_forward_context(None, ...)): the same workspace
  // request as the target's and its own transient tensors beside the attention layer's.
  const SparseIndexerProfileBytes indexer = EstimateSparseIndexerProfile(
      *o.drafter, o.max_model_len > 0 ? o.max_model_len : tokens, o.constants.sparse_indexer);
  // Its MoE request grows the buffer, as the target's did, only beyond what the sparse MLA backend reserved.
  ForwardTerms t = ForwardPerRank(*o.drafter, tokens, o.drafter_tensor_parallel_size, dtype_bytes, o.constants,
                                  indexer.workspace_bytes, o.shared_workspace_reserved_bytes);
  t.attention = CheckedAdd(t.attention, indexer.transient_bytes, "activation");
  const int64_t workspace = std::max(t.moe_workspace, target_moe_workspace_bytes);
  const int64_t layer = std::max(CheckedAdd(t.mlp - t.moe_workspace, workspace, "activation"),
                                 CheckedAdd(t.attention, workspace, "activation"));
  return CheckedAdd(t.hidden, layer, "activation");
}

}  // namespace

int64_t ForwardActivationBytes(const ModelSpec& spec, int64_t num_tokens, int64_t tensor_parallel_size,
                               const std::string& dtype, const ActivationConstants& constants) {
  RequirePositive(num_tokens, "num_tokens");
  RequirePositive(tensor_parallel_size, "tensor_parallel_size");
  ForwardTerms t = ForwardPerRank(spec, num_tokens, tensor_parallel_size, ActivationDTypeBytes(spec, dtype), constants);
  return CheckedAdd(t.hidden, std::max(t.mlp, CheckedAdd(t.attention, t.moe_workspace, "activation")), "activation");
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
  // Only the profile run takes the indexer's no-metadata branch; a CUDA-graph capture does not.
  const SparseIndexerProfileBytes indexer = EstimateSparseIndexerProfile(
      spec, o.max_model_len > 0 ? o.max_model_len : tokens, o.constants.sparse_indexer);
  RequireNonNegative(o.shared_workspace_reserved_bytes, "shared_workspace_reserved_bytes");
  ForwardTerms t = ForwardPerRank(spec, tokens, o.tensor_parallel_size, dtype_bytes, o.constants,
                                  indexer.workspace_bytes, o.shared_workspace_reserved_bytes);
  // The op's own tensors live while the attention layer's do.
  t.attention = CheckedAdd(t.attention, indexer.transient_bytes, "activation");

  ActivationBreakdown b;
  b.sparse_indexer_workspace_bytes = indexer.workspace_bytes;
  b.sparse_indexer_transient_bytes = indexer.transient_bytes;
  b.shared_workspace_reserved_bytes = o.shared_workspace_reserved_bytes;
  b.lora_bytes = AddLoraShrinkBuffers(spec, tokens, o.max_lora_rank, t);
  b.hidden_states_bytes = t.hidden;
  b.mlp_intermediate_bytes = t.mlp;
  b.attention_bytes = t.attention;
  b.moe_workspace_bytes = t.moe_workspace;
  // The MoE workspace outlives the layer that first allocates it, so later attention layers
  // run on top of it.
  b.forward_bytes =
      CheckedAdd(t.hidden, std::max(t.mlp, CheckedAdd(t.attention, t.moe_workspace, "activation")), "activation");
  const int64_t hidden_out = CheckedMul(CheckedMul(tokens, spec.hidden_size, "activation"), dtype_bytes, "activation");
  if (o.pipeline_parallel_size > 1) b.pipeline_buffers_bytes = CheckedMul(hidden_out, 2, "activation");
  if (o.pp_rank == o.pipeline_parallel_size - 1) {
    // The dummy sampler run: one row of logits per request, gathered to the full vocabulary
    // on every tensor-parallel rank, while the forward's output is still referenced.
    const int64_t rows = std::min(o.max_num_seqs, tokens);
    const int64_t logit_elems = CheckedMul(rows, spec.vocab_size, "activation");
    b.logits_bytes = CheckedMul(logit_elems, dtype_bytes, "activation");
    b.sampler_kernel_buffer_bytes = SamplerKernelBufferBytes(rows, spec.vocab_size, o.constants);
    const int64_t per_logit_bytes = Scaled(o.constants.sampler_bytes_per_logit, logit_elems, "activation");
    const int64_t kernel_and_fixed =
        CheckedAdd(b.sampler_kernel_buffer_bytes, o.constants.sampler_fixed_bytes, "activation");
    b.sampler_bytes = CheckedAdd(per_logit_bytes, kernel_and_fixed, "activation");
    b.sampler_phase_bytes = CheckedAdd(CheckedAdd(hidden_out, b.logits_bytes, "activation"), b.sampler_bytes, "activation");
    // vLLM's WorkspaceManager keeps the fused-MoE workspace allocated after the forward.
    b.sampler_phase_bytes = CheckedAdd(b.sampler_phase_bytes, b.moe_workspace_bytes, "activation");
    if (o.rejection_sampler) {
      // _dummy_sampler_run with a speculative_config: logits = randn(num_draft + num_reqs, vocab)
      // in the logits' dtype (one draft a request), then RejectionSampler.forward samples the
      // bonus rows with the same sampler, a copy (logits[bonus_logits_indices]) in place of the
      // first pass's logits, which the randn call replaced.
      b.rejection_logits_bytes = CheckedMul(b.logits_bytes, 2, "activation");
      b.sampler_phase_bytes = CheckedAdd(b.sampler_phase_bytes, b.rejection_logits_bytes, "activation");
    }
  }
  if (o.drafter) {
    // _dummy_run keeps the target's output (hidden_states) while the drafter's dummy_run runs.
    b.drafter_phase_bytes =
        CheckedAdd(hidden_out, DrafterForwardBytes(o, tokens, dtype_bytes, b.moe_workspace_bytes), "activation");
  }
  b.sampler_dominates = b.sampler_phase_bytes > std::max(b.forward_bytes, b.drafter_phase_bytes);
  // vLLM's profile_run encodes the dummy images first and keeps their pixels and embeddings
  // until the text forward and the sampler are done.
  b.multimodal = MultimodalProfile(spec, o);
  const int64_t text_phases = CheckedAdd(std::max({b.forward_bytes, b.drafter_phase_bytes, b.sampler_phase_bytes}),
                                         b.multimodal.resident_bytes, "activation");
  b.peak_bytes = CheckedAdd(std::max(text_phases, b.multimodal.encoder_phase_bytes), b.pipeline_buffers_bytes,
                            "activation");
  return b;
}

}  // namespace vllm_mem
