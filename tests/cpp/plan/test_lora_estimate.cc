#include <string>

#include <gtest/gtest.h>

#include "bundled_config.h"
#include "expect_invalid_argument.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/plan/lora_estimate.h"

namespace vllm_mem {
namespace {

const ModelSpec& Llama() {
  static const ModelSpec spec = testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json");
  return spec;
}

LoraOptions Rank16(int64_t tp) {
  LoraOptions o;  // vLLM's LoRAConfig defaults (vllm/config/lora.py): max_loras 1, max_lora_rank 16
  o.tensor_parallel_size = tp;
  o.max_num_batched_tokens = 8192;
  o.max_num_seqs = 256;
  return o;
}

// Llama-3.1-8B (config.json: hidden 4096, 32 layers, 32 heads, 8 KV heads, head_dim 128,
// intermediate 14336, vocab 128256, bf16). One layer's slots at rank 16 on one GPU, element by
// element from vLLM's wrappers (lora_estimate.h):
//   qkv_proj  lora_a 3 x (16, 4096)          lora_b (4096 + 2 x 1024, 16)
//   o_proj    lora_a (16, 4096)              lora_b (4096, 16)
//   gate_up   lora_a 2 x (16, 4096)          lora_b 2 x (14336, 16)
//   down_proj lora_a (16, 14336)             lora_b (4096, 16)
constexpr int64_t kLayerElemsTp1 = 3 * 16 * 4096 + (4096 + 2 * 1024) * 16 + 16 * 4096 + 4096 * 16 + 2 * 16 * 4096 +
                                   2 * 14336 * 16 + 16 * 14336 + 4096 * 16;
// TP 2: q 16 heads, KV 4 heads a rank; o_proj / down_proj split their input, gate_up its output.
constexpr int64_t kLayerElemsTp2 = 3 * 16 * 4096 + (2048 + 2 * 512) * 16 + 16 * 2048 + 4096 * 16 + 2 * 16 * 4096 +
                                   2 * 7168 * 16 + 16 * 7168 + 4096 * 16;
// embed_tokens: lora_a (128256, 16), lora_b (4096, 16); lm_head: lora_a (16, 4096), lora_b (128256, 16).
constexpr int64_t kTableElems = (128256 + 4096) * 16;

}  // namespace

TEST(LoraEstimate, LlamaSlotsAtTp1) {
  const LoraSlotBreakdown b = EstimateLoraSlots(Llama(), Rank16(1), 0, 32, true, true);
  EXPECT_EQ(kLayerElemsTp1, 1310720);
  EXPECT_EQ(b.decoder_layers_bytes, 32 * kLayerElemsTp1 * 2);  // bf16: 80 MiB
  EXPECT_EQ(b.embedding_bytes, kTableElems * 2);
  EXPECT_EQ(b.lm_head_bytes, kTableElems * 2);
  EXPECT_EQ(b.total_bytes, b.decoder_layers_bytes + b.embedding_bytes + b.lm_head_bytes + b.punica_metadata_bytes);
}

TEST(LoraEstimate, LlamaSlotsAtTp2AddTheLogitsMapping) {
  const LoraSlotBreakdown b = EstimateLoraSlots(Llama(), Rank16(2), 0, 32, true, true);
  EXPECT_EQ(b.decoder_layers_bytes, 32 * kLayerElemsTp2 * 2);
  EXPECT_EQ(b.embedding_bytes, kTableElems * 2);  // not split over TP
  // get_sharded_to_full_mapping at TP 2: one int64 per vocabulary row (128256 = 2004 x 64).
  EXPECT_EQ(b.lm_head_bytes, kTableElems * 2 + 128256 * 8);
}

TEST(LoraEstimate, SlotsScaleWithLorasRankAndDtype) {
  LoraOptions o = Rank16(1);
  const int64_t one = EstimateLoraSlots(Llama(), o, 0, 32, false, false).decoder_layers_bytes;
  o.max_loras = 4;
  o.max_lora_rank = 64;
  o.lora_dtype = "float16";  // the same size as bf16
  EXPECT_EQ(EstimateLoraSlots(Llama(), o, 0, 32, false, false).decoder_layers_bytes, 16 * one);
}

TEST(LoraEstimate, FullyShardedSplitsTheRankAndTheRowOutputs) {
  LoraOptions o = Rank16(2);
  o.fully_sharded_loras = true;
  // Column-parallel lora_a (8, in); row-parallel lora_b (2048, 16).
  constexpr int64_t kSharded = 3 * 8 * 4096 + (2048 + 2 * 512) * 16 + 16 * 2048 + 2048 * 16 + 2 * 8 * 4096 +
                               2 * 7168 * 16 + 16 * 7168 + 2048 * 16;
  EXPECT_EQ(EstimateLoraSlots(Llama(), o, 0, 32, false, false).decoder_layers_bytes, 32 * kSharded * 2);
  o.max_lora_rank = 8;
  o.tensor_parallel_size = 16;  // vLLM's divide(8, 16) asserts
  testing::ExpectInvalidArgument([&] { CheckLoraSupported(Llama(), o); }, "max_lora_rank");
}

TEST(LoraEstimate, PunicaMetadataFollowsTheScheduler) {
  // int64 (T) + 2 x int64 (S) + int64 (2, T), and int32 (T) x 2 + small per LoRAKernelMeta, in
  // 512-byte allocator blocks: 65,536 + 4,096 + 131,072 + 67,072 + 3,584.
  EXPECT_EQ(EstimateLoraSlots(Llama(), Rank16(1), 0, 0, false, false).punica_metadata_bytes, 271360);
}

TEST(LoraEstimate, RefusesMoeAndFamiliesWithoutALayout) {
  const ModelSpec mixtral = testing::BundledModel("mistralai--Mixtral-8x7B-Instruct-v0.1.json");
  EXPECT_THROW(CheckLoraSupported(mixtral, Rank16(1)), Unsupported);
  const ModelSpec qwen3_moe = testing::BundledModel("Qwen--Qwen3-30B-A3B.json");
  EXPECT_THROW(CheckLoraSupported(qwen3_moe, Rank16(1)), Unsupported);
}

TEST(LoraEstimate, ShrinkBufferIsFloat32) { EXPECT_EQ(LoraShrinkBufferBytes(2, 8192, 16), 2 * 8192 * 16 * 4); }

}  // namespace vllm_mem
