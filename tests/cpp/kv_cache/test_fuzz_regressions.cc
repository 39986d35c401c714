// Regression tests of the kv_cache area for the defect classes the libFuzzer harnesses of tests/fuzz
// found (and the earlier external fuzzing pass of issue 9 reported), and for the inputs vLLM
// refuses that the core used to size anyway (issue 10). docs/fuzzing.md lists each finding and
// its fix. Every test below failed (undefined behaviour under UBSan, a wrong number, or
// unbounded work) on the code before the fix.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "fuzz_regression.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_groups.h"
#include "vllm_mem/model/model_spec.h"

// In vllm_mem::testing, beside the shared helpers (fuzz_regression.h).
namespace vllm_mem::testing {
namespace {

TEST(FuzzRegression, TokenCountOverflowIsAnErrorNotANegativeNumber) {
  EXPECT_EQ(KvCacheNumTokens(2.5, 8192), 20480);
  ExpectClearMessage(InvalidArgumentOf([] { KvCacheNumTokens(1e18, 1 << 30); }), "num_tokens");
  ExpectClearMessage(InvalidArgumentOf([] { KvCacheNumTokens(std::nan(""), 16); }), "num_tokens");
  // End to end: a sliding-window model needs 2 blocks per request whatever max_model_len is, so
  // 2^62 bytes give ~2^55 concurrent requests of 2^30 tokens: 2^85 tokens, which printed as a
  // negative count in a normal build.
  const ModelSpec spec = ModelSpec::FromHfConfigText(
      R"({"model_type": "mistral", "num_hidden_layers": 1, "hidden_size": 8, "intermediate_size": 8,
          "vocab_size": 10, "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 1,
          "sliding_window": 16, "torch_dtype": "bfloat16"})");
  KvCacheOptions o;
  o.max_model_len = kMaxModelLenTokens;
  ExpectClearMessage(InvalidArgumentOf([&] { ComputeKvCacheCapacity(spec, {int64_t{1} << 62}, o); }), "num_tokens");
  o.max_model_len = 4096;
  const KvCacheCapacity small = ComputeKvCacheCapacity(spec, {int64_t{1} << 30}, o);
  EXPECT_GT(small.num_tokens, 0);
}

TEST(FuzzRegression, TensorParallelSizeIsBoundedBeforeAnyWorkerIsBuilt) {
  // TP 2^20 built a million workers (17 s, 6.7 GB); now refused before any of them.
  const ModelSpec spec = ModelSpec::FromHfConfigText(Config("", 8, 8));
  KvCacheOptions o;
  o.max_model_len = 1024;
  o.tensor_parallel_size = int64_t{1} << 20;
  ExpectClearMessage(InvalidArgumentOf([&] { ComputeKvCacheCapacity(spec, {kGiB}, o); }), "tensor_parallel_size");
  o.tensor_parallel_size = 1;
  o.pipeline_parallel_size = kInt64Max;
  ExpectClearMessage(InvalidArgumentOf([&] { ComputeKvCacheCapacity(spec, {kGiB}, o); }), "pipeline_parallel_size");
}

TEST(FuzzRegression, IdenticalWorkersAreSizedOnceWithTheSameAnswer) {
  // The KV sizing keeps one entry per distinct (pipeline rank, budget); the per-worker block
  // counts and the minimum are what one computation per worker gave.
  const ModelSpec spec = ModelSpec::FromHfConfigText(Config("", 64, 64));
  KvCacheOptions o;
  o.max_model_len = 1024;
  o.tensor_parallel_size = 64;
  o.pipeline_parallel_size = 2;
  const KvCacheCapacity same = ComputeKvCacheCapacity(spec, {kGiB}, o);
  ASSERT_EQ(same.num_blocks_per_worker.size(), 128u);
  for (int64_t blocks : same.num_blocks_per_worker) EXPECT_EQ(blocks, same.num_blocks_per_worker.front());

  std::vector<int64_t> budgets(128, kGiB);
  budgets[77] = kGiB / 2;  // one worker of pipeline rank 1 has half the budget
  const KvCacheCapacity uneven = ComputeKvCacheCapacity(spec, budgets, o);
  ASSERT_EQ(uneven.num_blocks_per_worker.size(), 128u);
  EXPECT_EQ(uneven.num_blocks, uneven.num_blocks_per_worker[77]);
  EXPECT_LT(uneven.num_blocks_per_worker[77], uneven.num_blocks_per_worker[76]);
  EXPECT_EQ(uneven.num_blocks_per_worker[0], same.num_blocks_per_worker[0]);
  EXPECT_EQ(EstimateMaxModelLen(spec, budgets, o), EstimateMaxModelLen(spec, {kGiB / 2}, o));
}

}  // namespace
}  // namespace vllm_mem::testing
