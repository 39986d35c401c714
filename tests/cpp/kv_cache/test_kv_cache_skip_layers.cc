// --kv-cache-dtype-skip-layers (vLLM PR #33695): which layers keep the model dtype
// (Attention.__init__ in vllm/model_executor/layers/attention/attention.py) and the groups their
// larger pages make (vllm/v1/core/kv_cache_utils.py get_kv_cache_groups,
// unify_kv_cache_spec_page_size). Pages: 2 x block x heads x head_size x dtype bytes
// (kv_cache_interface.py AttentionSpec.real_page_size_bytes).
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_skip_layers.h"
#include "vllm_mem/kv_cache/kv_cache_spec.h"

namespace vllm_mem {
namespace {

/*! 4 layers, 2 KV heads of 64, bfloat16; layers 0 and 2 slide over 8 tokens when \p sliding. */
ModelSpec Model(bool sliding) {
  const std::string layer_types = sliding ? ", \"sliding_window\": 8, \"layer_types\": [\"sliding_attention\", "
                                            "\"full_attention\", \"sliding_attention\", \"full_attention\"]"
                                          : "";
  return ModelSpec::FromHfConfigText(
      "{\"model_type\": \"" + std::string(sliding ? "gpt_oss" : "llama") +
      "\", \"num_hidden_layers\": 4, \"hidden_size\": 128, \"num_attention_heads\": 2, "
      "\"num_key_value_heads\": 2, \"head_dim\": 64, \"vocab_size\": 100, \"torch_dtype\": \"bfloat16\"" +
      layer_types +
      (sliding ? ", \"num_local_experts\": 2, \"num_experts_per_tok\": 1, \"intermediate_size\": 128" : "") + "}");
}

KvCacheOptions Fp8(std::vector<std::string> skip) {
  KvCacheOptions o;
  o.max_model_len = 64;
  o.kv_cache_dtype = "fp8";
  o.kv_cache_dtype_skip_layers = std::move(skip);
  return o;
}

constexpr int64_t kFp8Page = 2 * 16 * 2 * 64 * 1;   // 4,096
constexpr int64_t kBf16Page = 2 * 16 * 2 * 64 * 2;  // 8,192

TEST(KvSkipLayers, ReadsIndicesAndTheSlidingWindowWord) {
  const ModelSpec m = Model(true);
  const KvSkipLayers s = ParseKvSkipLayers({"3", "sliding_window", "1", "3"}, m);
  EXPECT_TRUE(s.sliding_window);
  EXPECT_EQ(s.layer_indices, (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(s.Skips(0, true));
  EXPECT_TRUE(s.Skips(1, false));
  EXPECT_FALSE(ParseKvSkipLayers({"2"}, m).Skips(0, true));
  EXPECT_TRUE(ParseKvSkipLayers({}, m).empty());
}

TEST(KvSkipLayers, WhatVllmWouldIgnoreIsRefusedNamingTheItem) {
  const ModelSpec m = Model(false);
  for (const std::string bad : {"4", "07", "+1", "-1", "", "full_attention", "0,1", "1234567890"}) {
    try {
      ParseKvSkipLayers({"0", bad}, m);
      FAIL() << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.field(), "kv_cache_dtype_skip_layers[1]") << bad;
    }
  }
}

TEST(KvSkipLayers, DenseIndicesMakeOneUniformTypeGroup) {
  const ModelSpec m = Model(false);
  // Layers 0 and 3 in bfloat16: one block costs 2 fp8 pages + 2 bf16 pages.
  const KvCacheCapacity cap = ComputeKvCacheCapacity(m, {(2 * kFp8Page + 2 * kBf16Page) * 10}, Fp8({"0", "3"}));
  EXPECT_EQ(cap.num_blocks, 10);
  EXPECT_EQ(cap.bytes_per_block, 2 * kFp8Page + 2 * kBf16Page);
  ASSERT_EQ(cap.groups.size(), 1u);
  EXPECT_TRUE(cap.groups[0].uniform_type);
  // No skip: 4 fp8 pages a block.
  EXPECT_EQ(ComputeKvCacheCapacity(m, {(2 * kFp8Page + 2 * kBf16Page) * 10}, Fp8({})).bytes_per_block, 4 * kFp8Page);
}

TEST(KvSkipLayers, SlidingLayersInTheModelDtypeDoubleTheFullLayersBlock) {
  const ModelSpec m = Model(true);
  const KvCacheCapacity cap = ComputeKvCacheCapacity(m, {kBf16Page * 2 * 10}, Fp8({"sliding_window"}));
  ASSERT_EQ(cap.groups.size(), 2u);
  for (const KvCacheGroupInfo& g : cap.groups) {
    EXPECT_EQ(g.page_size_bytes, kBf16Page) << g.kind;
    EXPECT_EQ(g.block_size, g.kind == "sliding_window" ? 16 : 32) << g.kind;
  }
  EXPECT_EQ(cap.num_blocks, 10);  // group size 2, page 8,192
  // An explicit block size there is not modelled (PR #42890 reads it differently).
  KvCacheOptions o = Fp8({"sliding_window"});
  o.block_size = 16;
  EXPECT_THROW(ComputeKvCacheCapacity(m, {kBf16Page * 20}, o), Unsupported);
}

TEST(KvSkipLayers, ASkippedLayerStoresTheModelDtype) {
  const ModelSpec m = Model(false);
  KvSpecBuildOptions b;
  b.dtype = ResolveKvCacheDType("fp8", DType::kBFloat16);
  b.skip = ParseKvSkipLayers({"2"}, m);
  b.skip_dtype = ResolveKvCacheDType("auto", DType::kBFloat16);
  const std::vector<LayerKvSpec> layers = BuildLayerKvSpecs(m, b, 0, 4);
  ASSERT_EQ(layers.size(), 4u);
  for (const LayerKvSpec& l : layers) {
    EXPECT_EQ(PageSizeBytes(l.spec), l.layer_index == 2 ? kBf16Page : kFp8Page) << l.layer_index;
  }
}

}  // namespace
}  // namespace vllm_mem
