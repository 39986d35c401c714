/*!
 * \file vllm_mem/kv_cache/kv_cache_groups.h
 * \brief vLLM's KV-cache grouping and block budgeting (vllm/v1/core/kv_cache_utils.py):
 *        get_kv_cache_groups (which layers share a block table), get_kv_cache_config_from_groups
 *        (how many blocks fit in a worker's bytes) and the per-request block count behind
 *        "Maximum concurrency". Rules and the vLLM version followed: docs/kv_cache.md.
 */
#ifndef VLLM_MEM_KV_CACHE_KV_CACHE_GROUPS_H_
#define VLLM_MEM_KV_CACHE_KV_CACHE_GROUPS_H_

#include <cstdint>
#include <vector>

#include "vllm_mem/kv_cache/kv_cache_spec.h"

namespace vllm_mem {

/*! \brief One KV-cache group (vLLM's KVCacheGroupSpec): layers whose i-th members share the
 *  i-th KV tensor and that use one block table per request. */
struct KvCacheGroupSpec {
  std::vector<int64_t> layer_indices;    //!< global decoder-layer indices
  KvCacheSpec spec;                      //!< the group's spec (UniformType: its first layer's)
  /*! UniformTypeKVCacheSpecs (one group of same-type layers with different shapes): each
   *  layer's own spec, parallel to layer_indices. Empty for ordinary groups. */
  std::vector<KvCacheSpec> layer_specs;
  bool uniform_type = false;             //!< a UniformTypeKVCacheSpecs group
};

/*! \brief The grouping of a model's layers. */
struct KvCacheGrouping {
  std::vector<KvCacheGroupSpec> groups;  //!< empty: attention-free
  int64_t num_padding_layers = 0;        //!< vLLM's "Add %d padding layers" total
  bool converted_to_full_attention = false;  //!< disable_hybrid_kv_cache_manager converted specs
};

/*! \brief vLLM's get_kv_cache_groups over every layer of the model (all pipeline ranks merged).
 *  Unsupported (NotImplementedError) where vLLM cannot unify page sizes; InvalidArgument
 *  (ValueError) where the hybrid manager is disabled but the specs cannot be made uniform.
 *  \p group_size_max_ratio: KvCacheOptions::group_size_max_ratio. */
KvCacheGrouping GetKvCacheGroups(const std::vector<LayerKvSpec>& layers, bool disable_hybrid_kv_cache_manager,
                                 double group_size_max_ratio = 1.5);

/*! \brief _project_kv_cache_groups_to_worker: each group keeps only the layers in
 *  [first_layer, last_layer); a group may become empty but keeps its spec. */
std::vector<KvCacheGroupSpec> ProjectKvCacheGroupsToWorker(const std::vector<KvCacheGroupSpec>& groups,
                                                           int64_t first_layer, int64_t last_layer);

/*! \brief Bytes of one block id of the group: its spec's page, or Σ page over the layers of a
 *  UniformType group. */
int64_t GroupPageSizeBytes(const KvCacheGroupSpec& group);
/*! \brief The group spec's max_memory_usage_bytes (UniformType: max_l cdiv(mem_l, page_l) *
 *  Σ page_l). */
int64_t GroupMaxMemoryUsageBytes(const KvCacheGroupSpec& group, const KvRequestShape& shape);

/*! \brief One worker's KVCacheConfig, reduced to sizes. */
struct KvCacheWorkerConfig {
  int64_t num_blocks = 0;
  int64_t bytes_per_block = 0;  //!< what one block id costs on this worker (all its layers)
  int64_t group_size = 0;       //!< layers sharing each tensor slot (0 for UniformType)
  std::vector<int64_t> tensor_bytes;                   //!< one KVCacheTensor each
  std::vector<std::vector<int64_t>> tensor_shared_by;  //!< global layer indices per tensor
};

/*! \brief Bytes of one block id on a worker, before any blocks are counted
 *  (vLLM's _pool_bytes_per_block): page * group_size, or Σ page for UniformType. */
int64_t WorkerBytesPerBlock(const std::vector<KvCacheGroupSpec>& worker_groups);

/*! \brief get_kv_cache_config_from_groups without its per-tensor lists: the block count and
 *  the bytes of one block id, with the same errors (Unsupported for a worker holding no layer of
 *  a grouped model, the per-tensor size overflow check). What capacity needs on a hot path. */
KvCacheWorkerConfig KvCacheWorkerBlocks(const std::vector<KvCacheGroupSpec>& worker_groups,
                                        int64_t available_bytes, int64_t num_gpu_blocks_override = 0);

/*! \brief get_kv_cache_config_from_groups: blocks that fit in \p available_bytes on a worker
 *  holding \p worker_groups (already projected). \p num_gpu_blocks_override > 0 replaces the
 *  count. Attention-free: one block (the null block). */
KvCacheWorkerConfig GetKvCacheConfigFromGroups(const std::vector<KvCacheGroupSpec>& worker_groups,
                                               int64_t available_bytes, int64_t num_gpu_blocks_override = 0);

/*! \brief _max_memory_usage_bytes_from_groups: bytes one max_model_len request needs on a
 *  worker, counting the tensor slots its groups share (used by auto-fit). */
int64_t MaxMemoryUsageBytesFromGroups(const std::vector<KvCacheGroupSpec>& worker_groups,
                                      const KvRequestShape& shape);

/*! \brief Block ids one max_model_len request takes: cdiv(Σ_g max_mem_g, page of group 0)
 *  (get_max_concurrency_for_kv_cache_config; the layer-count factor cancels). */
int64_t BlocksPerRequest(const std::vector<KvCacheGroupSpec>& groups, const KvRequestShape& shape);

/*! \brief num_blocks / BlocksPerRequest, a float as vLLM prints it with %.2f. */
double MaxConcurrency(int64_t num_blocks, const std::vector<KvCacheGroupSpec>& groups, const KvRequestShape& shape);
/*! \brief MaxConcurrency with BlocksPerRequest already known (0: attention-free, no bound). */
double MaxConcurrencyOf(int64_t num_blocks, int64_t blocks_per_request);

/*! \brief "GPU KV cache size: N tokens": int(max_concurrency * max_model_len), not
 *  num_blocks * block_size. */
int64_t KvCacheNumTokens(double max_concurrency, int64_t max_model_len);

}  // namespace vllm_mem

#endif  // VLLM_MEM_KV_CACHE_KV_CACHE_GROUPS_H_
