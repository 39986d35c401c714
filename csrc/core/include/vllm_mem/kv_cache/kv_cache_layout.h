/*!
 * \file vllm_mem/kv_cache/kv_cache_layout.h
 * \brief The part of KV-cache sizing that depends only on the model and the layout settings
 *        (block size, KV and model dtypes, TP, PP, the hybrid-manager switch): every layer's
 *        spec, vLLM's grouping and page unification, and each pipeline rank's projection. It
 *        is the same for every budget and every max_model_len, so a caller that sizes one
 *        model many times (a planner, a sweep, a Python loop) builds it once and each call is
 *        O(groups) arithmetic. The rules are those of kv_cache_capacity.h, which builds a
 *        layout per call through the same function.
 */
#ifndef VLLM_MEM_KV_CACHE_KV_CACHE_LAYOUT_H_
#define VLLM_MEM_KV_CACHE_KV_CACHE_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_groups.h"
#include "vllm_mem/kv_cache/kv_cache_spec.h"
#include "vllm_mem/kv_cache/mamba_state.h"
#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief What one pipeline rank's workers hold (its tensor ranks are alike). */
struct KvRankLayout {
  /*! The rank's layers' own specs, each distinct spec once with its layer count: sums over
   *  layers (vLLM's check) become sums over a few specs. */
  std::vector<std::pair<KvCacheSpec, int64_t>> layer_specs;
  int64_t num_layers = 0;                 //!< layers holding KV on this rank
  std::vector<LayerKvSpec> layers;        //!< the same, layer by layer (the exact-error path)
  std::vector<KvCacheGroupSpec> groups;   //!< the global groups projected onto the rank
};

/*! \brief Everything KV sizing derives from the model and the layout settings. */
struct KvCacheLayout {
  KvCacheDType dtype;                 //!< the resolved KV storage dtype
  int64_t default_block_size = 0;     //!< vLLM's default for the model (16; 64 for MLA)
  KvCacheGrouping grouping;           //!< the global groups
  std::vector<KvRankLayout> ranks;    //!< one per pipeline rank
  /*! Per group, the fields that do not depend on the request shape (kind, layers, block and
   *  page size, window, uniform_type); the shape-dependent ones are filled per call. */
  std::vector<KvCacheGroupInfo> group_infos;
  /*! Hybrid models: the attention / Mamba page unification and the state's unpadded bytes
   *  (mamba_state.h); nullopt / 0 otherwise. */
  std::optional<HybridBlockSize> hybrid_alignment;
  int64_t mamba_state_bytes = 0;
};

/*! \brief The settings a layout depends on; the rest of KvCacheOptions is per call. */
struct KvCacheLayoutKey {
  int64_t block_size = 0;
  std::string kv_cache_dtype;
  std::vector<std::string> kv_cache_dtype_skip_layers;
  std::string model_dtype;
  int64_t tensor_parallel_size = 1;
  int64_t pipeline_parallel_size = 1;
  bool disable_hybrid_kv_cache_manager = false;
  bool allow_chunked_local_with_hybrid = false;
  HybridKvOptions hybrid;  //!< the hybrid-model and grouping settings (mamba_state.h)
  bool operator==(const KvCacheLayoutKey&) const = default;
};
KvCacheLayoutKey KvCacheLayoutKeyOf(const KvCacheOptions& options);

/*! \brief Builds the layout, raising what ComputeKvCacheCapacity raises for these settings and
 *  in the same order: the parallel layout, heads per rank, the layer list, the number of
 *  budgets (\p num_available: 1, one per pipeline rank or one per worker), the dtypes, then
 *  vLLM's grouping errors. The per-call settings (max_model_len, ...) are not looked at. */
std::shared_ptr<const KvCacheLayout> BuildKvCacheLayout(const ModelSpec& spec, const KvCacheOptions& options,
                                                        size_t num_available);

/*! \brief "available_bytes" must hold 1, pp or tp * pp values: InvalidArgument otherwise. */
void CheckAvailableCount(size_t num_available, int64_t tensor_parallel_size, int64_t pipeline_parallel_size);

/*! \brief A few layouts of one model, most recently used first. \p spec must outlive the cache
 *  and must not change while it lives (the Python ModelSpec is read-only). Thread-safe: the
 *  plan releases the GIL. */
class KvCacheLayoutCache {
 public:
  explicit KvCacheLayoutCache(const ModelSpec& spec) : spec_(spec) {}
  KvCacheLayoutCache(const KvCacheLayoutCache&) = delete;
  KvCacheLayoutCache& operator=(const KvCacheLayoutCache&) = delete;

  const ModelSpec& spec() const { return spec_; }
  /*! The layout for \p options, built on a miss. Raises exactly what BuildKvCacheLayout raises
   *  (on a hit only the budget count can be wrong). */
  std::shared_ptr<const KvCacheLayout> Get(const KvCacheOptions& options, size_t num_available) const;
  size_t size() const;

  /*! Layouts kept: a planner varies a handful of layout settings (TP, PP, KV dtype). */
  static constexpr size_t kCapacity = 16;

 private:
  const ModelSpec& spec_;
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<KvCacheLayoutKey, std::shared_ptr<const KvCacheLayout>>> entries_;
};

/*! \brief The entry points of kv_cache_capacity.h on a cached layout: the same rules, the
 *  same results and the same errors as the overloads taking a ModelSpec. */
KvCacheCapacity ComputeKvCacheCapacity(const KvCacheLayoutCache& cache,
                                       const std::vector<int64_t>& available_bytes_per_worker,
                                       const KvCacheOptions& options);
int64_t EstimateMaxModelLen(const KvCacheLayoutCache& cache, const std::vector<int64_t>& available_bytes_per_worker,
                            const KvCacheOptions& options);
int64_t AutoFitMaxModelLen(const KvCacheLayoutCache& cache, const std::vector<int64_t>& available_bytes_per_worker,
                           const KvCacheOptions& options);
std::string KvCacheMemoryShortfall(const KvCacheLayoutCache& cache,
                                   const std::vector<int64_t>& available_bytes_per_worker,
                                   const KvCacheOptions& options);

/*! \brief What a KV budget is divided by, read from the layout without a budget: per pipeline
 *  rank the bytes one block id costs on its workers (0 on a rank holding no KV layer), and the
 *  groups with their per-request blocks at options.max_model_len. */
struct KvCacheGeometry {
  int64_t block_size = 0;                    //!< as KvCacheCapacity::block_size
  std::vector<int64_t> bytes_per_block;      //!< one per pipeline rank
  std::vector<KvCacheGroupInfo> groups;      //!< as KvCacheCapacity::groups
  int64_t blocks_per_request = 0;            //!< the sum over groups: one max_model_len request
};
/*! Raises what ComputeKvCacheCapacity raises for \p options before it looks at a budget. */
KvCacheGeometry ComputeKvCacheGeometry(const KvCacheLayoutCache& cache, const KvCacheOptions& options);

}  // namespace vllm_mem

#endif  // VLLM_MEM_KV_CACHE_KV_CACHE_LAYOUT_H_
