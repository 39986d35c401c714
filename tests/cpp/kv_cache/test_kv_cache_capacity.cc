// ComputeKvCacheCapacity / EstimateMaxModelLen / CheckEnoughKvCacheMemory end to end from a
// config.json, with the numbers of vLLM's own tests (test_kv_cache_utils.py,
// test_gpu_model_runner.py) and vLLM's exact messages.
#include <gtest/gtest.h>

#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

constexpr int64_t kMem = 16384;  // page of 16 tokens x 2 heads x (64+64) x fp32

/*! A dense model of \p layers layers, \p kv_heads KV heads of \p head_dim, in \p dtype. */
ModelSpec Dense(int64_t layers, int64_t kv_heads, int64_t head_dim, const char* dtype, const char* extra = "") {
  return ModelSpec::FromHfConfigText(
      "{\"model_type\": \"llama\", \"num_hidden_layers\": " + std::to_string(layers) +
      ", \"hidden_size\": " + std::to_string(kv_heads * head_dim) +
      ", \"num_attention_heads\": " + std::to_string(kv_heads) + ", \"num_key_value_heads\": " +
      std::to_string(kv_heads) + ", \"head_dim\": " + std::to_string(head_dim) +
      ", \"vocab_size\": 100, \"torch_dtype\": \"" + dtype + "\"" + extra + "}");
}

KvCacheOptions Opts(int64_t max_model_len, const char* model_dtype = "auto") {
  KvCacheOptions o;
  o.max_model_len = max_model_len;
  o.model_dtype = model_dtype;
  return o;
}

/*! vLLM's unit tests run fp32 models in fp32 (--dtype float32; "auto" would serve bf16). */
KvCacheOptions Opts32(int64_t max_model_len) { return Opts(max_model_len, "float32"); }

TEST(KvCacheCapacity, MultipleWorkersTakeTheMinimumBlocks) {
  ModelSpec m = Dense(2, 2, 64, "float32");
  KvCacheOptions o = Opts32(16);
  EXPECT_EQ(ComputeKvCacheCapacity(m, {kMem * 2 * 10}, o).num_blocks, 10);
  // TP with different memory: the smallest wins (4 heads / TP 2 = the same 2-head page).
  ModelSpec m4 = Dense(2, 4, 64, "float32");
  o.tensor_parallel_size = 2;
  auto cap = ComputeKvCacheCapacity(m4, {kMem * 2 * 20, kMem * 2 * 40}, o);
  EXPECT_EQ(cap.num_blocks, 20);
  EXPECT_EQ(cap.num_blocks_per_worker, (std::vector<int64_t>{20, 40}));
  EXPECT_EQ(ComputeKvCacheCapacity(m4, {kMem * 20, kMem * 40}, o).num_blocks, 10);
}

TEST(KvCacheCapacity, PipelineShardingSymmetricAndAsymmetric) {
  // vLLM: max_model_len 512 -> 512 // 16 + 1 = 33 blocks; one layer per pipeline rank.
  ModelSpec m = Dense(2, 2, 64, "float32");
  KvCacheOptions o = Opts32(512);
  o.pipeline_parallel_size = 2;
  EXPECT_EQ(ComputeKvCacheCapacity(m, {kMem * 33}, o).num_blocks, 33);
  auto cap = ComputeKvCacheCapacity(m, {kMem * 33, kMem * 66}, o);
  EXPECT_EQ(cap.num_blocks, 33);
  EXPECT_EQ(cap.kv_cache_bytes, kMem * 33);
  // TP + PP: four workers, rank-major by pipeline stage.
  ModelSpec m4 = Dense(2, 4, 64, "float32");
  o.tensor_parallel_size = 2;
  EXPECT_EQ(ComputeKvCacheCapacity(m4, {kMem * 40, kMem * 33, kMem * 50, kMem * 60}, o).num_blocks, 33);
  EXPECT_THROW(ComputeKvCacheCapacity(m4, {kMem, kMem, kMem}, o), InvalidArgument);
}

TEST(KvCacheCapacity, PipelineRanksWithFewerLayersGetMoreBlocksPerByte) {
  ModelSpec m = Dense(3, 2, 64, "float32");  // get_pp_indices: 2 layers, then 1
  KvCacheOptions o = Opts32(16);
  o.pipeline_parallel_size = 2;
  auto cap = ComputeKvCacheCapacity(m, {kMem * 20}, o);
  EXPECT_EQ(cap.num_blocks_per_worker, (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(cap.num_blocks, 10);
}

TEST(KvCacheCapacity, HybridAcrossPipelineRanks) {
  ModelSpec m = ModelSpec::FromHfConfigText(R"({"model_type": "gpt_oss", "num_hidden_layers": 2,
    "hidden_size": 128, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 64,
    "vocab_size": 100, "torch_dtype": "float32", "sliding_window": 128,
    "layer_types": ["full_attention", "sliding_attention"]})");
  KvCacheOptions o = Opts(16);
  o.model_dtype = "float32";
  o.pipeline_parallel_size = 2;
  auto cap = ComputeKvCacheCapacity(m, {kMem * 10}, o);
  EXPECT_EQ(cap.groups.size(), 2u);
  EXPECT_EQ(cap.num_blocks, 10);
}

TEST(KvCacheCapacity, EstimateMaxModelLen) {
  // vLLM's test_estimate_max_model_len: 32 layers x 32 heads x 128, fp16 -> 512 KiB per token.
  ModelSpec m = Dense(32, 32, 128, "float16");
  KvCacheOptions o = Opts(16385);
  o.max_num_batched_tokens = 32768;
  EXPECT_EQ(EstimateMaxModelLen(m, {8 * kGiB}, o), 16384);
  o.max_model_len = 16383;
  EXPECT_EQ(EstimateMaxModelLen(m, {8 * kGiB}, o), 16383);
  EXPECT_EQ(AutoFitMaxModelLen(m, {8 * kGiB}, o), 16383);
  EXPECT_EQ(EstimateMaxModelLen(m, {1024}, o), 0);
}

TEST(KvCacheCapacity, InitKvCacheWithoutSharing) {
  // test_gpu_model_runner.py: 2 layers x 8 heads x 64, fp16 -> 32 KiB pages.
  ModelSpec m = Dense(2, 8, 64, "float16");
  auto cap = ComputeKvCacheCapacity(m, {20 * kGiB}, Opts(16));
  EXPECT_EQ(cap.num_blocks, 327680);
  EXPECT_EQ(cap.bytes_per_block, 2 * 32 * kKiB);
  EXPECT_EQ(cap.kv_cache_bytes, 20 * kGiB);
  EXPECT_EQ(EstimateMaxModelLen(m, {5 * kGiB}, Opts(3'000'000)), 1310720);
}

TEST(KvCacheCapacity, MaxConcurrencyAndTokens) {
  ModelSpec m = Dense(32, 8, 128, "bfloat16");  // Llama-3.1-8B's KV shape: 2 MiB per block
  auto cap = ComputeKvCacheCapacity(m, {29751 * 2 * kMiB}, Opts(8192));
  EXPECT_EQ(cap.num_blocks, 29751);
  EXPECT_EQ(cap.num_tokens, 476016);  // int(29751 / 512 * 8192)
  EXPECT_NEAR(cap.max_concurrency, 58.107, 1e-3);
  EXPECT_EQ(cap.block_size, 16);
  EXPECT_EQ(cap.bytes_per_request, 512 * 2 * kMiB);
  ASSERT_EQ(cap.groups.size(), 1u);
  EXPECT_EQ(cap.groups[0].blocks_per_request, 512);
  EXPECT_EQ(cap.groups[0].layer_indices.size(), 32u);
}

TEST(KvCacheCapacity, KvCacheDtypes) {
  ModelSpec m = Dense(32, 8, 128, "bfloat16");
  KvCacheOptions o = Opts(8192);
  o.kv_cache_dtype = "fp8";
  EXPECT_EQ(ComputeKvCacheCapacity(m, {kGiB}, o).bytes_per_block, kMiB);
  o.kv_cache_dtype = "auto";
  o.model_dtype = "float32";
  EXPECT_EQ(ComputeKvCacheCapacity(m, {10 * kGiB}, o).bytes_per_block, 4 * kMiB);
  o.kv_cache_dtype = "fp9";
  EXPECT_THROW(ComputeKvCacheCapacity(m, {kGiB}, o), InvalidArgument);
  // A float32 checkpoint served with --dtype auto stores bf16 KV.
  ModelSpec f32 = Dense(32, 8, 128, "float32");
  EXPECT_EQ(ComputeKvCacheCapacity(f32, {kGiB}, Opts(8192)).bytes_per_block, 2 * kMiB);
}

TEST(KvCacheCapacity, CheckpointKvCacheSchemeMakesAutoFp8) {
  ModelSpec m = Dense(32, 8, 128, "bfloat16", R"(, "quantization_config": {"quant_method": "compressed-tensors",
      "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor"}})");
  auto cap = ComputeKvCacheCapacity(m, {kGiB}, Opts(8192));
  EXPECT_EQ(cap.kv_cache_dtype, "fp8");
  EXPECT_EQ(cap.bytes_per_block, kMiB);
}

TEST(KvCacheCapacity, SlidingWindowCapMatchesV019Logs) {
  // Gemma-2-like interleaving at max_model_len 8192 / max_num_batched_tokens 8192: a sliding
  // group needs min(cdiv(4095 + 8192 capped at 8192, 16) + 1, 512) = 512 blocks, not 513.
  ModelSpec m = ModelSpec::FromHfConfigText(R"({"model_type": "gemma2", "num_hidden_layers": 42,
    "hidden_size": 3584, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
    "vocab_size": 256000, "sliding_window": 4096, "torch_dtype": "bfloat16"})");
  KvCacheOptions o = Opts(8192);
  auto cap = ComputeKvCacheCapacity(m, {40 * kGiB}, o);
  ASSERT_EQ(cap.groups.size(), 2u);
  EXPECT_EQ(cap.groups[0].kind, "sliding_window");
  EXPECT_EQ(cap.groups[0].blocks_per_request, 512);
  EXPECT_EQ(cap.bytes_per_block, 16 * 8 * 512 * 2 * 21);
  EXPECT_DOUBLE_EQ(cap.max_concurrency, static_cast<double>(cap.num_blocks) / 1024.0);
  o.cap_sliding_window_at_full = false;
  auto uncapped = ComputeKvCacheCapacity(m, {40 * kGiB}, o);
  EXPECT_DOUBLE_EQ(uncapped.max_concurrency, static_cast<double>(cap.num_blocks) / 1025.0);
  // Hybrid manager off: one group, memory for every token of every layer.
  o.disable_hybrid_kv_cache_manager = true;
  auto off = ComputeKvCacheCapacity(m, {40 * kGiB}, o);
  EXPECT_EQ(off.groups.size(), 1u);
  EXPECT_EQ(off.num_blocks, 40 * kGiB / (16 * 8 * 512 * 2 * 42));
}

TEST(KvCacheCapacity, NumGpuBlocksOverride) {
  ModelSpec m = Dense(2, 2, 64, "float32");
  KvCacheOptions o = Opts32(16);
  o.num_gpu_blocks_override = 16;
  auto cap = ComputeKvCacheCapacity(m, {kMem * 2 * 32}, o);
  EXPECT_EQ(cap.num_blocks, 16);
  EXPECT_EQ(cap.available_bytes, kMem * 2 * 16);
  // The check sees the overridden capacity: 32 blocks cannot hold a 16384-token request.
  o.num_gpu_blocks_override = 32;
  o.max_model_len = 16384;
  try {
    CheckEnoughKvCacheMemory(m, {100 * kGiB}, o);
    FAIL() << "no error";
  } catch (const InsufficientMemory& e) {
    EXPECT_NE(std::string(e.what()).find("max seq len"), std::string::npos);
  }
}

TEST(KvCacheCapacity, NoAvailableMemoryMessage) {
  ModelSpec m = Dense(2, 2, 64, "float32");
  for (int64_t bytes : {int64_t{0}, int64_t{-5}}) {
    try {
      ComputeKvCacheCapacity(m, {bytes}, Opts32(16));
      FAIL() << "no error";
    } catch (const InsufficientMemory& e) {
      EXPECT_EQ(std::string(e.what()),
                "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                "initializing the engine (this flag also controls CPU memory reservation on the CPU backend, "
                "despite its name). See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more "
                "details.");
    }
  }
}

TEST(KvCacheCapacity, NotEnoughForOneRequestMessage) {
  // 32 layers x 8 heads x 128 bf16 = 128 KiB per token; 8192 tokens need 1 GiB.
  ModelSpec m = Dense(32, 8, 128, "bfloat16");
  const int64_t available = kGiB / 2;
  const std::string expected =
      "To serve at least one request with the model's max seq len (8192), (1.0 GiB KV cache is needed, which is "
      "larger than the available KV cache memory (0.5 GiB). Based on the available memory, the estimated maximum "
      "model length is 4096. Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU "
      "backend) or decreasing `max_model_len` when initializing the engine. See "
      "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.";
  EXPECT_EQ(KvCacheMemoryShortfall(m, {available}, Opts(8192)), expected);
  EXPECT_THROW(CheckEnoughKvCacheMemory(m, {available}, Opts(8192)), InsufficientMemory);
  EXPECT_THROW(ComputeKvCacheCapacity(m, {available}, Opts(8192)), InsufficientMemory);
  EXPECT_EQ(KvCacheMemoryShortfall(m, {kGiB}, Opts(8192)), "");
  EXPECT_NO_THROW(CheckEnoughKvCacheMemory(m, {kGiB}, Opts(8192)));
  // Too little for even one token: no estimate sentence.
  const std::string tiny = KvCacheMemoryShortfall(m, {1000}, Opts(8192));
  EXPECT_EQ(tiny.find("estimated maximum"), std::string::npos);
  EXPECT_NE(tiny.find("(0.0 GiB)"), std::string::npos);
}

TEST(KvCacheCapacity, BadInputNamesTheField) {
  ModelSpec m = Dense(4, 8, 128, "bfloat16");
  auto field_of = [&](KvCacheOptions o, std::vector<int64_t> available = {kGiB}) -> std::string {
    try {
      ComputeKvCacheCapacity(m, available, o);
    } catch (const InvalidArgument& e) {
      return e.field();
    }
    return "no error";
  };
  EXPECT_EQ(field_of(Opts(0)), "max_model_len");
  KvCacheOptions o = Opts(16);
  o.tensor_parallel_size = 3;
  EXPECT_EQ(field_of(o), "tensor_parallel_size");
  o = Opts(16);
  o.pipeline_parallel_size = 5;
  EXPECT_EQ(field_of(o), "pipeline_parallel_size");
  o = Opts(16);
  o.block_size = -1;
  EXPECT_EQ(field_of(o), "block_size");
  o = Opts(16);
  o.model_dtype = "int3";
  EXPECT_EQ(field_of(o), "dtype");
  EXPECT_EQ(field_of(Opts(16), {}), "available_bytes");
  // 2^60 tokens once overflowed in max_memory_usage_bytes; the context bound now stops it first
  // (vllm_mem/base/limits.h).
  EXPECT_EQ(field_of(Opts(int64_t{1} << 60)), "max_model_len");
}

TEST(KvCacheCapacity, MlaDeepSeekV3) {
  ModelSpec m = ModelSpec::FromHfConfigText(R"({"model_type": "deepseek_v3", "num_hidden_layers": 61,
    "hidden_size": 7168, "num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 129280,
    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
    "v_head_dim": 128, "torch_dtype": "bfloat16"})");
  KvCacheOptions o = Opts(8192);
  o.tensor_parallel_size = 8;
  auto cap = ComputeKvCacheCapacity(m, {10 * kGiB}, o);
  EXPECT_EQ(cap.block_size, 64);  // MLA default block
  EXPECT_EQ(cap.bytes_per_block, 64 * 1152 * 61);
  EXPECT_EQ(cap.num_blocks, 10 * kGiB / (64 * 1152 * 61));
  EXPECT_EQ(cap.groups[0].kind, "mla");
}

// DeepSeek-V3.2 (vLLM deepseek_v2.py): beside each layer's latent, DeepseekV32IndexerCache keeps an
// MLAAttentionSpec of 128 fp8 key bytes + one float32 scale (132 bytes per token, uint8); the two kinds
// share a block size, so one UniformTypeKVCacheSpecs group whose block is every layer's pages. fp8 KV
// dtypes become fp8_ds_mla (models/config.py DeepseekV32ForCausalLM.verify_and_update_config).
TEST(KvCacheCapacity, SparseMlaDeepSeekV32) {
  ModelSpec m = ModelSpec::FromHfConfigText(R"({"model_type": "deepseek_v32", "num_hidden_layers": 61,
    "hidden_size": 7168, "num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 129280,
    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
    "v_head_dim": 128, "torch_dtype": "bfloat16", "index_n_heads": 64, "index_head_dim": 128,
    "index_topk": 2048})");
  KvCacheOptions o = Opts(8192);
  o.tensor_parallel_size = 8;
  auto cap = ComputeKvCacheCapacity(m, {10 * kGiB}, o);
  EXPECT_EQ(cap.block_size, 64);
  EXPECT_EQ(cap.bytes_per_block, 64 * (1152 + 132) * 61);
  EXPECT_EQ(cap.num_blocks, 10 * kGiB / (64 * (1152 + 132) * 61));
  ASSERT_EQ(cap.groups.size(), 1u);
  EXPECT_TRUE(cap.groups[0].uniform_type);
  o.kv_cache_dtype = "fp8";
  EXPECT_EQ(ComputeKvCacheCapacity(m, {10 * kGiB}, o).bytes_per_block, 64 * (656 + 132) * 61);
}

TEST(KvCacheCapacity, AutoFitMaxModelLen) {
  // vLLM's test_auto_fit_max_model_len: 2 layers, max_model_len 1024.
  ModelSpec m = Dense(2, 2, 64, "float32");
  EXPECT_EQ(AutoFitMaxModelLen(m, {kMem * 2 * 1024}, Opts32(1024)), 1024);
  const int64_t reduced = AutoFitMaxModelLen(m, {kMem * 2 * 32}, Opts32(1024));
  EXPECT_GT(reduced, 0);
  EXPECT_LT(reduced, 1024);
  EXPECT_EQ(reduced, 32 * 16);  // 32 blocks of 16 tokens per layer
  // ..._respects_num_gpu_blocks_override: 32 blocks cap the length whatever the memory.
  KvCacheOptions o = Opts32(1024);
  o.num_gpu_blocks_override = 32;
  const int64_t capped = AutoFitMaxModelLen(m, {100 * kGiB}, o);
  EXPECT_GT(capped, 0);
  EXPECT_LE(capped, 512);
}

TEST(KvCacheCapacity, AutoFitCountsHybridPaddingLayers) {
  // 3 full + 7 sliding layers pad to 3 + 9: auto-fit counts the padded tensor slots, the plain
  // estimate does not, so auto-fit is never longer.
  ModelSpec m = ModelSpec::FromHfConfigText(R"({"model_type": "gpt_oss", "num_hidden_layers": 10,
    "hidden_size": 128, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 64,
    "vocab_size": 100, "torch_dtype": "float32", "sliding_window": 64,
    "layer_types": ["full_attention", "full_attention", "full_attention", "sliding_attention",
                    "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                    "sliding_attention", "sliding_attention"]})");
  KvCacheOptions o = Opts32(1024);
  o.max_num_batched_tokens = 64;
  auto cap = ComputeKvCacheCapacity(m, {kMem * 3 * 4096}, o);
  EXPECT_EQ(cap.num_padding_layers, 2);
  EXPECT_EQ(cap.groups.size(), 4u);
  EXPECT_EQ(cap.bytes_per_block, kMem * 3);
  EXPECT_EQ(cap.num_blocks, 4096);
  // A sliding layer needs cdiv(63 + 64, 16) + 1 = 9 blocks. Plain sum over 10 layers:
  // 3*c + 7*9 <= 3*4096 -> c <= 4075 blocks. Auto-fit over 3 tensor slots and 4 groups (one
  // full, three sliding): 3 * (c + 3*9) <= 3*4096 -> c <= 4069 blocks.
  o.max_model_len = 100000;
  EXPECT_EQ(EstimateMaxModelLen(m, {kMem * 3 * 4096}, o), 4075 * 16);
  EXPECT_EQ(AutoFitMaxModelLen(m, {kMem * 3 * 4096}, o), 4069 * 16);
}

}  // namespace
}  // namespace vllm_mem
