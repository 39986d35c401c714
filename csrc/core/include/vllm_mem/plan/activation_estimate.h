/*!
 * \file vllm_mem/plan/activation_estimate.h
 * \brief The torch peak increase of vLLM's profile run ("torch peak memory increase"),
 *        estimated from what that run allocates rather than from a flat margin.
 *
 * vLLM's profile_run is one forward pass of max_num_batched_tokens tokens followed, on the last
 * pipeline rank, by a dummy sampler run over min(max_num_seqs, max_num_batched_tokens) rows of
 * logits. The forward's temporaries are freed before the sampler runs, so the peak is the
 * larger of the two phases, not their sum; under pipeline parallelism the hidden/residual
 * tensors passed between stages stay alive through both. docs/planner.md gives the calibration.
 */
#ifndef VLLM_MEM_PLAN_ACTIVATION_ESTIMATE_H_
#define VLLM_MEM_PLAN_ACTIVATION_ESTIMATE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/mm_profile_estimate.h"
#include "vllm_mem/plan/sparse_indexer_profile.h"
#include "vllm_mem/plan/sparse_mla_workspace.h"

namespace vllm_mem {

/*! \brief Calibrated constants (25 vLLM v0.19 start-ups on H100; docs/planner.md). */
struct ActivationConstants {
  /*! hidden-size tensors alive at the forward peak (residual, normed input, layer output,
   *  torch.compile / inductor buffers), in units of tokens * hidden_size * dtype bytes */
  double hidden_tensors = 4.5;
  /*! sampler working set per logit element beyond the model-dtype logits (v0.19,
   *  vllm/v1/sample/sampler.py and ops/topk_topp_sampler.py forward_native): Sampler.forward's
   *  float32 copy (temperature divides it in place, the Triton top-k/top-p kernel masks it in
   *  place), the float32 softmax probabilities and random_sample's exponential noise: 3 x 4 */
  double sampler_bytes_per_logit = 12.0;
  /*! Rows of the Triton top-k/top-p kernel's per-program float32 buffer, one vocabulary row per
   *  program, min(SMs, rows) programs (vllm/v1/sample/ops/topk_topp_triton.py, PR #33538:
   *  _TRITON_BUFFER_CACHE); 0 where the release's sampler has none. A plan sets the planned
   *  GPU's SM count (gpu_catalog.json sm_count; release_resolution.cc ResolveGpuFacts); 132, the
   *  H100 SXM / H200 count every checking log ran on, is the default for a GPU not in the catalog. */
  int64_t sampler_kernel_programs = 132;
  /*! Bytes alive through the sampler phase that grow with neither the tokens nor the
   *  vocabulary: the v0.17-0.19 logs' intercept (vllm_versions.json sampler_fixed_bytes). */
  int64_t sampler_fixed_bytes = 50331648;
  /*! VLLM_FUSED_MOE_CHUNK_SIZE (vllm/envs.py, default 16 * 1024 tokens): the fused-MoE modular
   *  kernel sizes its workspaces for at most this many tokens per chunk. */
  int64_t fused_moe_chunk_tokens = 16384;
  /*! What DeepSeek-V3.2's sparse-attention indexer allocates in the profile run, by release
   *  (vllm_versions.json sparse_indexer_profile; sparse_indexer_profile.h). */
  SparseIndexerProfile sparse_indexer;
  /*! Whether DeepSeek-V3.2's FlashMLA sparse backend keeps views of the buffer it reserved at load,
   *  by release (vllm_versions.json sparse_mla_workspace; sparse_mla_workspace.h). */
  SparseMlaWorkspaceRule sparse_mla_workspace;

  bool operator==(const ActivationConstants&) const = default;
};

/*! \brief The serving settings the profile run depends on. */
struct ActivationOptions {
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
  int64_t tensor_parallel_size = 1;
  int64_t pipeline_parallel_size = 1;
  int64_t pp_rank = 0;           //!< which pipeline rank (the last one runs the sampler)
  std::string dtype = "auto";    //!< vLLM --dtype (activations use the served dtype)
  ActivationConstants constants;
  // The multimodal profile run (mm_profile_estimate.h); a text model ignores them.
  /*! bounds the items per prompt, and sizes DeepSeek-V3.2's indexer keys; 0: max_num_batched_tokens */
  int64_t max_model_len = 0;
  /*! The WorkspaceManager buffer the sparse MLA backend reserved while the model was built (counted
   *  with the weights; sparse_mla_workspace.h): the profile run's requests grow it only beyond this. */
  int64_t shared_workspace_reserved_bytes = 0;
  MmLimitPerPrompt limit_mm_per_prompt;  //!< --limit-mm-per-prompt (unset: 999 of every modality)
  MmProcessorKwargs mm_processor_kwargs;  //!< --mm-processor-kwargs
  bool language_model_only = false;    //!< --language-model-only
  bool skip_mm_profiling = false;      //!< --skip-mm-profiling
  bool mm_dummy_options = true;        //!< the release takes per-modality dummy options (vllm_versions.json)
  bool pixtral_dense_block_mask = true;  //!< the release's Pixtral attention mask (vllm_versions.json)
  bool qwen25_vision_qkv_copies = false;   //!< the release's Qwen2.5-VL vision q, k, v copies (vllm_versions.json)
  bool qwen25_vision_fp32_rotary = false;  //!< the release's Qwen2.5-VL vision rotary in float32 (vllm_versions.json)
  Qwen3VlDummyVideo qwen3_vl_dummy_video = Qwen3VlDummyVideo::kVideoBound2FramesKwargs;  //!< (vllm_versions.json)
  bool mm_modality_tie_by_name = true;       //!< the release's tie-break between modalities (vllm_versions.json)
  bool qwen_vl_image_factor_pair = true;     //!< the release's Qwen-VL largest image rule (vllm_versions.json)
  bool moonvit_dense_attention_mask = true;  //!< the release's MoonViT attention mask (vllm_versions.json)
  /*! --enable-lora's max_lora_rank (0: LoRA off): every LoRA linear's shrink buffer is float32
   *  (slices, tokens, max_lora_rank) beside the layer's output (lora_estimate.h). */
  int64_t max_lora_rank = 0;
  // Speculative decoding on the V1 model runner (vllm/v1/worker/gpu_model_runner.py); from the
  // code, no start-up log with a printed peak confirms them (docs/speculative_decoding.md).
  /*! The drafter _dummy_run runs after the target's forward (EagleProposer.dummy_run: EAGLE,
   *  EAGLE-3, MTP), on max_num_batched_tokens tokens while the target's output hidden states are
   *  still referenced; null: none runs (no drafter, n-gram, a draft model, the V2 runner). */
  std::shared_ptr<const ModelSpec> drafter;
  int64_t drafter_tensor_parallel_size = 1;  //!< the drafter's TP (draft_tensor_parallel_size)
  /*! _dummy_sampler_run's rejection-sampler pass (any speculative_config on the V1 runner): one
   *  draft token per request, so dummy target logits of 2 x rows rows in the logits' dtype, alive
   *  while the bonus tokens go through the sampler again. */
  bool rejection_sampler = false;
};

/*! \brief The estimate, term by term (bytes on one GPU of the given pipeline rank). */
struct ActivationBreakdown {
  int64_t hidden_states_bytes = 0;      //!< hidden_tensors * T * H * dtype
  int64_t mlp_intermediate_bytes = 0;   //!< gate+up and activation output (or the fused-MoE layer's working set)
  /*! The fused-MoE modular kernel's workspace13/fused_out + workspace2 (one buffer from vLLM's
   *  WorkspaceManager, reused by every MoE layer): it stays allocated after the forward, so it
   *  is part of the sampler phase too. 0 for dense models. DeepSeek-V3.2's indexer draws on the
   *  same buffer, so with it this is the larger of the two requests; where the sparse MLA backend
   *  reserved the buffer at load (shared_workspace_reserved_bytes), only what the profile run adds. */
  int64_t moe_workspace_bytes = 0;
  /*! DeepSeek-V3.2's indexer's WorkspaceManager request in the profile run (its keys' fp8 values and
   *  float32 scales, get_max_prefill_buffer_size of them, and the top-k workspace); it is in
   *  moe_workspace_bytes when it is the larger request (0: no indexer, or a release before the
   *  WorkspaceManager). */
  int64_t sparse_indexer_workspace_bytes = 0;
  /*! DeepSeek-V3.2's indexer's tensors freed when its op returns (before the WorkspaceManager the keys
   *  and their copies; later the stand-in for the prefill logits): part of attention_bytes. */
  int64_t sparse_indexer_transient_bytes = 0;
  /*! ActivationOptions::shared_workspace_reserved_bytes: the sparse MLA backend's load-time buffer,
   *  counted with the weights, not here; moe_workspace_bytes is what the profile run adds beyond it. */
  int64_t shared_workspace_reserved_bytes = 0;
  int64_t attention_bytes = 0;          //!< q/k/v projections and attention output
  int64_t lora_bytes = 0;               //!< LoRA shrink buffer of the peak's layer (part of mlp / attention)
  int64_t forward_bytes = 0;            //!< hidden states + max(MLP, attention)
  int64_t logits_bytes = 0;             //!< rows * vocab * dtype (last rank)
  /*! rows * vocab * sampler_bytes_per_logit + the kernel buffer + sampler_fixed_bytes (last rank) */
  int64_t sampler_bytes = 0;
  int64_t sampler_kernel_buffer_bytes = 0;  //!< min(programs, rows) * vocab * 4 (part of sampler_bytes)
  int64_t sampler_phase_bytes = 0;      //!< forward output + logits + sampler + MoE workspace (last rank)
  int64_t pipeline_buffers_bytes = 0;   //!< hidden + residual passed between PP stages
  /*! The drafter's dummy forward: the target's output + the drafter's forward working set on
   *  max_num_batched_tokens tokens, over the persistent fused-MoE workspace (0: no drafter run). */
  int64_t drafter_phase_bytes = 0;
  /*! The rejection sampler's dummy target logits, 2 x rows x vocab x dtype: part of
   *  sampler_phase_bytes, whose second sampler pass (the bonus tokens) runs beside them (0: none). */
  int64_t rejection_logits_bytes = 0;
  /*! The multimodal profile run: its encoder phase, and the dummy pixels and cached embeddings
   *  alive beside the text phases (all zero for a text model). */
  MmProfileBreakdown multimodal;
  /*! max(encoder phase, max(forward, drafter phase, sampler phase) + multimodal resident) +
   *  pipeline buffers */
  int64_t peak_bytes = 0;
  bool sampler_dominates = false;  //!< the sampler phase above the forward and drafter phases
};

/*! \brief Estimated torch peak increase of the profile run on one GPU of \p options.pp_rank.
 *  InvalidArgument for non-positive token / sequence counts or a bad parallel layout. */
ActivationBreakdown EstimateActivationPeak(const ModelSpec& spec, const ActivationOptions& options);

/*! \brief The forward working set alone for \p num_tokens tokens (no sampler, no PP buffers):
 *  what a CUDA-graph capture of that batch size holds at its peak. */
int64_t ForwardActivationBytes(const ModelSpec& spec, int64_t num_tokens, int64_t tensor_parallel_size,
                               const std::string& dtype, const ActivationConstants& constants = {});

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_ACTIVATION_ESTIMATE_H_
