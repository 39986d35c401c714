#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/stages/rank_layout.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/model/weights.h"
#include "bundled_config.h"

namespace vllm_mem {
namespace {

constexpr int64_t kH100Bytes = 85029158912;

ModelSpec Llama8B() { return testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json"); }

RankLayoutInputs Inputs(int64_t tp, int64_t pp) {
  RankLayoutInputs in;
  in.total_memory_bytes_per_worker = {kH100Bytes};
  in.gpu_memory_utilization = 0.9;
  in.weights.tensor_parallel_size = tp;
  in.weights.pipeline_parallel_size = pp;
  in.kv.max_model_len = 8192;
  in.overhead_bytes_per_pp_rank = {2 * kGiB};
  return in;
}

TEST(StageRankLayout, TensorRanksAreAlikeOnEqualGpus) {
  RankLayout l = ComputeRankLayout(Llama8B(), Inputs(2, 1));
  ASSERT_TRUE(l.fits) << l.failure_message;
  ASSERT_EQ(l.workers.size(), 2u);
  EXPECT_EQ(l.workers[0].num_blocks, l.workers[1].num_blocks);
  EXPECT_EQ(l.kv_cache.num_blocks, l.workers[0].num_blocks);
  EXPECT_TRUE(l.workers[1].holds_embedding && l.workers[1].holds_lm_head);
  // The budget is vLLM's ceil(total * util); the KV budget what weights and overheads leave.
  ModelSpec spec = Llama8B();
  WeightOptions wo;
  wo.tensor_parallel_size = 2;
  EXPECT_EQ(l.workers[0].available_kv_bytes,
            RequestedMemoryBytes(kH100Bytes, 0.9) - WeightBytes(spec, wo) - 2 * kGiB);
}

TEST(StageRankLayout, PipelineRanksAndTheTightestWorker) {
  RankLayoutInputs in = Inputs(2, 2);
  // The last PP rank also materialises the logits in the sampler: more overhead there.
  in.overhead_bytes_per_pp_rank = {2 * kGiB, 4 * kGiB};
  RankLayout l = ComputeRankLayout(Llama8B(), in);
  ASSERT_TRUE(l.fits) << l.failure_message;
  ASSERT_EQ(l.workers.size(), 4u);
  EXPECT_TRUE(l.workers[0].holds_embedding);
  EXPECT_FALSE(l.workers[0].holds_lm_head);
  EXPECT_TRUE(l.workers[3].holds_lm_head);
  EXPECT_EQ(l.workers[0].first_layer, 0);
  EXPECT_EQ(l.workers[2].end_layer, 32);
  EXPECT_EQ(l.workers[2].pp_rank, 1);
  EXPECT_EQ(l.workers[3].tp_rank, 1);
  const int64_t min_blocks = std::min_element(l.workers.begin(), l.workers.end(), [](auto& a, auto& b) {
                               return a.num_blocks < b.num_blocks;
                             })->num_blocks;
  EXPECT_EQ(l.kv_cache.num_blocks, min_blocks);
  EXPECT_EQ(l.workers[static_cast<size_t>(l.tightest_rank)].pp_rank, 1);
  EXPECT_NE(l.tightest_reason.find("LM head"), std::string::npos) << l.tightest_reason;
  EXPECT_GT(l.workers[0].extra_blocks, 0);
  EXPECT_EQ(l.workers[static_cast<size_t>(l.tightest_rank)].extra_blocks, 0);
}

TEST(StageRankLayout, OneSmallerGpuSizesTheWholeEngine) {
  RankLayoutInputs in = Inputs(4, 1);
  in.total_memory_bytes_per_worker = {kH100Bytes, kH100Bytes, kH100Bytes - 10 * kGiB, kH100Bytes};
  RankLayout l = ComputeRankLayout(Llama8B(), in);
  ASSERT_TRUE(l.fits) << l.failure_message;
  EXPECT_EQ(l.tightest_rank, 2);
  EXPECT_EQ(l.kv_cache.num_blocks, l.workers[2].num_blocks);
  EXPECT_LT(l.workers[2].num_blocks, l.workers[0].num_blocks);
  // Same answer as the KV sizing itself given the per-worker budgets.
  std::vector<int64_t> available;
  for (const auto& w : l.workers) available.push_back(w.available_kv_bytes);
  KvCacheOptions kv = in.kv;
  kv.tensor_parallel_size = 4;
  EXPECT_EQ(ComputeKvCacheCapacity(Llama8B(), available, kv).num_blocks, l.kv_cache.num_blocks);
}

TEST(StageRankLayout, StartupFailureAndBadInput) {
  RankLayoutInputs in = Inputs(2, 1);
  in.free_memory_bytes_per_worker = {kH100Bytes, 40 * kGiB};
  RankLayout l = ComputeRankLayout(Llama8B(), in);
  EXPECT_FALSE(l.fits);
  EXPECT_TRUE(l.workers[1].fails_startup);
  EXPECT_NE(l.failure_message.find("rank 1: Free memory on device cuda:1 (40.0/"), std::string::npos)
      << l.failure_message;
  in = Inputs(2, 1);
  in.total_memory_bytes_per_worker = {kH100Bytes, kH100Bytes, kH100Bytes};
  EXPECT_THROW(ComputeRankLayout(Llama8B(), in), InvalidArgument);
  in = Inputs(2, 1);
  in.gpu_memory_utilization = 1.5;
  EXPECT_THROW(ComputeRankLayout(Llama8B(), in), InvalidArgument);
}

TEST(StageRankLayout, NoRoomForKvIsAResult) {
  RankLayoutInputs in = Inputs(1, 1);
  in.gpu_memory_utilization = 0.1;  // 7.9 GiB: less than the 8B model's weights
  RankLayout l = ComputeRankLayout(Llama8B(), in);
  EXPECT_FALSE(l.fits);
  EXPECT_FALSE(l.failure_message.empty());
}

}  // namespace
}  // namespace vllm_mem
