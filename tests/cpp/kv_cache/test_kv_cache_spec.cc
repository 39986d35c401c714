// KV-cache dtypes and per-layer specs: page sizes and per-request needs, with the numbers of
// vLLM's tests/v1/core/test_kv_cache_utils.py (docs/kv_cache.md).
#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/kv_cache_dtype.h"
#include "vllm_mem/kv_cache/kv_cache_spec.h"
#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {
namespace {

KvCacheDType Fp32() { return ResolveKvCacheDType("float32", DType::kBFloat16); }

// vLLM's new_kv_cache_spec(): block 16, 2 KV heads, head 64, fp32 -> 16384-byte pages.
AttentionPageLayout Layout(int64_t heads = 2, int64_t head = 64, KvCacheDType dtype = Fp32(), int64_t block = 16) {
  AttentionPageLayout l;
  l.block_size_tokens = block;
  l.num_kv_heads = heads;
  l.head_size = head;
  l.head_size_v = head;
  l.dtype = dtype;
  return l;
}

KvRequestShape Shape(int64_t max_model_len, int64_t max_num_batched_tokens = 8192) {
  KvRequestShape s;
  s.max_model_len = max_model_len;
  s.max_num_batched_tokens = max_num_batched_tokens;
  return s;
}

TEST(KvCacheDType, AutoFollowsTheServedModelDtype) {
  EXPECT_EQ(ResolveKvCacheDType("auto", DType::kBFloat16).element_size_bytes, 2);
  EXPECT_EQ(ResolveKvCacheDType("auto", DType::kFloat32).element_size_bytes, 4);
  EXPECT_EQ(ResolveKvCacheDType("auto", DType::kFloat32).name, "float32");
  // An fp32 checkpoint is served in bf16 under --dtype auto, so its KV cache is 2 bytes.
  EXPECT_EQ(ResolveKvCacheDType("auto", ResolveModelDType("auto", DType::kFloat32, "dtype")).element_size_bytes, 2);
}

TEST(KvCacheDType, QuantizedValues) {
  for (const char* name : {"fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"}) {
    KvCacheDType d = ResolveKvCacheDType(name, DType::kBFloat16);
    EXPECT_EQ(d.element_size_bytes, 1) << name;
    EXPECT_EQ(d.quant_mode, KvQuantMode::kFp8PerTensor) << name;
  }
  EXPECT_EQ(ResolveKvCacheDType("fp8_per_token_head", DType::kBFloat16).quant_mode, KvQuantMode::kPerTokenHead);
  EXPECT_EQ(ResolveKvCacheDType("int8_per_token_head", DType::kBFloat16).quant_mode, KvQuantMode::kPerTokenHead);
  EXPECT_EQ(ResolveKvCacheDType("nvfp4", DType::kBFloat16).quant_mode, KvQuantMode::kNvfp4);
  EXPECT_EQ(ResolveKvCacheDType("float", DType::kBFloat16).element_size_bytes, 4);
  EXPECT_EQ(ResolveKvCacheDType("float16", DType::kBFloat16).element_size_bytes, 2);
}

TEST(KvCacheDType, UnknownValueNamesFieldAndAllowedValues) {
  try {
    ResolveKvCacheDType("fp7", DType::kBFloat16);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "kv_cache_dtype");
    EXPECT_NE(std::string(e.what()).find("fp8_e5m2"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("auto"), std::string::npos);
  }
}

TEST(KvCacheSpec, PageSizes) {
  EXPECT_EQ(PageSizeBytes(FullAttentionKvSpec{Layout()}), 16384);
  EXPECT_EQ(PageSizeBytes(SlidingWindowKvSpec{Layout(), 1}), 16384);
  // ChunkedLocal keeps the base 2*B*H*D*s.
  EXPECT_EQ(PageSizeBytes(ChunkedLocalKvSpec{Layout(), 512}), 16384);
  // MLA: one latent of 576 per token, no factor 2, fp32 -> 16*576*4.
  EXPECT_EQ(PageSizeBytes(MlaKvSpec{Layout(1, 576)}), 16 * 576 * 4);
  // fp8_ds_mla: 656 bytes per token.
  EXPECT_EQ(PageSizeBytes(MlaKvSpec{Layout(1, 576, ResolveKvCacheDType("fp8_ds_mla", DType::kBFloat16))}),
            16 * 656);
  // NVFP4: D//2 + D//16 bytes per head vector.
  EXPECT_EQ(PageSizeBytes(FullAttentionKvSpec{Layout(2, 64, ResolveKvCacheDType("nvfp4", DType::kBFloat16))}),
            16 * 2 * 2 * (32 + 4));
}

TEST(KvCacheSpec, UnpaddedPageWithoutQuantMatchesRealPage) {
  const KvCacheDType bf16 = ResolveKvCacheDType("bfloat16", DType::kBFloat16);
  FullAttentionKvSpec s{Layout(2, 64, bf16)};
  EXPECT_EQ(UnpaddedPageSizeBytes(s), 16 * 2 * 128 * 2);
  EXPECT_EQ(PageSizeBytes(s), UnpaddedPageSizeBytes(s));
}

TEST(KvCacheSpec, UnpaddedPageIncludesPerTokenHeadScales) {
  // vLLM: uint8 + FP8_PER_TOKEN_HEAD -> unpadded = real + 2*16*2*4 = 4096 + 256.
  FullAttentionKvSpec s{Layout(2, 64, ResolveKvCacheDType("fp8_per_token_head", DType::kBFloat16))};
  EXPECT_EQ(UnpaddedPageSizeBytes(s), 4096 + 256);
  // Per-tensor fp8 adds no scale bytes.
  EXPECT_EQ(UnpaddedPageSizeBytes(FullAttentionKvSpec{Layout(2, 64, ResolveKvCacheDType("fp8", DType::kBFloat16))}),
            4096);
}

TEST(KvCacheSpec, PagePaddedWins) {
  EXPECT_EQ(PageSizeBytes(WithPageSizePadded(FullAttentionKvSpec{Layout()}, 65536)), 65536);
  EXPECT_THROW(WithPageSizePadded(FullAttentionKvSpec{Layout()}, 100), InvalidArgument);
}

TEST(KvCacheSpec, MaxMemoryFullAttention) {
  EXPECT_EQ(MaxMemoryUsageBytes(FullAttentionKvSpec{Layout()}, Shape(16)), 16384);
  EXPECT_EQ(MaxMemoryUsageBytes(FullAttentionKvSpec{Layout()}, Shape(17)), 2 * 16384);
  EXPECT_EQ(MaxMemoryUsageBytes(FullAttentionKvSpec{Layout()}, Shape(16384)), 1024 * 16384);
}

TEST(KvCacheSpec, MaxMemorySlidingWindow) {
  // vLLM: window 1024, max_num_batched_tokens 1024 -> cdiv(1023 + 1024, 16) + 1 = 129 blocks.
  SlidingWindowKvSpec sw{Layout(), 1024};
  EXPECT_EQ(MaxMemoryUsageBytes(sw, Shape(16384, 1024)), 129 * 16384);
  // Never more than max_model_len tokens (+1 block for the unaligned window start)...
  KvRequestShape uncapped = Shape(1000, 8192);
  uncapped.cap_sliding_window_at_full = false;
  EXPECT_EQ(MaxMemoryUsageBytes(sw, uncapped), (63 + 1) * 16384);
  // ...and, as v0.19 behaves, never more than a full-attention layer.
  EXPECT_EQ(MaxMemoryUsageBytes(sw, Shape(1000, 8192)), 63 * 16384);
  // In-flight tokens scale with the concurrent batches.
  KvRequestShape two = Shape(16384, 1024);
  two.max_concurrent_batches = 2;
  EXPECT_EQ(MaxMemoryUsageBytes(sw, two), (192 + 1) * 16384);  // cdiv(1023 + 2048, 16) + 1
}

TEST(KvCacheSpec, MaxMemoryChunkedLocalHasNoExtraBlock) {
  ChunkedLocalKvSpec cl{Layout(), 512};
  EXPECT_EQ(MaxMemoryUsageBytes(cl, Shape(16384, 1024)), 96 * 16384);
  EXPECT_EQ(MaxMemoryUsageBytes(cl, Shape(100, 1024)), 7 * 16384);
}

TEST(KvCacheSpec, MaxMemoryMamba) {
  MambaKvSpec m;
  m.state_bytes = 4096 + 12288;  // vLLM's new_mamba_spec(): ((2,512),(3,32,32)) fp32
  m.num_speculative_blocks = 2;
  EXPECT_EQ(PageSizeBytes(m), 16384);
  EXPECT_EQ(MaxMemoryUsageBytes(m, Shape(1024)), 3 * 16384);
  m.cache_mode = MambaCacheMode::kAlign;
  EXPECT_EQ(MaxMemoryUsageBytes(m, Shape(1024)), 4 * 16384);
  m.cache_mode = MambaCacheMode::kAll;
  EXPECT_EQ(MaxMemoryUsageBytes(m, Shape(1024)), (64 + 2) * 16384);
}

TEST(KvCacheSpec, TurboQuantIsReportedUnsupported) {
  FullAttentionKvSpec s{Layout(2, 64, ResolveKvCacheDType("turboquant_k8v4", DType::kBFloat16))};
  EXPECT_THROW(PageSizeBytes(s), Unsupported);
}

TEST(KvCacheSpec, OverflowIsAnError) {
  FullAttentionKvSpec s{Layout(int64_t{1} << 40, int64_t{1} << 30)};
  EXPECT_THROW(PageSizeBytes(s), InvalidArgument);
  EXPECT_THROW(MaxMemoryUsageBytes(FullAttentionKvSpec{Layout()}, Shape(int64_t{1} << 62)), InvalidArgument);
}

TEST(KvCacheSpec, MergeRules) {
  // Full with and without a window merge; different windows are different specs.
  EXPECT_TRUE(KvSpecsMergeable(FullAttentionKvSpec{Layout()}, FullAttentionKvSpec{Layout(), 128, 0}));
  EXPECT_FALSE(KvSpecsMergeable(SlidingWindowKvSpec{Layout(), 1}, SlidingWindowKvSpec{Layout(), 2}));
  EXPECT_FALSE(KvSpecsMergeable(FullAttentionKvSpec{Layout(2)}, FullAttentionKvSpec{Layout(4)}));
  EXPECT_TRUE(KvSpecsSameType(FullAttentionKvSpec{Layout(2, 128)}, FullAttentionKvSpec{Layout(2, 64)}));
  EXPECT_FALSE(KvSpecsSameType(FullAttentionKvSpec{Layout()}, MlaKvSpec{Layout(1, 576)}));
  EXPECT_FALSE(KvSpecsSameType(SlidingWindowKvSpec{Layout(), 1}, SlidingWindowKvSpec{Layout(), 2}));
}

TEST(KvCacheSpec, ToFullAttentionKeepsWindowAndPadding) {
  SlidingWindowKvSpec sw{Layout(), 1024};
  sw.layout.page_size_padded_bytes = 32 * 1024;
  const auto full = std::get<FullAttentionKvSpec>(ToFullAttention(sw));
  EXPECT_EQ(full.sliding_window_tokens, 1024);
  EXPECT_EQ(PageSizeBytes(full), 32 * 1024);
  const auto chunk = std::get<FullAttentionKvSpec>(ToFullAttention(ChunkedLocalKvSpec{Layout(), 512}));
  EXPECT_EQ(chunk.attention_chunk_size_tokens, 512);
}

TEST(KvCacheSpec, BuildFromModelSpec) {
  ModelSpec m = ModelSpec::FromHfConfigText(R"({"model_type": "gemma2", "num_hidden_layers": 4,
    "hidden_size": 256, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "vocab_size": 10, "sliding_window": 4096, "torch_dtype": "bfloat16"})");
  KvSpecBuildOptions o;
  o.dtype = ResolveKvCacheDType("auto", m.dtype);
  o.tensor_parallel_size = 2;
  auto layers = BuildLayerKvSpecs(m, o, 0, 4);
  ASSERT_EQ(layers.size(), 4u);
  EXPECT_TRUE(std::holds_alternative<SlidingWindowKvSpec>(layers[0].spec));
  EXPECT_TRUE(std::holds_alternative<FullAttentionKvSpec>(layers[1].spec));
  EXPECT_EQ(PageSizeBytes(layers[0].spec), 16 * 2 * 512 * 2);  // 2 KV heads per rank
  auto rank1 = BuildLayerKvSpecsForRank(m, o, 1, 2);
  ASSERT_EQ(rank1.size(), 2u);
  EXPECT_EQ(rank1[0].layer_index, 2);
  o.tensor_parallel_size = 3;
  EXPECT_THROW(BuildLayerKvSpecs(m, o, 0, 4), InvalidArgument);
}

TEST(KvCacheSpec, MlaIsOneLatentNotSplitByTp) {
  ModelSpec m = ModelSpec::FromHfConfigText(R"({"model_type": "deepseek_v3", "num_hidden_layers": 2,
    "hidden_size": 7168, "num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 10,
    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
    "v_head_dim": 128, "torch_dtype": "bfloat16"})");
  KvSpecBuildOptions o;
  o.dtype = ResolveKvCacheDType("auto", m.dtype);
  o.block_size_tokens = 64;
  o.tensor_parallel_size = 8;
  auto layers = BuildLayerKvSpecs(m, o, 0, 2);
  EXPECT_EQ(PageSizeBytes(layers[0].spec), 64 * 576 * 2);  // 1152 B per token per layer
}

TEST(KvCacheSpec, ChunkedLocalLayersFromLlama4Config) {
  ModelSpec m = ModelSpec::FromHfConfigText(R"({"model_type": "llama4_text", "num_hidden_layers": 8,
    "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
    "vocab_size": 10, "attention_chunk_size": 8192, "torch_dtype": "bfloat16"})",
                                            ModelReadOptions{/*allow_unknown=*/true});
  EXPECT_TRUE(m.HasExactRules());  // llama4 has rules (shared expert counted since the mm change)
  KvSpecBuildOptions o;
  o.dtype = ResolveKvCacheDType("auto", m.dtype);
  auto layers = BuildLayerKvSpecs(m, o, 0, 8);
  EXPECT_TRUE(std::holds_alternative<ChunkedLocalKvSpec>(layers[0].spec));
  EXPECT_TRUE(std::holds_alternative<FullAttentionKvSpec>(layers[3].spec));  // every 4th: NoPE, global
  EXPECT_TRUE(std::holds_alternative<FullAttentionKvSpec>(layers[7].spec));
}

}  // namespace
}  // namespace vllm_mem
