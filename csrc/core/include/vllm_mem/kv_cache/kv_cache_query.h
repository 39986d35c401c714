/*!
 * \file vllm_mem/kv_cache/kv_cache_query.h
 * \brief Several KV questions at one set of options, with the options checked and the layout
 *        looked up once: a plan asks the same layout for its bytes per block, the shortfall,
 *        the longest length that fits and the capacity in turn. Each answer (and each error)
 *        equals that of the KvCacheLayoutCache entry point of kv_cache_layout.h with the same
 *        options and budgets.
 */
#ifndef VLLM_MEM_KV_CACHE_KV_CACHE_QUERY_H_
#define VLLM_MEM_KV_CACHE_KV_CACHE_QUERY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_layout.h"

namespace vllm_mem {

struct KvQueryFigures;  // kv_cache_capacity.cc: what the options fix whatever the budgets

/*! \brief One layout of \p cache at \p options, with what the options fix whatever the budgets
 *  (each rank's need, the groups described) computed once: a capacity then only divides the
 *  budgets. An error computing one of those figures is raised where the entry point raises it.
 *  The cache must outlive the query; a query is immutable, so threads may share one. */
class KvCacheQuery {
 public:
  /*! Checks \p options and looks the layout up as the entry points do for \p num_available
   *  budgets, raising what they raise before they look at a budget. */
  KvCacheQuery(const KvCacheLayoutCache& cache, const KvCacheOptions& options, size_t num_available);

  /*! ComputeKvCacheGeometry(cache, options). */
  KvCacheGeometry Geometry() const;
  /*! KvCacheMemoryShortfall(cache, available, options). */
  std::string Shortfall(const std::vector<int64_t>& available) const;
  /*! ComputeKvCacheCapacity(cache, available, options). */
  KvCacheCapacity Capacity(const std::vector<int64_t>& available) const;
  /*! EstimateMaxModelLen(cache, available, options with max_model_len = \p max_model_len). */
  int64_t EstimateMaxModelLen(const std::vector<int64_t>& available, int64_t max_model_len) const;

 private:
  static std::shared_ptr<const KvQueryFigures> FiguresOf(const KvCacheLayout& layout, const KvCacheOptions& options);

  KvCacheOptions options_;
  std::shared_ptr<const KvCacheLayout> layout_;
  std::shared_ptr<const KvQueryFigures> figures_;
};

}  // namespace vllm_mem

#endif  // VLLM_MEM_KV_CACHE_KV_CACHE_QUERY_H_
