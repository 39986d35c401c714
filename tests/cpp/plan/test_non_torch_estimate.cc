#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/plan/non_torch_estimate.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {

namespace {
double Gib(int64_t b) { return static_cast<double>(b) / static_cast<double>(kGiB); }
}  // namespace

TEST(NonTorchEstimate, MatchesThePrintedFiguresOfEachLayout) {
  // vLLM v0.19 on H100 printed 0.24-0.25 (one GPU), 2.06-2.07 (TP 2), 2.13 (TP 4), 0.07 (PP).
  EXPECT_NEAR(Gib(EstimateNonTorchIncrease(1, 1).total_bytes), 0.245, 0.006);
  EXPECT_NEAR(Gib(EstimateNonTorchIncrease(2, 1).total_bytes), 2.07, 0.011);
  EXPECT_NEAR(Gib(EstimateNonTorchIncrease(4, 1).total_bytes), 2.13, 0.006);
  EXPECT_NEAR(Gib(EstimateNonTorchIncrease(1, 2).total_bytes), 0.07, 0.006);
  EXPECT_EQ(EstimateNonTorchIncrease(1, 4).total_bytes, EstimateNonTorchIncrease(1, 2).total_bytes);
}

TEST(NonTorchEstimate, NcclOnlyUnderTensorParallelism) {
  EXPECT_EQ(EstimateNonTorchIncrease(1, 1).nccl_bytes, 0);
  EXPECT_EQ(EstimateNonTorchIncrease(1, 8).nccl_bytes, 0);
  NonTorchBreakdown tp8 = EstimateNonTorchIncrease(8, 1);
  EXPECT_GT(tp8.nccl_bytes, EstimateNonTorchIncrease(2, 1).nccl_bytes);
  EXPECT_EQ(tp8.total_bytes, tp8.nccl_bytes + tp8.cuda_runtime_bytes);
  NonTorchConstants c;
  c.tensor_parallel_nccl_bytes = 0;
  c.per_tensor_parallel_peer_bytes = 0;
  EXPECT_EQ(EstimateNonTorchIncrease(8, 1, c).nccl_bytes, 0);  // e.g. a PCIe box without NVLS
}

TEST(NonTorchEstimate, BadSizes) {
  EXPECT_THROW(EstimateNonTorchIncrease(0, 1), InvalidArgument);
  EXPECT_THROW(EstimateNonTorchIncrease(1, 0), InvalidArgument);
}

}  // namespace vllm_mem
