/*!
 * \file vllm_mem/kv_cache/kv_cache_capacity.h
 * \brief From available bytes to KV-cache blocks, tokens and concurrency, exactly as vLLM's
 *        kv_cache_utils computes them (see docs/kv_cache.md).
 */
#ifndef VLLM_MEM_KV_CACHE_KV_CACHE_CAPACITY_H_
#define VLLM_MEM_KV_CACHE_KV_CACHE_CAPACITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief The serving settings that change KV-cache sizing. */
struct KvCacheOptions {
  int64_t max_model_len = 0;           //!< required, > 0
  int64_t block_size = 0;              //!< tokens per block; 0: vLLM's default (16; 64 for MLA)
  std::string kv_cache_dtype = "auto"; //!< vLLM --kv-cache-dtype
  std::string model_dtype = "auto";    //!< vLLM --dtype, which "auto" KV dtype follows
  int64_t tensor_parallel_size = 1;
  int64_t pipeline_parallel_size = 1;
  int64_t max_num_batched_tokens = 0;  //!< 0: 8192, vLLM's API-server default on large GPUs
  int64_t max_concurrent_batches = 1;  //!< in-flight batches for sliding-window reservations
  bool disable_hybrid_kv_cache_manager = false;
  int64_t num_gpu_blocks_override = 0; //!< 0: none
  /*! vLLM turns the hybrid manager off for chunked-local models (Llama-4) unless
   *  VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is set: this is that variable. */
  bool allow_chunked_local_with_hybrid = false;
  /*! v0.19 behaviour: a sliding-window group never needs more blocks per request than full
   *  attention (docs/kv_cache.md); false gives the plain cdiv(...) + 1 of the source. */
  bool cap_sliding_window_at_full = true;
};

/*! \brief One KV-cache group (layers sharing a block table). */
struct KvCacheGroupInfo {
  std::string kind;                    //!< "full_attention", "sliding_window", "mla", ...
  std::vector<int64_t> layer_indices;  //!< global decoder-layer indices
  int64_t block_size = 0;              //!< tokens per block of this group (after page unification)
  int64_t page_size_bytes = 0;         //!< bytes of one block of one layer
  int64_t sliding_window_tokens = 0;
  int64_t max_memory_per_request_bytes = 0;  //!< for one layer of the group at max_model_len
  int64_t blocks_per_request = 0;      //!< block ids one max_model_len request takes in this group
  bool uniform_type = false;           //!< UniformTypeKVCacheSpecs (same type, different shapes)
};

/*! \brief The answer to "how much fits". */
struct KvCacheCapacity {
  int64_t num_blocks = 0;          //!< engine-wide (min over workers), vLLM's num_gpu_blocks
  int64_t num_tokens = 0;          //!< vLLM's "GPU KV cache size: N tokens"
  double max_concurrency = 0.0;    //!< vLLM's "Maximum concurrency for L tokens per request"
  int64_t block_size = 0;          //!< min block size over groups (cache_config.block_size)
  int64_t bytes_per_block = 0;     //!< bytes one block id costs across all layers of a worker
  int64_t bytes_per_request = 0;   //!< KV bytes one max_model_len request needs on a worker
  int64_t kv_cache_bytes = 0;      //!< bytes actually allocated per worker (num_blocks * bytes_per_block)
  int64_t available_bytes = 0;     //!< the per-worker budget the tightest worker had
  int64_t max_model_len = 0;
  std::vector<int64_t> num_blocks_per_worker;  //!< before the min-reduction
  std::vector<KvCacheGroupInfo> groups;
  std::string kv_cache_dtype;      //!< the resolved KV storage dtype ("auto" replaced)
  int64_t num_padding_layers = 0;  //!< vLLM's "Add %d padding layers"
};

/*! \brief KV capacity for \p available_bytes_per_worker: one entry (every worker alike), one per
 *  pipeline rank, or one per worker (tp * pp, rank-major by pp). Raises InsufficientMemory with
 *  vLLM's messages when nothing (or not one max_model_len request) fits, InvalidArgument for bad
 *  settings. */
KvCacheCapacity ComputeKvCacheCapacity(const ModelSpec& spec,
                                       const std::vector<int64_t>& available_bytes_per_worker,
                                       const KvCacheOptions& options);

/*! \brief vLLM's estimate_max_model_len: the largest L in [1, options.max_model_len] whose one
 *  request fits in \p available_bytes on every worker; 0 when even L = 1 does not. */
int64_t EstimateMaxModelLen(const ModelSpec& spec, const std::vector<int64_t>& available_bytes_per_worker,
                            const KvCacheOptions& options);

/*! \brief vLLM's check_enough_kv_cache_memory: throws InsufficientMemory with vLLM's exact
 *  message when available <= 0 or one max_model_len request does not fit. */
void CheckEnoughKvCacheMemory(const ModelSpec& spec, const std::vector<int64_t>& available_bytes_per_worker,
                              const KvCacheOptions& options);

/*! \brief The message CheckEnoughKvCacheMemory would raise, or "" when one request fits on
 *  every worker (lets callers tell "does not fit" from bad input without catching). */
std::string KvCacheMemoryShortfall(const ModelSpec& spec, const std::vector<int64_t>& available_bytes_per_worker,
                                   const KvCacheOptions& options);

/*! \brief vLLM's auto-fit (--max-model-len -1, _estimate_max_model_len_from_groups): like
 *  EstimateMaxModelLen but counting the tensor slots grouped layers share, so padding layers of
 *  hybrid models cost what they cost. Searches [1, options.max_model_len]; 0 if nothing fits. */
int64_t AutoFitMaxModelLen(const ModelSpec& spec, const std::vector<int64_t>& available_bytes_per_worker,
                           const KvCacheOptions& options);

/*! \brief The two lines vLLM logs for \p capacity, worded as vLLM words them:
 *  "GPU KV cache size: 476,016 tokens" and
 *  "Maximum concurrency for 8,192 tokens per request: 58.11x". */
std::vector<std::string> KvCacheLogLines(const KvCacheCapacity& capacity);

}  // namespace vllm_mem

#endif  // VLLM_MEM_KV_CACHE_KV_CACHE_CAPACITY_H_
