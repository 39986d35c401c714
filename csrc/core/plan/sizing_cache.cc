/*!
 * \file core/plan/sizing_cache.cc
 * \brief The per-model memos of sizing_cache.h: most recent first, built outside the lock.
 */
#include "vllm_mem/plan/sizing_cache.h"

#include <algorithm>
#include <utility>

#include "vllm_mem/plan/release_resolution.h"

namespace vllm_mem {
namespace {

/*! The entry \p same finds, moved to the front; nullptr when none. Call with the lock held. */
template <typename Entry, typename Same>
const Entry* FindToFront(std::vector<Entry>& entries, Same&& same) {
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!same(entries[i])) continue;
    if (i > 0) {
      std::rotate(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(i),
                  entries.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
    return &entries.front();
  }
  return nullptr;
}

template <typename Entry>
void InsertFront(std::vector<Entry>& entries, Entry entry) {
  entries.insert(entries.begin(), std::move(entry));
  if (entries.size() > SizingCache::kCapacity) entries.pop_back();
}

}  // namespace

#define VLLM_MEM_SAME_FIELD(type, name, init, ...) &&a.name == b.name

bool SameKvCacheSettings(const KvCacheSettings& a, const KvCacheSettings& b) {
  return true VLLM_MEM_KV_CACHE_SETTINGS(VLLM_MEM_SAME_FIELD);
}

bool SamePlanRequest(const PlanRequest& a, const PlanRequest& b) {
  return SameKvCacheSettings(a, b) VLLM_MEM_PLAN_SETTINGS(VLLM_MEM_SAME_FIELD);
}

#undef VLLM_MEM_SAME_FIELD

SizingCache::KvFound SizingCache::FindKv(const KvCacheSettings& settings, int64_t num_speculative_tokens) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const KvEntry* hit = FindToFront(kv_options_, [&](const KvEntry& e) {
      return e.num_speculative_tokens == num_speculative_tokens && SameKvCacheSettings(e.settings, settings);
    });
    if (hit != nullptr) return {hit->options, hit->query};
  }
  // Resolved outside the lock (it may throw); a racing caller with the same settings only
  // repeats the work.
  KvCacheOptions resolved = KvOptionsForRelease(settings, num_speculative_tokens);
  resolved.mamba_cache_mode = ResolvedMambaCacheMode(*LookupVllmVersion(settings.vllm_version).profile, spec(), settings);
  auto options = std::make_shared<const KvCacheOptions>(std::move(resolved));
  std::lock_guard<std::mutex> lock(mutex_);
  InsertFront(kv_options_, KvEntry{settings, num_speculative_tokens, options, nullptr});
  return {options, nullptr};
}

std::shared_ptr<const KvCacheOptions> SizingCache::KvOptions(const KvCacheSettings& settings,
                                                             int64_t num_speculative_tokens) const {
  return FindKv(settings, num_speculative_tokens).options;
}

template <typename Key, typename Value, typename Compute>
std::shared_ptr<const Value> SizingCache::Remembered(Memo<Key, Value>& memo, const Key& key, Compute&& compute) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto* hit = FindToFront(memo, [&](const auto& entry) { return entry.first == key; });
    if (hit != nullptr) return hit->second;
  }
  auto value = std::make_shared<const Value>(compute());
  std::lock_guard<std::mutex> lock(mutex_);
  InsertFront(memo, {key, value});
  return value;
}

std::shared_ptr<const KvCacheQuery> SizingCache::KvQuery(const KvCacheOptions& options, size_t num_available) const {
  return Remembered(kv_queries_, options, [&] { return KvCacheQuery(layouts_, options, num_available); });
}

KvCacheCapacity SizingCache::KvCapacity(const KvCacheSettings& settings, int64_t num_speculative_tokens,
                                        const std::vector<int64_t>& available_bytes) const {
  KvFound entry = FindKv(settings, num_speculative_tokens);
  if (entry.options->max_model_len == kMaxModelLenAuto) {
    KvCacheOptions fitted = *entry.options;  // the length each call's budgets fit
    AutoFitKvOptions(layouts_, available_bytes, fitted);
    return ComputeKvCacheCapacity(layouts_, available_bytes, fitted);
  }
  if (entry.query == nullptr) {
    // Kept on the request's entry too, so the next call skips the options' look-up.
    entry.query = KvQuery(*entry.options, available_bytes.size());
    std::lock_guard<std::mutex> lock(mutex_);
    for (KvEntry& e : kv_options_) {
      if (e.options == entry.options) e.query = entry.query;
    }
  }
  return entry.query->Capacity(available_bytes);
}

std::shared_ptr<const CudagraphEstimate> SizingCache::Cudagraphs(const CudagraphOptions& options) const {
  return Remembered(graphs_, options, [&] { return EstimateCudagraphMemory(spec(), options); });
}

std::shared_ptr<const WeightBreakdown> SizingCache::Weights(const WeightOptions& options) const {
  return Remembered(weights_, options, [&] { return ComputeWeights(spec(), options); });
}

std::shared_ptr<const ResolvedRelease> SizingCache::FindRelease(const PlanRequest& request,
                                                                const PlanEnvironment& environment) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const ReleaseEntry* hit = FindToFront(releases_, [&](const ReleaseEntry& e) {
    return e.environment == environment && SamePlanRequest(e.request, request);
  });
  return hit != nullptr ? hit->release : nullptr;
}

void SizingCache::KeepRelease(const PlanRequest& request, const PlanEnvironment& environment,
                              std::shared_ptr<const ResolvedRelease> release) const {
  std::lock_guard<std::mutex> lock(mutex_);
  InsertFront(releases_, ReleaseEntry{request, environment, std::move(release)});
}

}  // namespace vllm_mem
