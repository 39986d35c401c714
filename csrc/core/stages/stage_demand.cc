/*!
 * \file core/stages/stage_demand.cc
 * \brief A stage's per-worker need from the start-up planner and the KV sizing.
 */
#include "vllm_mem/stages/stage_demand.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/base/binary_search.h"
#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_query.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

/*! \brief Whether \p available_bytes on every pipeline rank's workers holds \p concurrency
 *  requests in the plan's own KV pool (\p pool: its layers, a drafter's included, at its options). */
bool Serves(const KvCacheQuery& pool, int64_t pipeline_parallel_size, int64_t available_bytes, double concurrency) {
  try {
    const std::vector<int64_t> budgets(static_cast<size_t>(pipeline_parallel_size), available_bytes);
    return pool.Capacity(budgets).max_concurrency >= concurrency;
  } catch (const InsufficientMemory&) {
    return false;  // not one block / not one max_model_len request
  }
}

/*! \brief The settings a stage's need cannot take: the need is searched over the budget they fix. */
void RefuseBudgetSettings(const std::string& name, const PlanInputs& inputs, double concurrency) {
  if (!(concurrency > 0.0) || !std::isfinite(concurrency)) {
    throw InvalidArgument(name + " concurrency", "must be a positive number of max_model_len requests");
  }
  if (inputs.max_model_len == kMaxModelLenAuto) {
    throw InvalidArgument(name + " max_model_len",
                          "must be a length: a stage's KV need is concurrency x max_model_len tokens, "
                          "and auto (-1) fits the length to a budget instead");
  }
  if (inputs.num_gpu_blocks_override > 0) {
    throw InvalidArgument(name + " num_gpu_blocks_override",
                          "cannot be given: it fixes the KV cache whatever the concurrency (give the "
                          "stage's fixed_bytes and kv_bytes_needed instead)");
  }
}

}  // namespace

StageDemand StageDemandFor(const ModelSpec& spec, const PlanInputs& inputs, int64_t stage_id,
                           const std::vector<int64_t>& devices, double concurrency) {
  const std::string name = "stage " + std::to_string(stage_id);
  RefuseBudgetSettings(name, inputs, concurrency);
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
  const KvCacheQuery& pool = *plan.kv_query;
  const int64_t pp = plan.inputs.pipeline_parallel_size;

  // Least per-worker KV budget serving the concurrency: grow an upper bound, then bisect.
  int64_t hi = kGiB;
  while (!Serves(pool, pp, hi, concurrency)) {
    if (hi > (int64_t{1} << 50)) {  // a petabyte per GPU: the request itself is absurd
      throw InvalidArgument(name + " concurrency", "no KV budget below 1 PiB per GPU serves it");
    }
    hi *= 2;
  }
  // The least budget in [1, hi] that serves (hi does; 0 bytes holds no block).
  hi = *SmallestHolding(1, hi, [&](int64_t bytes) { return Serves(pool, pp, bytes, concurrency); });
  StageDemand d;
  d.stage_id = stage_id;
  d.world_size = CheckedMul(inputs.tensor_parallel_size, inputs.pipeline_parallel_size, "world_size");
  d.devices = devices;
  d.fixed_bytes = fixed;
  d.kv_bytes_needed = hi;
  return d;
}

}  // namespace vllm_mem
