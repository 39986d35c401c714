#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/stages/utilization_assignment.h"

namespace vllm_mem {
namespace {

constexpr int64_t kH100Bytes = 85029158912;

AssignmentOptions TwoH100s() {
  AssignmentOptions o;
  o.devices = {{0, "H100-80GB", kH100Bytes, -1}, {1, "H100-80GB", kH100Bytes, -1}};
  return o;
}

// The Qwen3-Omni layout with made-up needs: thinker TP 2, talker, code2wav.
std::vector<StageDemand> SeedDemands() {
  return {
      {0, 2, {0, 1}, 20 * kGiB, 10 * kGiB},
      {1, 1, {1}, 6 * kGiB, 4 * kGiB},
      {2, 1, {0}, 2 * kGiB, 1 * kGiB},
  };
}

const StageAssignment& ById(const UtilizationAssignment& a, int64_t id) {
  for (const auto& s : a.stages) {
    if (s.stage_id == id) return s;
  }
  throw std::runtime_error("no stage");
}

TEST(StageAssignment, EveryStageSatisfiedAndNoStepLeft) {
  AssignmentOptions o = TwoH100s();
  UtilizationAssignment a = AssignUtilizations(SeedDemands(), o);
  ASSERT_TRUE(a.feasible) << a.message;
  for (const auto& s : a.stages) {
    EXPECT_GE(s.utilization_ppm, s.min_utilization_ppm);
    EXPECT_GE(s.kv_bytes, s.kv_bytes_needed) << s.stage_id;
    EXPECT_EQ(s.utilization_ppm % o.step_ppm, 0);
  }
  // The sums respect the cap, and the search stopped only because no stage could take a step.
  for (const auto& d : a.devices) EXPECT_LE(d.utilization_ppm, o.max_device_utilization_ppm);
  for (const auto& s : a.stages) {
    bool could_grow = true;
    for (int64_t dev : s.devices) {
      could_grow = could_grow && a.devices[static_cast<size_t>(dev)].utilization_ppm + o.step_ppm <=
                                     o.max_device_utilization_ppm;
    }
    EXPECT_FALSE(could_grow) << "stage " << s.stage_id;
  }
  // Budgets and KV are vLLM's ceil(total * u).
  const StageAssignment& talker = ById(a, 1);
  EXPECT_EQ(talker.requested_bytes, RequestedMemoryBytes(kH100Bytes, talker.utilization_ppm / 1e6));
  EXPECT_EQ(talker.kv_bytes, talker.requested_bytes - 6 * kGiB);
  EXPECT_EQ(a.devices[1].utilization_text, FormatUtilizationPpm(a.devices[1].utilization_ppm));
}

TEST(StageAssignment, HeadroomIsSharedByNeed) {
  // Two equal stages on one GPU end up within one step of each other (0.95 = 0.48 + 0.47).
  AssignmentOptions o;
  o.devices = {{0, "", kH100Bytes, -1}};
  UtilizationAssignment a = AssignUtilizations({{0, 1, {0}, 10 * kGiB, 5 * kGiB}, {1, 1, {0}, 10 * kGiB, 5 * kGiB}}, o);
  ASSERT_TRUE(a.feasible);
  EXPECT_LE(std::abs(a.stages[0].utilization_ppm - a.stages[1].utilization_ppm), o.step_ppm);
  EXPECT_EQ(a.devices[0].utilization_ppm, o.max_device_utilization_ppm);
  // A stage needing twice the KV gets the larger share, but no stage's headroom ratio is
  // below the other's by more than one step can explain.
  a = AssignUtilizations({{0, 1, {0}, 10 * kGiB, 5 * kGiB}, {1, 1, {0}, 10 * kGiB, 10 * kGiB}}, o);
  ASSERT_TRUE(a.feasible);
  EXPECT_GT(a.stages[1].utilization_ppm, a.stages[0].utilization_ppm);
  const double step_bytes = static_cast<double>(kH100Bytes) * o.step_ppm / 1e6;
  EXPECT_NEAR(a.stages[0].kv_headroom, a.stages[1].kv_headroom, step_bytes / (5.0 * kGiB));
}

TEST(StageAssignment, NamesTheStageThatCannotBeSatisfied) {
  std::vector<StageDemand> demands = SeedDemands();
  demands[1].kv_bytes_needed = 40 * kGiB;  // talker now needs 46 GiB on GPU 1 next to the thinker
  UtilizationAssignment a = AssignUtilizations(demands, TwoH100s());
  ASSERT_FALSE(a.feasible);
  EXPECT_EQ(a.unsatisfied_stage_id, 1);
  EXPECT_EQ(a.unsatisfied_device, 1);
  EXPECT_GT(a.shortfall_bytes, 0);
  EXPECT_NE(a.message.find("stage 1 cannot be satisfied on GPU 1"), std::string::npos) << a.message;
  // Needing exactly the shortfall less makes it fit (at 1 ppm granularity at worst).
  demands[1].kv_bytes_needed -= a.shortfall_bytes;
  AssignmentOptions fine = TwoH100s();
  fine.step_ppm = 1;
  EXPECT_TRUE(AssignUtilizations(demands, fine).feasible);
}

TEST(StageAssignment, PlacesStagesWithoutDevices) {
  std::vector<StageDemand> demands = {
      {0, 1, {}, 30 * kGiB, 10 * kGiB},
      {1, 1, {}, 30 * kGiB, 10 * kGiB},
      {2, 1, {}, 5 * kGiB, 2 * kGiB},
  };
  UtilizationAssignment a = AssignUtilizations(demands, TwoH100s());
  ASSERT_TRUE(a.feasible) << a.message;
  // The two big stages cannot share a GPU with room to spare: they are spread.
  EXPECT_NE(ById(a, 0).devices, ById(a, 1).devices);
  for (const auto& s : a.stages) EXPECT_EQ(s.devices.size(), 1u);
  for (const auto& d : a.devices) EXPECT_LE(d.utilization_ppm, 950000);
}

TEST(StageAssignment, BadInput) {
  AssignmentOptions o = TwoH100s();
  EXPECT_THROW(AssignUtilizations({{0, 1, {0}, 1, 1}, {0, 1, {1}, 1, 1}}, o), InvalidArgument);
  EXPECT_THROW(AssignUtilizations({{0, 2, {0}, 1, 1}}, o), InvalidArgument);
  EXPECT_THROW(AssignUtilizations({{0, 1, {5}, 1, 1}}, o), InvalidArgument);
  EXPECT_THROW(AssignUtilizations({{0, 3, {}, 1, 1}}, o), InvalidArgument);
  EXPECT_THROW(AssignUtilizations({{0, 1, {0}, -1, 1}}, o), InvalidArgument);
  o.max_device_utilization_ppm = 1'100'000;
  EXPECT_THROW(AssignUtilizations({{0, 1, {0}, 1, 1}}, o), InvalidArgument);
  try {
    AssignUtilizations({{4, 1, {0, 1}, 1, 1}}, TwoH100s());
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "stage 4 devices");
  }
}

}  // namespace
}  // namespace vllm_mem
