/*!
 * \file vllm_mem/plan/sizing_cache.h
 * \brief What every plan and KV question of one model shares, remembered per model (Python's
 *        ModelSpec owns one, `ModelSpec._sizing`; the sweep keeps one for all its shapes): the
 *        KV layouts (kv_cache_layout.h), the KV options a request resolves to under its release,
 *        a KV query per options (kv_cache_query.h), the weights per weight settings, the
 *        CUDA-graph estimate per graph options and a plan request's release resolution. Each is a pure function of the model and its
 *        arguments, so a remembered answer is the answer: a sizing call in a loop pays a
 *        comparison of its settings instead of the release's rules, the table's re-check and a
 *        walk over the layer kinds (docs/performance.md).
 */
#ifndef VLLM_MEM_PLAN_SIZING_CACHE_H_
#define VLLM_MEM_PLAN_SIZING_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_layout.h"
#include "vllm_mem/kv_cache/kv_cache_query.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"
#include "vllm_mem/plan/cudagraph_estimate.h"
#include "vllm_mem/plan/plan_request.h"
#include "vllm_mem/plan/startup_plan.h"

namespace vllm_mem {

/*! \brief What the process decides beside a request: the device's total and name, the vLLM
 *  release (asked, installed or newest) and VLLM_ALLOW_LONG_MAX_MODEL_LEN. */
struct PlanEnvironment {
  int64_t total_memory_bytes = 0;
  std::string gpu_name;
  std::string vllm_version;
  std::string vllm_version_source;
  bool allow_long_max_model_len = false;
  bool operator==(const PlanEnvironment&) const = default;
};

/*! \brief A request resolved by its release for one model: the plan's first phase. */
struct ResolvedRelease {
  const VllmVersionProfile* profile = nullptr;
  PlanInputs inputs;  //!< the release's defaults filled in and checked
};

/*! \brief One model's remembered sizing pieces. \p spec must outlive the cache and must not
 *  change while it lives (the Python ModelSpec is read-only). Thread-safe: the sweep and a
 *  plan may release the GIL. Each memo keeps its most recent entries first, kCapacity of them. */
class SizingCache {
 public:
  explicit SizingCache(const ModelSpec& spec) : layouts_(spec) {}
  SizingCache(const SizingCache&) = delete;
  SizingCache& operator=(const SizingCache&) = delete;

  const ModelSpec& spec() const { return layouts_.spec(); }
  const KvCacheLayoutCache& kv_layouts() const { return layouts_; }

  /*! KvOptionsForRelease(settings, num_speculative_tokens) (plan_request.h): the table's check,
   *  the release's KV rules and what the user set. Raises what it raises (nothing is kept then). */
  std::shared_ptr<const KvCacheOptions> KvOptions(const KvCacheSettings& settings,
                                                  int64_t num_speculative_tokens) const;
  /*! A KvCacheQuery (kv_cache_query.h) of kv_layouts() at \p options, remembered by the options:
   *  a plan or a KV question in a loop looks its layout up, checks its options and describes its
   *  groups once. \p num_available: the first caller's budget count (each answer checks its own).
   *  Raises what the query's constructor raises (nothing is kept then). */
  std::shared_ptr<const KvCacheQuery> KvQuery(const KvCacheOptions& options, size_t num_available) const;
  /*! kv_cache_capacity(): ComputeKvCacheCapacity at KvOptions(settings, num_speculative_tokens),
   *  max_model_len auto first fitted to \p available_bytes (AutoFitKvOptions), on the options'
   *  KvQuery for a fixed length. Raises what those raise (nothing is kept then). */
  KvCacheCapacity KvCapacity(const KvCacheSettings& settings, int64_t num_speculative_tokens,
                             const std::vector<int64_t>& available_bytes) const;
  /*! EstimateCudagraphMemory(spec(), options) (cudagraph_estimate.h), remembered by the options:
   *  a plan in a loop over GPUs or utilizations captures the same graphs. Raises what it raises. */
  std::shared_ptr<const CudagraphEstimate> Cudagraphs(const CudagraphOptions& options) const;
  /*! ComputeWeights(spec(), options) (weights.h). Raises what it raises. */
  std::shared_ptr<const WeightBreakdown> Weights(const WeightOptions& options) const;
  /*! \p resolve()'s answer for (request, environment): the plan's release resolution, a pure
   *  function of the model, the request and the environment. Raises what it raises. */
  template <typename Resolve>
  std::shared_ptr<const ResolvedRelease> Release(const PlanRequest& request, const PlanEnvironment& environment,
                                                 Resolve&& resolve) const;

  /*! Entries kept per memo: a planner varies a handful of settings (TP, PP, dtypes). */
  static constexpr size_t kCapacity = 16;

 private:
  struct KvEntry {
    KvCacheSettings settings;
    int64_t num_speculative_tokens = 0;
    std::shared_ptr<const KvCacheOptions> options;
    std::shared_ptr<const KvCacheQuery> query;  //!< KvQuery(*options), once a capacity asked (fixed lengths)
  };
  /*! A memo of answers by a key compared with ==, most recent first. */
  template <typename Key, typename Value>
  using Memo = std::vector<std::pair<Key, std::shared_ptr<const Value>>>;
  /*! \p memo's answer for \p key, else compute() (outside the lock: it may throw, and nothing
   *  is kept then) kept. */
  template <typename Key, typename Value, typename Compute>
  std::shared_ptr<const Value> Remembered(Memo<Key, Value>& memo, const Key& key, Compute&& compute) const;
  struct ReleaseEntry {
    PlanRequest request;
    PlanEnvironment environment;
    std::shared_ptr<const ResolvedRelease> release;
  };
  std::shared_ptr<const ResolvedRelease> FindRelease(const PlanRequest& request,
                                                     const PlanEnvironment& environment) const;
  /*! What the entry of (settings, tokens) holds, the entry built and kept when new. */
  struct KvFound {
    std::shared_ptr<const KvCacheOptions> options;
    std::shared_ptr<const KvCacheQuery> query;  //!< null until a capacity asked
  };
  KvFound FindKv(const KvCacheSettings& settings, int64_t num_speculative_tokens) const;
  void KeepRelease(const PlanRequest& request, const PlanEnvironment& environment,
                   std::shared_ptr<const ResolvedRelease> release) const;

  KvCacheLayoutCache layouts_;
  mutable std::mutex mutex_;
  mutable std::vector<KvEntry> kv_options_;
  mutable Memo<KvCacheOptions, KvCacheQuery> kv_queries_;
  mutable Memo<WeightOptions, WeightBreakdown> weights_;
  mutable Memo<CudagraphOptions, CudagraphEstimate> graphs_;
  mutable std::vector<ReleaseEntry> releases_;
};

template <typename Resolve>
std::shared_ptr<const ResolvedRelease> SizingCache::Release(const PlanRequest& request,
                                                            const PlanEnvironment& environment,
                                                            Resolve&& resolve) const {
  std::shared_ptr<const ResolvedRelease> hit = FindRelease(request, environment);
  if (hit != nullptr) return hit;
  auto release = std::make_shared<const ResolvedRelease>(resolve());  // outside the lock: it may throw
  KeepRelease(request, environment, release);
  return release;
}

/*! \brief EvaluatePlan (startup_plan.h) on the model's remembered pieces: the same plan, the
 *  same errors. */
StartupPlan EvaluatePlan(const SizingCache& sizing, PlanInputs inputs);
/*! \brief The plan of a request in an environment (Python's plan()): EvaluatePlan of the
 *  request's PlanInputs with the environment set, its release resolution remembered too. The
 *  plan's `request` is \p request as given. */
StartupPlan EvaluateRequest(const SizingCache& sizing, const PlanRequest& request, const PlanEnvironment& environment);

/*! \brief Field-by-field equality of two requests (every row of the settings table). */
bool SameKvCacheSettings(const KvCacheSettings& a, const KvCacheSettings& b);
bool SamePlanRequest(const PlanRequest& a, const PlanRequest& b);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_SIZING_CACHE_H_
