#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/stages/stage_demand.h"
#include "vllm_mem/plan/startup_plan.h"
#include "bundled_config.h"

namespace vllm_mem {
namespace {

constexpr int64_t kH100Bytes = 85029158912;

ModelSpec Llama8B() { return testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json"); }

PlanInputs Inputs() {
  PlanInputs in;
  in.total_memory_bytes = kH100Bytes;
  in.max_model_len = 8192;
  in.tensor_parallel_size = 2;
  return in;
}

TEST(StageDemand, KvNeedIsTheLeastBudgetServingTheConcurrency) {
  const ModelSpec spec = Llama8B();
  const StageDemand d = StageDemandFor(spec, Inputs(), 3, {0, 1}, 12.0);
  EXPECT_EQ(d.stage_id, 3);
  EXPECT_EQ(d.world_size, 2);
  const KvCacheOptions kv = KvOptionsFor(spec, Inputs());
  EXPECT_GE(ComputeKvCacheCapacity(spec, {d.kv_bytes_needed}, kv).max_concurrency, 12.0);
  bool one_less_serves = true;
  try {
    one_less_serves = ComputeKvCacheCapacity(spec, {d.kv_bytes_needed - 1}, kv).max_concurrency >= 12.0;
  } catch (const InsufficientMemory&) {
    one_less_serves = false;
  }
  EXPECT_FALSE(one_less_serves);
}

TEST(StageDemand, FixedPartIsThePlannersNonKvFigure) {
  const ModelSpec spec = Llama8B();
  const StageDemand d = StageDemandFor(spec, Inputs(), 0, {}, 1.0);
  PlanInputs in = Inputs();
  in.gpu_memory_utilization = 1.0;
  in.free_memory_bytes = kH100Bytes;
  const StartupPlan plan = EvaluatePlan(spec, in);
  ASSERT_EQ(plan.ranks.size(), 1u);
  EXPECT_EQ(d.fixed_bytes, plan.ranks[0].non_kv_cache_bytes + plan.ranks[0].cudagraph_applied_bytes);
  EXPECT_GT(d.fixed_bytes, 0);
}

TEST(StageDemand, BadConcurrency) {
  EXPECT_THROW(StageDemandFor(Llama8B(), Inputs(), 0, {}, 0.0), InvalidArgument);
}

/*! Whether the plan of \p in given \p kv_bytes per worker (--kv-cache-memory-bytes) serves \p concurrency. */
bool PlanServes(const ModelSpec& spec, PlanInputs in, int64_t kv_bytes, double concurrency) {
  in.kv_cache_memory_bytes = kv_bytes;
  const StartupPlan plan = EvaluatePlan(spec, in);
  return plan.kv_cache.has_value() && plan.kv_cache->max_concurrency >= concurrency;
}

TEST(StageDemand, KvNeedIsThePlansOwnOnEveryPipelineRank) {
  // Two pipeline ranks and fp8: the need is the least --kv-cache-memory-bytes at which plan()
  // itself (every rank given that budget, the KV options the release resolves) serves 10 requests.
  const ModelSpec spec = Llama8B();
  PlanInputs in = Inputs();
  in.pipeline_parallel_size = 2;
  in.kv_cache_dtype = "fp8";
  const StageDemand d = StageDemandFor(spec, in, 0, {}, 10.0);
  EXPECT_EQ(d.world_size, 4);
  EXPECT_TRUE(PlanServes(spec, in, d.kv_bytes_needed, 10.0));
  EXPECT_FALSE(PlanServes(spec, in, d.kv_bytes_needed - 1, 10.0));
}

TEST(StageDemand, RefusesSettingsThatFixTheKvCache) {
  PlanInputs automatic = Inputs();
  automatic.max_model_len = kMaxModelLenAuto;
  EXPECT_THROW(StageDemandFor(Llama8B(), automatic, 0, {}, 1.0), InvalidArgument);
  PlanInputs blocks = Inputs();
  blocks.num_gpu_blocks_override = 1000;
  EXPECT_THROW(StageDemandFor(Llama8B(), blocks, 0, {}, 1.0), InvalidArgument);
}

}  // namespace
}  // namespace vllm_mem
