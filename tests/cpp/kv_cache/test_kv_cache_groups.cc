// vLLM's get_kv_cache_groups / get_kv_cache_config_from_groups / max concurrency, ported from
// tests/v1/core/test_kv_cache_utils.py (layer "i" of the vLLM tests is index i-1 here).
#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/kv_cache_groups.h"

namespace vllm_mem {
namespace {

constexpr int64_t kMem = 16 * 2 * 64 * 4 * 2;  // vLLM's mem_per_block_per_layer = 16384

AttentionPageLayout Layout(int64_t head = 64, int64_t heads = 2) {
  AttentionPageLayout l;
  l.block_size_tokens = 16;
  l.num_kv_heads = heads;
  l.head_size = head;
  l.head_size_v = head;
  l.dtype = ResolveKvCacheDType("float32", DType::kFloat32);
  return l;
}
KvCacheSpec Full(int64_t head = 64, int64_t heads = 2) { return FullAttentionKvSpec{Layout(head, heads)}; }
KvCacheSpec Sw(int64_t window = 1, int64_t head = 64) { return SlidingWindowKvSpec{Layout(head), window}; }

std::vector<LayerKvSpec> Layers(std::initializer_list<KvCacheSpec> specs) {
  std::vector<LayerKvSpec> out;
  int64_t i = 0;
  for (const auto& s : specs) out.push_back({i++, s});
  return out;
}

KvCacheWorkerConfig OneWorker(const std::vector<LayerKvSpec>& layers, int64_t available, bool disable_hybrid = false,
                              int64_t override_blocks = 0) {
  return GetKvCacheConfigFromGroups(GetKvCacheGroups(layers, disable_hybrid).groups, available, override_blocks);
}

KvRequestShape Shape(int64_t max_model_len, int64_t max_num_batched_tokens = 8192) {
  KvRequestShape s;
  s.max_model_len = max_model_len;
  s.max_num_batched_tokens = max_num_batched_tokens;
  return s;
}

TEST(KvCacheGroups, OneWorkerUniform) {
  auto cfg = OneWorker(Layers({Full(), Full()}), kMem * 2 * 32);
  EXPECT_EQ(cfg.num_blocks, 32);
  EXPECT_EQ(cfg.tensor_bytes, (std::vector<int64_t>{kMem * 32, kMem * 32}));
  EXPECT_EQ(OneWorker(Layers({Sw(), Sw()}), kMem * 2 * 32).num_blocks, 32);
}

TEST(KvCacheGroups, HybridManagerDisabledConvertsToFullAttention) {
  auto grouping = GetKvCacheGroups(Layers({Full(), Sw(1)}), true);
  ASSERT_EQ(grouping.groups.size(), 1u);
  EXPECT_TRUE(grouping.converted_to_full_attention);
  EXPECT_EQ(std::get<FullAttentionKvSpec>(grouping.groups[0].spec).layout, Layout());
  EXPECT_EQ(OneWorker(Layers({Full(), Sw(1)}), kMem * 2 * 32, true).num_blocks, 32);
}

TEST(KvCacheGroups, HybridOneFullOneSliding) {
  auto grouping = GetKvCacheGroups(Layers({Full(), Sw(1)}), false);
  EXPECT_EQ(grouping.groups.size(), 2u);
  auto cfg = GetKvCacheConfigFromGroups(grouping.groups, kMem * 2 * 32);
  EXPECT_EQ(cfg.num_blocks, 64);
  EXPECT_EQ(cfg.tensor_bytes, (std::vector<int64_t>{kMem * 64}));
}

TEST(KvCacheGroups, TwoFullFourSliding) {
  auto grouping = GetKvCacheGroups(Layers({Full(), Full(), Sw(), Sw(), Sw(), Sw()}), false);
  EXPECT_EQ(grouping.groups.size(), 3u);
  auto cfg = GetKvCacheConfigFromGroups(grouping.groups, kMem * 2 * 32);
  EXPECT_EQ(cfg.num_blocks, 32);
  EXPECT_EQ(cfg.tensor_shared_by, (std::vector<std::vector<int64_t>>{{0, 2, 3}, {1, 4, 5}}));
}

TEST(KvCacheGroups, PaddingLayersThreeFullSevenSliding) {
  auto grouping = GetKvCacheGroups(
      Layers({Full(), Full(), Full(), Sw(), Sw(), Sw(), Sw(), Sw(), Sw(), Sw()}), false);
  EXPECT_EQ(grouping.groups.size(), 4u);
  EXPECT_EQ(grouping.num_padding_layers, 2);  // 7 sliding padded to 9
  auto cfg = GetKvCacheConfigFromGroups(grouping.groups, kMem * 3 * 32);
  EXPECT_EQ(cfg.num_blocks, 32);
  EXPECT_EQ(cfg.tensor_shared_by,
            (std::vector<std::vector<int64_t>>{{0, 3, 4, 5}, {1, 6, 7, 8}, {2, 9}}));
}

TEST(KvCacheGroups, NoSplitWhenMaxBelowOneAndAHalfMin) {
  auto grouping = GetKvCacheGroups(
      Layers({Full(), Full(), Full(), Full(), Full(), Full(), Sw(), Sw(), Sw(), Sw(), Sw()}), false);
  EXPECT_EQ(grouping.groups.size(), 2u);
  auto cfg = GetKvCacheConfigFromGroups(grouping.groups, kMem * 6 * 32);
  EXPECT_EQ(cfg.num_blocks, 32);
  EXPECT_EQ(cfg.tensor_bytes.size(), 6u);
}

TEST(KvCacheGroups, UniformTypeDifferentHeadSizes) {
  auto grouping = GetKvCacheGroups(Layers({Full(128), Full(64)}), false);
  ASSERT_EQ(grouping.groups.size(), 1u);
  EXPECT_TRUE(grouping.groups[0].uniform_type);
  auto cfg = GetKvCacheConfigFromGroups(grouping.groups, kMem * 3 * 32);
  EXPECT_EQ(cfg.num_blocks, 32);
  EXPECT_EQ(cfg.tensor_bytes, (std::vector<int64_t>{kMem * 32 * 2, kMem * 32}));
}

TEST(KvCacheGroups, PageUnificationScalesBlockSize) {
  auto grouping = GetKvCacheGroups(Layers({Full(64), Sw(1, 32)}), false);
  ASSERT_EQ(grouping.groups.size(), 2u);
  EXPECT_EQ(BlockSizeTokens(grouping.groups[1].spec), 32);
  auto cfg = GetKvCacheConfigFromGroups(grouping.groups, kMem * 32);
  EXPECT_EQ(cfg.num_blocks, 32);
  EXPECT_EQ(cfg.tensor_bytes.size(), 1u);
}

TEST(KvCacheGroups, NonDivisiblePageIsNotImplemented) {
  EXPECT_THROW(GetKvCacheGroups(Layers({Full(64), Sw(1, 96)}), false), Unsupported);
}

TEST(KvCacheGroups, NumGpuBlocksOverride) {
  auto cfg = OneWorker(Layers({Full(), Full()}), kMem * 2 * 32, false, 16);
  EXPECT_EQ(cfg.num_blocks, 16);
  EXPECT_EQ(cfg.tensor_bytes, (std::vector<int64_t>{kMem * 16, kMem * 16}));
}

TEST(KvCacheGroups, AttentionFreeNeedsOneNullBlock) {
  auto grouping = GetKvCacheGroups({}, false);
  EXPECT_TRUE(grouping.groups.empty());
  auto cfg = GetKvCacheConfigFromGroups(grouping.groups, 0);
  EXPECT_EQ(cfg.num_blocks, 1);
  EXPECT_TRUE(cfg.tensor_bytes.empty());
}

TEST(KvCacheGroups, UnifyHybridSpecsNeedsAFullLayer) {
  // Sliding + chunked-local with no full-attention layer cannot become one type.
  std::vector<LayerKvSpec> layers = Layers({Sw(1024), ChunkedLocalKvSpec{Layout(), 512}});
  EXPECT_THROW(GetKvCacheGroups(layers, true), InvalidArgument);
}

TEST(KvCacheGroups, ProjectionToPipelineWorkers) {
  // Hybrid across PP: full on worker 0, sliding on worker 1 -> two groups, one empty per worker.
  auto grouping = GetKvCacheGroups(Layers({Full(), Sw()}), false);
  auto w0 = ProjectKvCacheGroupsToWorker(grouping.groups, 0, 1);
  auto w1 = ProjectKvCacheGroupsToWorker(grouping.groups, 1, 2);
  ASSERT_EQ(w0.size(), 2u);
  EXPECT_TRUE(w0[1].layer_indices.empty());
  EXPECT_TRUE(w1[0].layer_indices.empty());
  EXPECT_EQ(GetKvCacheConfigFromGroups(w0, kMem * 10).num_blocks, 10);
  EXPECT_EQ(GetKvCacheConfigFromGroups(w1, kMem * 10).num_blocks, 10);
  // UniformType projection keeps the worker's layers and their own specs.
  auto uniform = GetKvCacheGroups(Layers({Full(128), Full(64), Full(128), Full(64)}), false);
  auto p = ProjectKvCacheGroupsToWorker(uniform.groups, 1, 4);
  EXPECT_EQ(p[0].layer_indices, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(p[0].layer_specs.size(), 3u);
}

TEST(KvCacheGroups, MambaPagesArePaddedAndAttentionBlocksScaled) {
  MambaKvSpec mamba;
  mamba.state_bytes = 16384;
  KvCacheSpec draft = Full(64, 4);  // 32768-byte pages
  auto grouping = GetKvCacheGroups(Layers({mamba, Full(), draft}), false);
  for (const auto& g : grouping.groups) EXPECT_EQ(PageSizeBytes(g.spec), 32768);
  EXPECT_EQ(BlockSizeTokens(grouping.groups[0].spec), 16);  // Mamba padded, block unchanged
  EXPECT_EQ(BlockSizeTokens(grouping.groups[1].spec), 32);  // attention block doubled
  // (6144,) fp32 = 24576 does not divide 32768: padded anyway.
  MambaKvSpec odd;
  odd.state_bytes = 6144 * 4;
  auto g2 = GetKvCacheGroups(Layers({odd, draft}), false);
  EXPECT_EQ(PageSizeBytes(g2.groups[0].spec), 32768);
}

TEST(KvCacheGroups, MaxConcurrency) {
  // vLLM: Qwen1.5-7B-like, max_model_len 16384, max_num_batched_tokens 1024.
  const KvRequestShape shape = Shape(16384, 1024);
  auto full = GetKvCacheGroups(Layers({Full()}), false).groups;
  EXPECT_DOUBLE_EQ(MaxConcurrency(1536, full, shape), 1.5);
  auto sw = GetKvCacheGroups(Layers({Sw(1024)}), false).groups;
  EXPECT_DOUBLE_EQ(MaxConcurrency(129 * 3, sw, shape), 3.0);
  auto hybrid = GetKvCacheGroups(Layers({Full(), Sw(1024)}), false).groups;
  EXPECT_DOUBLE_EQ(MaxConcurrency((1024 + 129) * 3, hybrid, shape), 3.0);
  EXPECT_EQ(KvCacheNumTokens(MaxConcurrency((1024 + 129) * 3, hybrid, shape), 16384), 3 * 16384);
}

TEST(KvCacheGroups, TokensAreConcurrencyTimesLengthNotBlocksTimesBlockSize) {
  auto full = GetKvCacheGroups(Layers({Full()}), false).groups;
  // max_model_len 1000, block 16: 63 blocks per request.
  const double c = MaxConcurrency(1000, full, Shape(1000));
  EXPECT_EQ(KvCacheNumTokens(c, 1000), static_cast<int64_t>(1000.0 / 63.0 * 1000.0));
  EXPECT_NE(KvCacheNumTokens(c, 1000), 1000 * 16);
}

TEST(KvCacheGroups, AutoFitWithMambaHybrid) {
  // vLLM's test_auto_fit_max_model_len_with_hybrid: Mamba (2 speculative blocks, mode none) +
  // full attention with mem * (1024 // 16 + 1 + 2) bytes fits exactly 1024 tokens.
  MambaKvSpec mamba;
  mamba.state_bytes = 16384;
  mamba.num_speculative_blocks = 2;
  auto groups = GetKvCacheGroups(Layers({mamba, Full()}), false).groups;
  const int64_t available = kMem * (1024 / 16 + 1 + 2);
  EXPECT_LE(MaxMemoryUsageBytesFromGroups(groups, Shape(1024)), available);
  EXPECT_GT(MaxMemoryUsageBytesFromGroups(groups, Shape(1025)), available);
}

}  // namespace
}  // namespace vllm_mem
