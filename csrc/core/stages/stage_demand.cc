/*!
 * \file core/stages/stage_demand.cc
 * \brief A stage's per-worker need from the start-up planner and the KV sizing.
 */
#include "vllm_mem/stages/stage_demand.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/base/binary_search.h"
#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

/*! \brief Whether \p available_bytes on every worker serves \p concurrency requests. */
bool Serves(const ModelSpec& spec, const KvCacheOptions& options, int64_t available_bytes, double concurrency) {
  try {
    return ComputeKvCacheCapacity(spec, {available_bytes}, options).max_concurrency >= concurrency;
  } catch (const InsufficientMemory&) {
    return false;  // not one block / not one max_model_len request
  }
}

}  // namespace

StageDemand StageDemandFor(const ModelSpec& spec, const PlanInputs& inputs, int64_t stage_id,
                           const std::vector<int64_t>& devices, double concurrency) {
  const std::string name = "stage " + std::to_string(stage_id);
  if (!(concurrency > 0.0) || !std::isfinite(concurrency)) {
    throw InvalidArgument(name + " concurrency", "must be a positive number of max_model_len requests");
  }
  // Fixed terms do not depend on the utilization; evaluate with the whole device granted.
  PlanInputs in = inputs;
  in.gpu_memory_utilization = 1.0;
  in.free_memory_bytes = in.total_memory_bytes;
  in.kv_cache_memory_bytes = 0;
  const StartupPlan plan = EvaluatePlan(spec, in);
  int64_t fixed = 0;
  for (const RankPlan& r : plan.ranks) {
    fixed = std::max(fixed, CheckedAdd(r.non_kv_cache_bytes, r.cudagraph_applied_bytes, "fixed_bytes"));
  }
  const KvCacheOptions kv = KvOptionsFor(spec, plan.inputs);

  // Least per-worker KV budget serving the concurrency: grow an upper bound, then bisect.
  int64_t hi = kGiB;
  while (!Serves(spec, kv, hi, concurrency)) {
    if (hi > (int64_t{1} << 50)) {  // a petabyte per GPU: the request itself is absurd
      throw InvalidArgument(name + " concurrency", "no KV budget below 1 PiB per GPU serves it");
    }
    hi *= 2;
  }
  // The least budget in [1, hi] that serves (hi does; 0 bytes holds no block).
  hi = *SmallestHolding(1, hi, [&](int64_t bytes) { return Serves(spec, kv, bytes, concurrency); });
  StageDemand d;
  d.stage_id = stage_id;
  d.world_size = CheckedMul(inputs.tensor_parallel_size, inputs.pipeline_parallel_size, "world_size");
  d.devices = devices;
  d.fixed_bytes = fixed;
  d.kv_bytes_needed = hi;
  return d;
}

}  // namespace vllm_mem
