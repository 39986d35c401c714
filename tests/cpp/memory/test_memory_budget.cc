// The worker's budget in vLLM's arithmetic (vllm_mem/memory/memory_budget.h): requested memory
// as ceil(total x utilization), and the largest utilization that still fits.
#include <cmath>

#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/memory/memory_budget.h"

namespace vllm_mem {

TEST(MemoryBudget, RequestedMemoryIsCeilOfTotalTimesUtilization) {
  // 79.19 GiB H100 at 0.95 prints "75.23 GiB" in the calibration logs.
  const int64_t h100 = 85029158912;  // 79.19 GiB as CUDA reports an H100 80GB HBM3
  EXPECT_EQ(FormatGib(RequestedMemoryBytes(h100, 0.95)), "75.23");
  EXPECT_EQ(RequestedMemoryBytes(10, 0.25), 3);  // ceil(2.5)
  EXPECT_EQ(RequestedMemoryBytes(kGiB, 1.0), kGiB);
  EXPECT_THROW(RequestedMemoryBytes(kGiB, 0.0), InvalidArgument);
  EXPECT_THROW(RequestedMemoryBytes(kGiB, 1.01), InvalidArgument);
  EXPECT_THROW(RequestedMemoryBytes(kGiB, std::nan("")), InvalidArgument);
  EXPECT_EQ(UtilizationToPpm(0.6) + UtilizationToPpm(0.3), 900000);
}

TEST(MemoryBudget, LargestUtilizationFittingIsExact) {
  const int64_t h100 = 85029158912;
  for (int64_t free : {int64_t{0}, kGiB, 40 * kGiB, h100 - 1, h100}) {
    for (int64_t step : {int64_t{1000}, int64_t{10000}}) {
      const int64_t u = LargestUtilizationFittingPpm(h100, free, step);
      EXPECT_EQ(u % step, 0);
      if (u > 0) {
        EXPECT_LE(RequestedMemoryBytes(h100, u / 1e6), free);
      }
      if (u + step <= 1'000'000) {
        EXPECT_GT(RequestedMemoryBytes(h100, (u + step) / 1e6), free) << free;
      }
    }
  }
  EXPECT_EQ(LargestUtilizationFittingPpm(h100, h100, 1000), 1'000'000);
  EXPECT_THROW(LargestUtilizationFittingPpm(h100, kGiB, 0), InvalidArgument);
}

}  // namespace vllm_mem
