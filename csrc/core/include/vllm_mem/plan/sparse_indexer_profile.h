/*!
 * \file vllm_mem/plan/sparse_indexer_profile.h
 * \brief What DeepSeek-V3.2's sparse-attention indexer allocates in vLLM's profile run, by release.
 *
 * The Indexer hands its custom op get_max_prefill_buffer_size(vllm_config) keys, a multiple of
 * max_model_len (vllm/v1/attention/backends/mla/indexer.py), and the op, finding no attention
 * metadata (the profile run), allocates what gathering that many keys takes: index_head_dim fp8
 * values and a 4-byte float32 scale per key. Before vLLM's WorkspaceManager those were plain torch
 * tensors freed when the op returned (sparse_attn_indexer_fake); from PR #27532 they are a request to
 * the WorkspaceManager, the one buffer the fused-MoE layers also draw on (vllm/v1/worker/workspace.py:
 * grown to the largest request, each piece rounded to 256 bytes, never shrunk). The rule that says which,
 * and how many keys, is vllm_versions.json sparse_indexer_profile.
 */
#ifndef VLLM_MEM_PLAN_SPARSE_INDEXER_PROFILE_H_
#define VLLM_MEM_PLAN_SPARSE_INDEXER_PROFILE_H_

#include <cstdint>

#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief The release's rule (vllm_versions.json sparse_indexer_profile); the defaults are the newest release's. */
struct SparseIndexerProfile {
  /*! get_max_prefill_buffer_size: max_model_len x this many keys (2 in 0.11-0.12, 40 from 0.13) */
  int64_t keys_per_max_model_len_tokens = 40;
  /*! true: the keys are a WorkspaceManager request (persistent, shared with the fused-MoE
   *  workspace); false: torch tensors freed when the op returns, with contiguous copies of the
   *  values and the scales beside the flattened keys (sparse_attn_indexer_fake of 0.11-0.12) */
  bool in_workspace = true;
  /*! RADIX_TOPK_WORKSPACE_SIZE, requested with the keys (the persistent top-k kernel's workspace) */
  int64_t radix_topk_workspace_bytes = 1048576;
  /*! VLLM_SPARSE_INDEXER_MAX_LOGITS_MB's default in bytes: the op then allocates that many bytes as a
   *  stand-in for the prefill logits, freed when it returns (0: the release does not) */
  int64_t logits_reserve_bytes = 536870912;
  /*! From 0.32 the multiple follows AttentionConfig.sparse_mla_prefill_workspace_factor, whose default
   *  drops from 5 to 2 above 256K tokens: above this max_model_len the keys are
   *  long_context_keys_per_max_model_len_tokens per token instead (0: the release has no such bound) */
  int64_t long_context_above_tokens = 262144;
  int64_t long_context_keys_per_max_model_len_tokens = 16;  //!< 576 * 2 // 132 x 2
  bool operator==(const SparseIndexerProfile&) const = default;
};

/*! \brief The indexer's profile-run allocations on one GPU (the indexer is replicated: no TP split). */
struct SparseIndexerProfileBytes {
  int64_t keys = 0;             //!< get_max_prefill_buffer_size(max_model_len)
  int64_t workspace_bytes = 0;  //!< its WorkspaceManager request (0 where the release has none)
  int64_t transient_bytes = 0;  //!< torch tensors alive only inside the op, caching-allocator blocks
};

/*! \brief The indexer's allocations in the profile run of a model served at \p max_model_len tokens;
 *  all zero for a model without the indexer. InvalidArgument for a non-positive \p max_model_len_tokens
 *  when the model has one, or a negative count in \p rule. */
SparseIndexerProfileBytes EstimateSparseIndexerProfile(const ModelSpec& spec, int64_t max_model_len_tokens,
                                                       const SparseIndexerProfile& rule);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_SPARSE_INDEXER_PROFILE_H_
