#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/plan/plan_suggestions.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/base/units.h"
#include "bundled_config.h"

namespace vllm_mem {
namespace {

ModelSpec Bundled(const std::string& file) { return testing::BundledModel(file); }
const ModelSpec& Llama() {
  static const ModelSpec spec = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  return spec;
}
// The scheduler sizes these tests were written for, pinned: unset, they follow the release
// and the GPU (test_vllm_version_profile.cc). The release too: 0.21, whose V1 model runner
// serves Llama with its CUDA-graph estimate in the KV budget (PR #38284); 0.23-0.24 list Llama
// for Model Runner V2 and from 0.25 V2 serves every dense model, budgeting no graphs (model_runner.h).
PlanInputs H100(double util, int64_t max_model_len) {
  PlanInputs in;
  in.vllm_version = "0.21";
  in.total_memory_bytes = LookupGpu("H100-80GB").total_memory_bytes;
  in.gpu_memory_utilization = util;
  in.max_model_len = max_model_len;
  in.max_num_seqs = 256;
  in.max_num_batched_tokens = 8192;
  return in;
}
const PlanSuggestion* Find(const std::vector<PlanSuggestion>& s, const std::string& lever) {
  for (const auto& x : s) {
    if (x.lever == lever) return &x;
  }
  return nullptr;
}

}  // namespace

TEST(StartupPlan, FitsAndReportsTheTerms) {
  StartupPlan p = EvaluatePlan(Llama(), H100(0.92, 8192));
  ASSERT_TRUE(p.fits);
  EXPECT_EQ(p.failure_phase, FailurePhase::kNone);
  EXPECT_EQ(p.requested_bytes, static_cast<int64_t>(std::ceil(85029158912.0 * 0.92)));
  EXPECT_EQ(p.available_kv_cache_bytes,
            p.requested_bytes - p.weights_bytes - p.activation_peak_bytes - p.non_torch_bytes - p.cudagraph_bytes);
  ASSERT_TRUE(p.kv_cache.has_value());
  EXPECT_EQ(p.kv_cache->num_blocks, p.available_kv_cache_bytes / p.ranks[0].kv_bytes_per_block);
  EXPECT_EQ(p.max_model_len_that_fits, 131072);  // the model's limit
  // vLLM's suggestion arithmetic: requested - non-KV - graphs - 150 MiB.
  EXPECT_EQ(KvCacheMemorySuggestionOf(p).to_requested_limit_bytes,
            p.available_kv_cache_bytes - kKvSuggestionBufferBytes);
  EXPECT_TRUE(SuggestPlanChanges(Llama(), p).empty());
  // vLLM's own KV line, which the report (python/vllm_mem/planner/render.py) prints as is.
  const std::vector<std::string> kv_log_lines = KvLogLines(p);  // formatted when read
  EXPECT_TRUE(std::any_of(kv_log_lines.begin(), kv_log_lines.end(),
                          [](const std::string& line) { return line.rfind("GPU KV cache size: ", 0) == 0; }));
}

TEST(StartupPlan, VllmLinesAreFormattedFromTheFiguresWhenRead) {
  const StartupPlan p = EvaluatePlan(Llama(), H100(0.92, 8192));
  ASSERT_TRUE(p.fits);
  // vLLM's gpu_worker suggestion: its --kv-cache-memory value is the figure the verdict used.
  const KvCacheMemorySuggestion s = KvCacheMemorySuggestionOf(p);
  EXPECT_EQ(s.line.rfind("Free memory on device (", 0), 0u);
  EXPECT_NE(s.line.find("`--kv-cache-memory=" + std::to_string(s.to_requested_limit_bytes) + "`"), std::string::npos);
  EXPECT_EQ(AvailableKvLine(p).rfind("Available KV cache memory: ", 0), 0u);
  EXPECT_EQ(CudagraphLine(p).rfind("CUDA graph memory profiling is enabled", 0), 0u);  // 0.92: in the budget
  // A plan never evaluated has no release and no figures: no line, and no crash.
  const StartupPlan empty;
  EXPECT_EQ(AvailableKvLine(empty), "");
  EXPECT_TRUE(KvLogLines(empty).empty());
  EXPECT_EQ(CudagraphLine(empty), "");
}

TEST(StartupPlan, KvCacheMemoryBytesPathSkipsTheProfile) {
  PlanInputs in = H100(0.92, 8192);
  in.kv_cache_memory_bytes = 20 * kGiB;
  StartupPlan p = EvaluatePlan(Llama(), in);
  EXPECT_TRUE(p.fits);
  EXPECT_EQ(p.available_kv_cache_bytes, 20 * kGiB);
}

TEST(StartupPlan, PhaseFreeMemory) {
  PlanInputs in = H100(0.9, 8192);
  in.free_memory_bytes = 40 * kGiB;
  StartupPlan p = EvaluatePlan(Llama(), in);
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.failure_phase, FailurePhase::kFreeMemory);
  EXPECT_EQ(p.failure_message.rfind("Free memory on device cuda:0 (40.0/79.19 GiB) on startup is less than", 0), 0u);
  EXPECT_EQ(p.shortfall_bytes, p.requested_bytes - 40 * kGiB);
  auto s = SuggestPlanChanges(Llama(), p);
  const PlanSuggestion* util = Find(s, "gpu_memory_utilization");
  ASSERT_NE(util, nullptr);
  EXPECT_EQ(util->direction, "decrease");
  EXPECT_EQ(util->value, "0.505");  // floor(40 GiB / 79.19 GiB, 3 decimals)
  EXPECT_TRUE(util->fits_after);
  EXPECT_EQ(util->bytes_freed, p.requested_bytes - static_cast<int64_t>(std::ceil(85029158912.0 * 0.505)));
  for (const auto& x : s) EXPECT_NE(x.direction, "increase") << x.lever;  // one direction only
}

TEST(StartupPlan, PhaseWeights) {
  // 0.85: with NCCL set up (TP 2) a T4 has about 13.2 of its 14.74 GiB free at start-up.
  PlanInputs in = H100(0.85, 8192);
  in.total_memory_bytes = LookupGpu("T4").total_memory_bytes;
  StartupPlan p = EvaluatePlan(Llama(), in);
  EXPECT_EQ(p.failure_phase, FailurePhase::kWeights);
  EXPECT_EQ(p.shortfall_bytes, p.weights_bytes - p.inputs.free_memory_bytes);
  auto s = SuggestPlanChanges(Llama(), p);
  const PlanSuggestion* tp = Find(s, "tensor_parallel_size");
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->direction, "increase");
  EXPECT_TRUE(tp->fits_after);
  EXPECT_EQ(tp->setting, "--tensor-parallel-size " + tp->value);
  const PlanSuggestion* q = Find(s, "quantization");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->setting, "--quantization fp8");
  EXPECT_GT(q->bytes_freed, 6 * kGiB);
}

TEST(StartupPlan, PhaseProfilePeak) {
  PlanInputs in = H100(0.92, 2048);
  in.total_memory_bytes = 33 * kGiB / 2;  // 15.99 GiB free: weights 14.99 load, the profile does not
  StartupPlan p = EvaluatePlan(Llama(), in);
  ASSERT_EQ(p.failure_phase, FailurePhase::kProfilePeak) << p.failure_message;
  EXPECT_LT(p.weights_bytes, p.inputs.free_memory_bytes);
  auto s = SuggestPlanChanges(Llama(), p);
  // The forward of 8192 tokens dominates this peak: fewer batched tokens is the lever.
  const PlanSuggestion* tokens = Find(s, "max_num_batched_tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->direction, "decrease");
  EXPECT_GT(tokens->bytes_freed, 0);
  in.max_num_batched_tokens = std::stoll(tokens->value);
  EXPECT_NE(EvaluatePlan(Llama(), in).failure_phase, FailurePhase::kProfilePeak);
  in.max_num_batched_tokens += 1;  // the largest value that clears the phase
  EXPECT_EQ(EvaluatePlan(Llama(), in).failure_phase, FailurePhase::kProfilePeak);
}

TEST(StartupPlan, PhaseNoKvBlocks) {
  StartupPlan p = EvaluatePlan(Llama(), H100(0.2, 8192));
  ASSERT_EQ(p.failure_phase, FailurePhase::kNoKvBlocks);
  EXPECT_LT(p.available_kv_cache_bytes, 0);
  EXPECT_EQ(p.failure_message.rfind("No available memory for the cache blocks.", 0), 0u);
  auto s = SuggestPlanChanges(Llama(), p);
  const PlanSuggestion* util = Find(s, "gpu_memory_utilization");
  ASSERT_NE(util, nullptr);
  EXPECT_EQ(util->direction, "increase");
  ASSERT_TRUE(util->fits_after);
  // Exact: the value works and one thousandth less does not.
  PlanInputs at = H100(std::stod(util->value), 8192);
  EXPECT_TRUE(EvaluatePlan(Llama(), at).fits);
  at.gpu_memory_utilization -= 0.001;
  EXPECT_FALSE(EvaluatePlan(Llama(), at).fits);
  for (const auto& x : s) EXPECT_NE(x.direction, "decrease") << x.lever << " in a budget shortfall";
}

TEST(StartupPlan, PhaseMaxModelLen) {
  StartupPlan p = EvaluatePlan(Llama(), H100(0.3, 131072));
  ASSERT_EQ(p.failure_phase, FailurePhase::kMaxModelLen);
  EXPECT_GT(p.max_model_len_that_fits, 0);
  EXPECT_LT(p.max_model_len_that_fits, 131072);
  auto s = SuggestPlanChanges(Llama(), p);
  const PlanSuggestion* len = Find(s, "max_model_len");
  ASSERT_NE(len, nullptr);
  EXPECT_EQ(len->value, std::to_string(p.max_model_len_that_fits));
  EXPECT_TRUE(len->fits_after);
  EXPECT_TRUE(EvaluatePlan(Llama(), H100(0.3, p.max_model_len_that_fits)).fits);
  EXPECT_FALSE(EvaluatePlan(Llama(), H100(0.3, p.max_model_len_that_fits + 16)).fits);
  const PlanSuggestion* fp8 = Find(s, "kv_cache_dtype");
  ASSERT_NE(fp8, nullptr);
  EXPECT_EQ(fp8->setting, "--kv-cache-dtype fp8");
  const PlanSuggestion* eager = Find(s, "enforce_eager");
  ASSERT_NE(eager, nullptr);
  EXPECT_FALSE(eager->fits_after);  // 0.8 GiB of graphs cannot cover a 9 GiB shortfall
  EXPECT_EQ(eager->bytes_freed, p.cudagraph_bytes);
  // Ranked: every lever that fits alone comes before any that does not.
  bool seen_not_fitting = false;
  for (const auto& x : s) {
    if (!x.fits_after) seen_not_fitting = true;
    EXPECT_FALSE(seen_not_fitting && x.fits_after) << x.lever;
  }
}

TEST(StartupPlan, FewerCaptureSizesWhenGraphsAreTheMargin) {
  const int64_t fits = EvaluatePlan(Llama(), H100(0.3, 131072)).max_model_len_that_fits;
  StartupPlan p = EvaluatePlan(Llama(), H100(0.3, fits + 1024));  // 128 MiB more KV than the budget holds
  ASSERT_EQ(p.failure_phase, FailurePhase::kMaxModelLen);
  auto s = SuggestPlanChanges(Llama(), p);
  const PlanSuggestion* cap = Find(s, "max_cudagraph_capture_size");
  ASSERT_NE(cap, nullptr);
  EXPECT_TRUE(cap->fits_after);
  EXPECT_EQ(cap->setting, "--compilation-config '{\"max_cudagraph_capture_size\": " + cap->value + "}'");
  PlanInputs in = H100(0.3, fits + 1024);
  in.max_cudagraph_capture_size = std::stoll(cap->value);
  EXPECT_TRUE(EvaluatePlan(Llama(), in).fits);
  const PlanSuggestion* eager = Find(s, "enforce_eager");
  ASSERT_NE(eager, nullptr);
  EXPECT_TRUE(eager->fits_after);
}

TEST(StartupPlan, PipelineTightestRankDecides) {
  PlanInputs in = H100(0.95, 8192);
  in.max_num_seqs = 1024;
  in.pipeline_parallel_size = 2;
  StartupPlan p = EvaluatePlan(Llama(), in);
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.tightest_pp_rank, 1);  // the last rank runs the sampler
  ASSERT_TRUE(p.kv_cache);
  EXPECT_EQ(p.kv_cache->num_blocks, std::min(p.ranks[0].num_blocks, p.ranks[1].num_blocks));
}

TEST(StartupPlan, BadInputNamesTheField) {
  auto field_of = [](const PlanInputs& in) -> std::string {
    try {
      EvaluatePlan(Llama(), in);
    } catch (const InvalidArgument& e) {
      return e.field();
    }
    return "";
  };
  EXPECT_EQ(field_of(H100(1.5, 8192)), "gpu_memory_utilization");
  EXPECT_EQ(field_of(H100(-0.1, 8192)), "gpu_memory_utilization");  // 0: the release's default
  EXPECT_EQ(field_of(H100(0.9, -5)), "max_model_len");
  PlanInputs in = H100(0.9, 8192);
  in.tensor_parallel_size = 3;  // 32 heads
  EXPECT_EQ(field_of(in), "tensor_parallel_size");
  in.tensor_parallel_size = 4;
  in.gpu_count = 2;
  EXPECT_EQ(field_of(in), "tensor_parallel_size");
  in = H100(0.9, 8192);
  in.max_num_seqs = -1;  // 0: the release's default
  EXPECT_EQ(field_of(in), "max_num_seqs");
  in = H100(0.9, 8192);
  in.kv_cache_memory_bytes = -1;
  EXPECT_EQ(field_of(in), "kv_cache_memory_bytes");
  in = H100(0.9, 8192);
  in.total_memory_bytes = 0;
  EXPECT_EQ(field_of(in), "total_memory_bytes");
}

// The 25 real start-ups (vLLM v0.19: graph estimate logged, not subtracted).
TEST(StartupPlan, CalibrationAvailableKvWithinThreePercent) {
  std::ifstream in(std::string(VLLM_MEM_SOURCE_DIR) + "/tests/data/vllm_startup_logs.calibration.jsonl");
  const JsonValue configs = ParseJson(testing::SourceFileText("tests/data/model_configs.calibration.json"));
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const JsonValue row = ParseJson(line);
    const ModelSpec spec = ModelSpec::FromHfConfig(*configs.Find(row.Find("model_config_ref")->AsString()));
    PlanInputs p = H100(row.Find("gpu_memory_utilization")->AsNumber().value,
                        row.Find("max_model_len")->AsNumber().integer.value());
    p.tensor_parallel_size = row.Find("tensor_parallel_size")->AsNumber().integer.value();
    p.pipeline_parallel_size = row.Find("pipeline_parallel_size")->AsNumber().integer.value();
    p.max_num_seqs = row.Find("max_num_seqs")->AsNumber().integer.value();
    p.max_num_batched_tokens = row.Find("max_num_batched_tokens")->AsNumber().integer.value();
    p.dtype = row.Find("dtype")->AsString();
    p.kv_cache_dtype = row.Find("kv_cache_dtype")->AsString();
    if (row.Find("quantization")->IsString()) p.quantization = row.Find("quantization")->AsString();
    p.vllm_version = row.Find("vllm_version")->AsString();  // 0.19.0: graphs not in the budget
    const StartupPlan plan = EvaluatePlan(spec, p);
    EXPECT_FALSE(plan.inputs.cudagraph_memory_in_budget.value());
    const JsonValue& obs = *row.Find("observed");
    // The suggestion line's worker: the rank whose weights match its weight figure.
    const double w = obs.Find("free_line_weights_gib")->AsNumber().value;
    const RankPlan* best = &plan.ranks[0];
    for (const auto& r : plan.ranks) {
      if (std::fabs(r.weights_bytes / double(kGiB) - w) < std::fabs(best->weights_bytes / double(kGiB) - w)) best = &r;
    }
    const double observed = obs.Find("free_line_kv_cache_in_use_gib")->AsNumber().value;
    const double predicted = best->available_kv_cache_bytes / double(kGiB);
    EXPECT_NEAR(predicted / observed, 1.0, 0.03) << row.Find("case_id")->AsString();
    ASSERT_TRUE(plan.kv_cache) << row.Find("case_id")->AsString();
    const double blocks = obs.Find("num_gpu_blocks")->AsNumber().value;
    EXPECT_NEAR(plan.kv_cache->num_blocks / blocks, 1.0, 0.03) << row.Find("case_id")->AsString();
    ++rows;
  }
  EXPECT_EQ(rows, 25);
}

}  // namespace vllm_mem
