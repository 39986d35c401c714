#include <gtest/gtest.h>

#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/stages/memory_imbalance.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

TEST(MemoryImbalance, BalancedRanksDoNotWarn) {
  MemoryImbalance m = CheckMemoryImbalance({70 * kGiB, 69 * kGiB, 70 * kGiB});
  EXPECT_FALSE(m.imbalanced);
  EXPECT_TRUE(m.message.empty());
  EXPECT_EQ(m.min_rank, 1);
  EXPECT_EQ(m.lost_bytes, kGiB);
}

TEST(MemoryImbalance, SglangRuleAtTheBoundary) {
  // min < local * 0.9 warns; equal does not.
  EXPECT_FALSE(CheckMemoryImbalance({90 * kGiB, 100 * kGiB}).imbalanced);
  MemoryImbalance m = CheckMemoryImbalance({90 * kGiB - 1, 100 * kGiB});
  EXPECT_TRUE(m.imbalanced);
  EXPECT_EQ(m.warning_ranks, (std::vector<int64_t>{1}));
}

TEST(MemoryImbalance, MessageHasPerRankFigures) {
  MemoryImbalance m = CheckMemoryImbalance({70 * kGiB, 40 * kGiB, 71 * kGiB, 70 * kGiB});
  ASSERT_TRUE(m.imbalanced);
  EXPECT_EQ(m.min_rank, 1);
  EXPECT_EQ(m.max_rank, 2);
  EXPECT_EQ(m.warning_ranks, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_NE(m.message.find("The memory capacity is unbalanced."), std::string::npos);
  EXPECT_NE(m.message.find("rank 1: 40.0 GiB"), std::string::npos) << m.message;
  EXPECT_NE(m.message.find("rank 2: 71.0 GiB"), std::string::npos) << m.message;
  EXPECT_NE(m.message.find("local_gpu_memory * 0.9=63.9 GiB"), std::string::npos) << m.message;
}

TEST(MemoryImbalance, ConfigurableRatio) {
  EXPECT_TRUE(CheckMemoryImbalance({95, 100}, 0.99).imbalanced);
  EXPECT_FALSE(CheckMemoryImbalance({95, 100}, 0.95).imbalanced);
}

TEST(MemoryImbalance, BadInput) {
  EXPECT_THROW(CheckMemoryImbalance({}), InvalidArgument);
  EXPECT_THROW(CheckMemoryImbalance({1, -1}), InvalidArgument);
  EXPECT_THROW(CheckMemoryImbalance({1, 2}, 0.0), InvalidArgument);
  EXPECT_THROW(CheckMemoryImbalance({1, 2}, 1.5), InvalidArgument);
}

}  // namespace
}  // namespace vllm_mem
