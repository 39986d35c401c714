#include <gtest/gtest.h>

#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/stages/stage_check.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

constexpr int64_t kH100Bytes = 85029158912;  // torch's total_memory of an H100-80GB

std::string SeedLayout(const char* stage1_util) {
  return std::string(R"({"stage_args": [
    {"stage_id": 0, "runtime": {"devices": "0,1"},
     "engine_args": {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.6}},
    {"stage_id": 1, "runtime": {"devices": "1"}, "engine_args": {"gpu_memory_utilization": )") +
         stage1_util + R"(}},
    {"stage_id": 2, "runtime": {"devices": "0"}, "engine_args": {"gpu_memory_utilization": 0.1}}]})";
}

StageCheckOptions H100s() {
  StageCheckOptions o;
  o.default_device.name = "H100-80GB";
  o.default_device.total_bytes = kH100Bytes;
  return o;
}

bool Contains(const std::vector<std::string>& lines, const std::string& want) {
  for (const auto& l : lines) {
    if (l.find(want) != std::string::npos) return true;
  }
  return false;
}

TEST(StageCheck, SeedExampleFitsWithExactSums) {
  StageCheckResult r = CheckStages(ParseStageConfigText(SeedLayout("0.3")), H100s());
  EXPECT_TRUE(r.ok) << (r.problems.empty() ? "" : r.problems.front());
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].utilization_text, "0.7");
  EXPECT_EQ(r.devices[1].utilization_text, "0.9");
  EXPECT_EQ(r.devices[1].utilization_expression, "0.6 (stage 0) + 0.3 (stage 1) = 0.9");
  EXPECT_EQ(r.devices[1].utilization_ppm, 900000);
  EXPECT_EQ(r.devices[1].headroom_ppm, 100000);
  const int64_t want = RequestedMemoryBytes(kH100Bytes, 0.6) + RequestedMemoryBytes(kH100Bytes, 0.3);
  EXPECT_EQ(r.devices[1].requested_bytes, want);
  EXPECT_EQ(r.devices[1].headroom_bytes, kH100Bytes - want);
  EXPECT_EQ(r.devices[0].stages[1].stage_id, 2);
  EXPECT_EQ(r.devices[1].stages[0].local_index, 1);  // stage 0's second worker is its cuda:1
  EXPECT_EQ(r.startup.size(), 4u);
  for (const auto& p : r.startup) EXPECT_FALSE(p.fails);
  EXPECT_TRUE(r.problems.empty());
  EXPECT_TRUE(Contains(r.notes, "GPU 0 carries only 0.7"));
}

TEST(StageCheck, OverCommitHasTheExactReasonAndConcreteFixes) {
  StageCheckResult r = CheckStages(ParseStageConfigText(SeedLayout("0.5")), H100s());
  EXPECT_FALSE(r.ok);
  const DeviceCheck& gpu1 = r.devices[1];
  EXPECT_TRUE(gpu1.over_committed);
  EXPECT_FALSE(r.devices[0].over_committed);
  const int64_t requested = RequestedMemoryBytes(kH100Bytes, 0.6) + RequestedMemoryBytes(kH100Bytes, 0.5);
  EXPECT_EQ(gpu1.reason, "GPU 1 is over-committed: the gpu_memory_utilization of its resident stages sums to "
                         "0.6 (stage 0) + 0.5 (stage 1) = 1.1 > 1.0; they request " +
                             FormatGib(requested) + " GiB of its " + FormatGib(kH100Bytes) + " GiB (" +
                             FormatGib(requested - kH100Bytes) + " GiB too much)");
  EXPECT_TRUE(Contains(r.problems, gpu1.reason));
  // Stage 1 starts after stage 0 on GPU 1 and finds too little free.
  bool stage1_fails = false;
  for (const auto& p : r.startup) {
    if (p.stage_id == 1) {
      stage1_fails = p.fails;
      EXPECT_NE(p.message.find("Free memory on device cuda:0 ("), std::string::npos);
      EXPECT_NE(p.message.find("is less than desired GPU memory utilization (0.5, "), std::string::npos);
    }
  }
  EXPECT_TRUE(stage1_fails);
  EXPECT_TRUE(Contains(r.suggestions, "lower stage 1's engine_args.gpu_memory_utilization from 0.5 to 0.4 to fit "
                                      "GPU 1's " + FormatGib(kH100Bytes) + " GiB"));
  // Stage 0 spans GPU 0 (carrying 0.7) too, so it may only drop to 0.5.
  EXPECT_TRUE(Contains(r.suggestions, "lower stage 0's engine_args.gpu_memory_utilization from 0.6 to 0.5"));
  EXPECT_FALSE(r.oom_advice.empty());
}

TEST(StageCheck, MoveSuggestionNeedsAnotherDevice) {
  StageCheckOptions o = H100s();
  o.devices.push_back({2, "H100-80GB", kH100Bytes, -1});  // an idle third GPU
  StageCheckResult r = CheckStages(ParseStageConfigText(SeedLayout("0.5")), o);
  EXPECT_TRUE(Contains(r.suggestions, "move stage 1 to GPU 2 (devices: \"2\"); GPU 2 would carry 0.5"));
  EXPECT_TRUE(Contains(r.suggestions, "move stage 0's worker on GPU 1 to GPU 2 (devices: \"0,2\")"));
}

TEST(StageCheck, LiveFreeMemoryPredictsTheStartupError) {
  StageCheckOptions o = H100s();
  o.free_is_live = true;
  o.devices.push_back({0, "H100-80GB", kH100Bytes, kH100Bytes});
  o.devices.push_back({1, "H100-80GB", kH100Bytes, kH100Bytes - 12 * kGiB});  // another process
  StageCheckResult r = CheckStages(ParseStageConfigText(SeedLayout("0.3")), o);
  EXPECT_FALSE(r.ok);
  const int64_t free_at_stage1 = kH100Bytes - 12 * kGiB - RequestedMemoryBytes(kH100Bytes, 0.6);
  const StartupPrediction* failed = nullptr;
  for (const auto& p : r.startup) {
    if (p.fails) failed = &p;
  }
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->stage_id, 1);
  EXPECT_EQ(failed->free_bytes, free_at_stage1);
  EXPECT_EQ(failed->message, "Free memory on device cuda:0 (" + FormatGib(free_at_stage1) + "/" +
                                 FormatGib(kH100Bytes) +
                                 " GiB) on startup is less than desired GPU memory utilization (0.3, " +
                                 FormatGib(RequestedMemoryBytes(kH100Bytes, 0.3)) +
                                 " GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
                                 "processes.");
  EXPECT_TRUE(Contains(r.suggestions, "other processes hold 12.0 GiB"));
  // The suggested value really fits the free memory, and the next step up does not.
  std::string lowered;
  for (const auto& s : r.suggestions) {
    if (s.rfind("lower stage 1's", 0) == 0) lowered = s;
  }
  ASSERT_FALSE(lowered.empty());
  const size_t at = lowered.find(" to ") + 4;
  const double suggested = std::stod(lowered.substr(at, lowered.find(' ', at) - at));
  EXPECT_LE(RequestedMemoryBytes(kH100Bytes, suggested), free_at_stage1);
  EXPECT_GT(RequestedMemoryBytes(kH100Bytes, suggested + 0.01), free_at_stage1);
  EXPECT_TRUE(Contains(r.suggestions, "use a GPU with at least"));
}

TEST(StageCheck, OfflineReserveLowersAssumedFree) {
  StageCheckOptions o = H100s();
  o.reserve_bytes = 9 * kGiB;
  StageCheckResult r = CheckStages(ParseStageConfigText(SeedLayout("0.3")), o);
  // 0.9 of 79.19 GiB plus a 9 GiB reserve does not fit GPU 1: stage 1 fails at start-up.
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.devices[1].free_bytes, kH100Bytes - 9 * kGiB);
}

TEST(StageCheck, AdmissionCountsGraphReserves) {
  StageConfigSet set = ParseStageConfigText(R"({"stages": [
    {"stage_id": 0, "devices": "0", "gpu_memory_utilization": 0.5, "enforce_eager": false},
    {"stage_id": 1, "devices": "0", "gpu_memory_utilization": 0.47, "enforce_eager": false}]})");
  StageCheckResult r = CheckStages(set, H100s());
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.devices[0].admission_ok);
  EXPECT_EQ(r.devices[0].admission_required_bytes,
            static_cast<int64_t>(kH100Bytes * 0.5) + static_cast<int64_t>(kH100Bytes * 0.47) + 6 * kGiB);
  EXPECT_TRUE(Contains(r.notes, "parallel_stage_init admission"));
}

TEST(StageCheck, UnknownDeviceIsBadInput) {
  StageCheckOptions o;
  o.devices.push_back({0, "H100-80GB", kH100Bytes, -1});
  try {
    CheckStages(ParseStageConfigText(SeedLayout("0.3")), o);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "gpus");
    EXPECT_NE(std::string(e.what()).find("GPU 1"), std::string::npos);
  }
}

}  // namespace
}  // namespace vllm_mem

namespace vllm_mem {
namespace {

TEST(StageCheck, CatalogGpuByName) {
  StageCheckOptions o;
  o.default_device.name = "h100 80gb";
  StageCheckResult r = CheckStages(ParseStageConfigText(SeedLayout("0.3")), o);
  EXPECT_EQ(r.devices[0].name, "H100-80GB");
  EXPECT_EQ(r.devices[0].total_bytes, LookupGpu("H100-80GB").total_memory_bytes);
  o.default_device.name = "no-such-gpu";
  EXPECT_THROW(CheckStages(ParseStageConfigText(SeedLayout("0.3")), o), InvalidArgument);
}

}  // namespace
TEST(StageCheck, OomAdviceNeverProposesANoOpChange) {
  StageCheckResult r = CheckStages(ParseStageConfigText(R"({"stage_args": [
      {"stage_id": 0, "runtime": {"devices": "0", "max_batch_size": 1},
       "engine_args": {"gpu_memory_utilization": 0.5, "max_num_batched_tokens": 8192}},
      {"stage_id": 1, "runtime": {"devices": "1", "max_batch_size": 8},
       "engine_args": {"gpu_memory_utilization": 0.5, "max_num_batched_tokens": 8192}}]})"),
                                   H100s());
  ASSERT_EQ(r.oom_advice.size(), 2u);
  EXPECT_EQ(r.oom_advice[0].find("max_batch_size"), std::string::npos) << r.oom_advice[0];
  EXPECT_NE(r.oom_advice[1].find("reduce runtime.max_batch_size (now 8, try 4)"), std::string::npos)
      << r.oom_advice[1];
  for (const auto& line : r.oom_advice) {
    EXPECT_NE(line.find("reduce max_num_batched_tokens (now 8192, try 4096)"), std::string::npos) << line;
  }
}

}  // namespace vllm_mem
