/*!
 * \file vllm_mem/plan/sparse_mla_workspace.h
 * \brief What DeepSeek-V3.2's FlashMLA sparse backend reserves in vLLM's WorkspaceManager while the model is built.
 *
 * FlashMLASparseImpl.__init__ (vllm/v1/attention/backends/mla/flashmla_sparse.py) asks the
 * WorkspaceManager (vllm/v1/worker/workspace.py: one buffer, each piece rounded up to 256 bytes,
 * grown to the largest request) for its buffers when each MLA layer is built, inside load_model, so
 * "Model loading took" counts them; every layer asks the same, so the buffer holds one layer's
 * request. The profile run's fused-MoE and indexer requests (sparse_indexer_profile.h) then grow the
 * same buffer only where they are larger. Until 0.30 the backend keeps views of the first buffer, so
 * a growth allocates a second one beside it; from 0.31 it keeps none and the first is freed. Which
 * backend vLLM picks for a sparse MLA model depends on the GPU's compute capability, the KV cache
 * dtype and the heads per rank (vllm/platforms/cuda.py); the rule, by release, is vllm_versions.json
 * sparse_mla_workspace.
 */
#ifndef VLLM_MEM_PLAN_SPARSE_MLA_WORKSPACE_H_
#define VLLM_MEM_PLAN_SPARSE_MLA_WORKSPACE_H_

#include <cstdint>
#include <string>

#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief The release's rule (vllm_versions.json sparse_mla_workspace); the defaults are the newest release's. */
struct SparseMlaWorkspaceRule {
  /*! With an fp8 KV cache (fp8_ds_mla): a bf16 prefill workspace of this many x max_model_len rows of
   *  kv_lora_rank + qk_rope_head_dim (get_prefill_workspace_size; 0: none, before 0.13) */
  int64_t prefill_rows_per_max_model_len_tokens = 5;
  /*! Above this max_model_len the multiple is long_context_prefill_rows_per_max_model_len_tokens
   *  (0.32's sparse_mla_prefill_workspace_factor default; 0: no such bound) */
  int64_t long_context_above_tokens = 262144;
  int64_t long_context_prefill_rows_per_max_model_len_tokens = 2;
  bool query_buffer = true;  //!< q_concat_buffer: max_num_batched_tokens x heads x (kv_lora_rank + rope) bf16 (0.18+)
  bool query_heads_padded_for_bf16_kv =
      true;  //!< with a bf16 KV cache its heads rounded up to the prefill padding (0.29+)
  /*! with fp8_ds_mla, three more max_num_batched_tokens-row bf16 buffers for the MQA prefill: padded heads
   *  x (kv_lora_rank + rope), padded heads x kv_lora_rank, heads x kv_lora_rank (0.31+) */
  bool fp8_mqa_prefill_buffers = true;
  int64_t sm100_prefill_padding_heads = 64;  //!< prefill_padding on the SM100 family (128 before 0.32); 64 elsewhere
  bool keeps_views = false;  //!< the backend holds views of the first buffer (to 0.30), so a growth does not free it
  /*! The SM100 family puts FlashInfer MLA sparse first for a bf16 KV cache at this many heads per rank
   *  or fewer (0: never; 16 from 0.17) */
  int64_t sm100_flashinfer_max_heads = 16;
  bool sm100_flashinfer_for_fp8 = true;  //!< ... and for an fp8 KV cache (0.19+)
  bool sm90_flash_attn_for_bf16 = true;  //!< SM90 puts FlashAttention MLA sparse first for a bf16 KV cache (0.25+)
  bool operator==(const SparseMlaWorkspaceRule&) const = default;
};

/*! \brief What decides the reservation besides the model. */
struct SparseMlaWorkspaceOptions {
  std::string compute_capability;  //!< the catalog GPU's ("9.0", "10.0"); "" for AMD; unknown when gpu_known is false
  bool gpu_known = false;          //!< the GPU is a catalog GPU
  std::string kv_cache_dtype = "auto";
  int64_t tensor_parallel_size = 1;
  int64_t max_num_batched_tokens = 0;
  int64_t max_model_len_tokens = 0;
};

/*! \brief The backend's reservation on one GPU. */
struct SparseMlaLoadWorkspace {
  bool flashmla_sparse = false;  //!< vLLM picks FlashMLA sparse for the model on this GPU
  bool modelled = true;        //!< false: a GPU outside the catalog or an AMD GPU, where the backend is not known here
  int64_t reserved_bytes = 0;  //!< the WorkspaceManager buffer after the model is built
};

/*! \brief The reservation for a model with DeepSeek-V3.2's indexer (all zero for any other model).
 *  InvalidArgument naming the field for a non-positive token count or tensor_parallel_size. */
SparseMlaLoadWorkspace EstimateSparseMlaLoadWorkspace(const ModelSpec& spec, const SparseMlaWorkspaceOptions& o,
                                                      const SparseMlaWorkspaceRule& rule);

/*! \brief What the profile run adds to the shared buffer for the fused-MoE / indexer request
 *  \p request_bytes when the backend reserved \p reserved_bytes at load: nothing when it fits, else the
 *  new buffer (the old one kept, rule.keeps_views) or the new buffer less the freed one. */
int64_t SharedWorkspaceProfileGrowth(int64_t request_bytes, int64_t reserved_bytes, bool keeps_views);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_SPARSE_MLA_WORKSPACE_H_
