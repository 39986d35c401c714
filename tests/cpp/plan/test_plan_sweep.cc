#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/plan_sweep.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/base/units.h"
#include "bundled_config.h"

namespace vllm_mem {
namespace {

ModelSpec Bundled(const std::string& file) { return testing::BundledModel(file); }

SweepAxes Grid() {
  SweepAxes a;
  for (const char* g : {"H100-80GB", "L4", "A100-40GB", "T4"}) {
    a.total_memory_bytes.push_back(LookupGpu(g).total_memory_bytes);
    a.gpu_names.push_back(g);
  }
  a.total_memory_bytes.push_back(4 * kGiB);  // a small GPU by size only
  a.gpu_names.push_back("");
  a.gpu_memory_utilization = {0.2, 0.5, 0.9, 0.95, 0.99};
  a.max_model_len = {2048, 32768, 131072};
  a.tensor_parallel_size = {1, 2, 3};  // 3 does not divide 32 heads: invalid rows
  a.pipeline_parallel_size = {1, 2};
  a.kv_cache_dtype = {"auto", "fp8"};
  a.enforce_eager = {0, 1};
  return a;
}

}  // namespace

// Every row equals EvaluatePlan on the same inputs: the fast path is an exact specialisation.
TEST(PlanSweep, RowsEqualEvaluatePlan) {
  for (const char* model : {"meta-llama--Llama-3.1-8B-Instruct.json", "microsoft--phi-2.json"}) {
    const ModelSpec spec = Bundled(model);
    const SweepAxes axes = Grid();
    const SweepColumns c = RunSweep(spec, axes);
    ASSERT_EQ(c.num_rows, 5 * 5 * 3 * 3 * 2 * 2 * 2);
    ASSERT_EQ(static_cast<int64_t>(c.fits.size()), c.num_rows);
    EXPECT_GT(c.num_fast_rows, 0);
    int phases_seen[8] = {0};
    for (int64_t i = 0; i < c.num_rows; ++i) {
      // The derived columns: each figure over a GiB and over the row's total, every row.
      const double total = static_cast<double>(c.total_memory_bytes[i]);
      ASSERT_EQ(c.weights_gib[i], static_cast<double>(c.weights_bytes[i]) / static_cast<double>(kGiB)) << i;
      ASSERT_EQ(c.weights_fraction[i], static_cast<double>(c.weights_bytes[i]) / total) << i;
      ASSERT_EQ(c.available_kv_cache_gib[i], static_cast<double>(c.available_kv_cache_bytes[i]) / static_cast<double>(kGiB)) << i;
      ASSERT_EQ(c.available_kv_cache_fraction[i], static_cast<double>(c.available_kv_cache_bytes[i]) / total) << i;
      ASSERT_EQ(c.requested_fraction[i], static_cast<double>(c.requested_bytes[i]) / total) << i;
      ASSERT_EQ(c.cudagraph_gib[i] * static_cast<double>(kGiB), static_cast<double>(c.cudagraph_bytes[i])) << i;
      PlanInputs in = axes.base;
      in.total_memory_bytes = c.total_memory_bytes[i];
      in.gpu_memory_utilization = c.gpu_memory_utilization[i];
      in.max_model_len = c.max_model_len[i];
      in.tensor_parallel_size = c.tensor_parallel_size[i];
      in.pipeline_parallel_size = c.pipeline_parallel_size[i];
      in.kv_cache_dtype = c.kv_cache_dtype_values[c.kv_cache_dtype_index[i]];
      in.enforce_eager = c.enforce_eager[i] != 0;
      if (c.failure_phase[i] == kSweepInvalid) {
        EXPECT_THROW(EvaluatePlan(spec, in), InvalidArgument);
        ++phases_seen[7];
        continue;
      }
      const StartupPlan p = EvaluatePlan(spec, in);
      ++phases_seen[static_cast<int>(p.failure_phase)];
      ASSERT_EQ(c.fits[i] != 0, p.fits) << i;
      ASSERT_EQ(c.failure_phase[i], static_cast<int8_t>(p.failure_phase)) << i;
      ASSERT_EQ(c.requested_bytes[i], p.requested_bytes);
      ASSERT_EQ(c.weights_bytes[i], p.weights_bytes);
      ASSERT_EQ(c.activation_peak_bytes[i], p.activation_peak_bytes);
      ASSERT_EQ(c.non_torch_bytes[i], p.non_torch_bytes);
      ASSERT_EQ(c.cudagraph_bytes[i], p.cudagraph_bytes);
      ASSERT_EQ(c.available_kv_cache_bytes[i], p.available_kv_cache_bytes) << i;
      ASSERT_EQ(c.max_model_len_that_fits[i], p.max_model_len_that_fits) << i;
      if (p.kv_cache) {
        ASSERT_EQ(c.num_blocks[i], p.kv_cache->num_blocks);
        ASSERT_EQ(c.num_tokens[i], p.kv_cache->num_tokens);
        ASSERT_DOUBLE_EQ(c.max_concurrency[i], p.kv_cache->max_concurrency);
      }
    }
    // The grid reaches every outcome, so the comparison covers each branch.
    EXPECT_GT(phases_seen[0], 0);
    EXPECT_GT(phases_seen[static_cast<int>(FailurePhase::kWeights)], 0);
    EXPECT_GT(phases_seen[static_cast<int>(FailurePhase::kNoKvBlocks)], 0);
    EXPECT_GT(phases_seen[static_cast<int>(FailurePhase::kMaxModelLen)], 0);
    EXPECT_GT(phases_seen[7], 0);
  }
}

TEST(PlanSweep, GivenFreeMemoryAndFreeMemoryPhase) {
  const ModelSpec spec = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  SweepAxes a;
  a.base.free_memory_bytes = 60 * kGiB;
  a.base.max_model_len = 8192;
  a.total_memory_bytes = {LookupGpu("H100").total_memory_bytes};
  a.gpu_memory_utilization = {0.7, 0.8};
  SweepColumns c = RunSweep(spec, a);
  ASSERT_EQ(c.num_rows, 2);
  EXPECT_TRUE(c.fits[0]);  // 0.7 x 79.19 = 55.4 GiB <= 60 GiB free
  EXPECT_EQ(c.failure_phase[1], static_cast<int8_t>(FailurePhase::kFreeMemory));
}

TEST(PlanSweep, BadAxisValues) {
  const ModelSpec spec = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  SweepAxes a;
  EXPECT_THROW(RunSweep(spec, a), InvalidArgument);  // no GPU at all
  a.total_memory_bytes = {LookupGpu("H100").total_memory_bytes};
  a.gpu_memory_utilization = {0.9, 1.5};
  EXPECT_THROW(RunSweep(spec, a), InvalidArgument);
}

}  // namespace vllm_mem
