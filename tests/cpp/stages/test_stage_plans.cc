#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bundled_config.h"
#include "expect_invalid_argument.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/stages/stage_check.h"
#include "vllm_mem/stages/stage_config.h"
#include "vllm_mem/stages/stage_plans.h"

namespace vllm_mem {
namespace {

constexpr int64_t kH100Bytes = 85029158912;  // torch's total_memory of an H100-80GB

/*! One stage at 0.5 of GPU 0, eager (vLLM-Omni's default), Llama-3.1-8B at 8192 tokens. */
StageCheckResult OneStage() {
  StageCheckOptions o;
  o.default_device.name = "H100-80GB";
  o.default_device.total_bytes = kH100Bytes;
  return CheckStages(ParseStageConfigText(R"({"stages": [{"stage_id": 0, "devices": "0",
      "engine_args": {"gpu_memory_utilization": 0.5, "max_model_len": 8192}}]})"),
                     o);
}

StageModel Llama8B(PlanInputs settings = {}) {
  return StageModel{0, testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json"), "llama", 0, settings};
}

/*! plan() on the stage's device with the stage's knobs, as PlanStages is documented to evaluate. */
StartupPlan PlanOnTheStagesDevice(PlanInputs in) {
  in.total_memory_bytes = kH100Bytes;
  in.free_memory_bytes = kH100Bytes;  // nothing else on the GPU, offline
  in.gpu_name = "H100-80GB";
  in.gpu_memory_utilization = 0.5;
  in.max_model_len = 8192;
  in.enforce_eager = true;
  return EvaluatePlan(testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json"), in);
}

TEST(StagePlans, EvaluateTheSettingsObjectWithTheStagesKnobsOverIt) {
  PlanInputs fp8;
  fp8.kv_cache_dtype = "fp8";
  const StageCheckResult check = OneStage();
  const std::vector<StagePlanSummary> plans = PlanStages(check, {Llama8B(), Llama8B(fp8)});
  ASSERT_EQ(plans.size(), 2u);
  const StartupPlan want = PlanOnTheStagesDevice(fp8);
  ASSERT_TRUE(want.kv_cache.has_value());
  EXPECT_EQ(plans[1].num_tokens, want.kv_cache->num_tokens);
  EXPECT_EQ(plans[1].available_kv_cache_bytes, want.available_kv_cache_bytes);
  EXPECT_EQ(plans[1].non_kv_cache_bytes, want.non_kv_cache_bytes);
  // By hand (the model's config.json): 32 layers x 8 KV heads x 128 x (K + V) x 2 bytes = 128 KiB
  // a token in bfloat16, 2 MiB per 16-token block; fp8 stores one byte: 1 MiB. Same budget.
  EXPECT_EQ(plans[0].available_kv_cache_bytes, plans[1].available_kv_cache_bytes);
  EXPECT_EQ(plans[0].num_blocks, plans[0].available_kv_cache_bytes / (2 << 20));
  EXPECT_EQ(plans[1].num_blocks, plans[1].available_kv_cache_bytes / (1 << 20));
}

TEST(StagePlans, TheDevicesCatalogNameReachesThePlan) {
  // plan(gpu="H100-80GB") and the stage plan on an H100 share the release's H100 scheduler tier.
  const StageCheckResult check = OneStage();
  const std::vector<StagePlanSummary> plans = PlanStages(check, {Llama8B()});
  const StartupPlan want = PlanOnTheStagesDevice({});
  EXPECT_EQ(plans[0].non_kv_cache_bytes, want.non_kv_cache_bytes);
  EXPECT_EQ(plans[0].num_tokens, want.kv_cache->num_tokens);
}

TEST(StagePlans, RefusalsNameTheStage) {
  PlanInputs dcp;
  dcp.decode_context_parallel_size = 2;  // TP 1: vLLM's "tp_size=1 must be divisible bydcp_size=2."
  const StageCheckResult check = OneStage();
  testing::ExpectInvalidArgument([&] { (void)PlanStages(check, {Llama8B(dcp)}); },
                                 "stages[0] (stage 0) decode_context_parallel_size");
  try {
    (void)PlanStages(check, {Llama8B(dcp)});
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()),
              "stages[0] (stage 0) decode_context_parallel_size: tp_size=1 must be divisible bydcp_size=2.");
  }
}

}  // namespace
}  // namespace vllm_mem
