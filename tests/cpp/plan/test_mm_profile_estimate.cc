#include <gtest/gtest.h>

#include "expect_invalid_argument.h"
#include "vllm_mem/plan/mm_profile_estimate.h"

namespace vllm_mem {

namespace {

MmBudgetOptions H100Server(int64_t max_tokens_per_item) {
  MmBudgetOptions o;  // vLLM's API-server defaults on an H100 (the held-out start-ups print them)
  o.max_tokens_per_item = max_tokens_per_item;
  o.max_num_batched_tokens = 8192;
  o.max_num_seqs = 1024;
  o.max_model_len = 8192;
  return o;
}

}  // namespace

// Mistral-Small-3.1 (Pixtral, 1540 px, patch 14, merge 2): (55 + 1) x 55 = 3080 tokens per image.
// The v0.19.0 TP 1 start-up (tests/data/heldout_startups.jsonl) printed "Encoder cache will be
// initialized with a budget of 8192 tokens, and profiled with 2 image items".
TEST(MmEncoderBudget, MistralSmallProfilesTwoImages) {
  const MmEncoderBudget b = ComputeMmEncoderBudget(H100Server(3080));
  EXPECT_EQ(b.encoder_budget_tokens, 8192);
  EXPECT_EQ(b.encoder_compute_budget_tokens, 8192);
  EXPECT_EQ(b.encoder_cache_size_tokens, 8192);
  EXPECT_EQ(b.max_items_per_prompt, 2);  // 8192 // 3080
  EXPECT_EQ(b.max_items_per_batch, 2);
}

// Gemma-3 (mm_tokens_per_image 256): the v0.23.0 Gemma-3-4B start-up
// (tests/data/vllm_release_logs.json, orbit-gemma-3-4b-mi300x-v0.23.0) printed "a budget of 8192
// tokens, and profiled with 32 image items".
TEST(MmEncoderBudget, GemmaProfilesThirtyTwoImages) {
  const MmEncoderBudget b = ComputeMmEncoderBudget(H100Server(256));
  EXPECT_EQ(b.encoder_budget_tokens, 8192);
  EXPECT_EQ(b.max_items_per_batch, 32);
}

// An item larger than the batch widens the budget to one item: compute_mm_encoder_budget's
// max(max_num_batched_tokens, max_tokens_per_item). A Qwen3.5 start-up printed "a budget of 16384
// tokens, and profiled with 1 image items" (Qwen2-VL-style processors: 16384 tokens per image).
TEST(MmEncoderBudget, OneItemLargerThanTheBatch) {
  const MmEncoderBudget b = ComputeMmEncoderBudget(H100Server(16384));
  EXPECT_EQ(b.encoder_budget_tokens, 16384);
  EXPECT_EQ(b.max_items_per_prompt, 1);  // max(1, min(limit, 8192 // 16384))
  EXPECT_EQ(b.max_items_per_batch, 1);
}

TEST(MmEncoderBudget, LimitsBoundTheBatch) {
  MmBudgetOptions o = H100Server(256);
  o.limit_per_prompt = 0;  // --limit-mm-per-prompt '{"image": 0}': no encoder cache, no profile run
  EXPECT_EQ(ComputeMmEncoderBudget(o).encoder_budget_tokens, 0);
  EXPECT_EQ(ComputeMmEncoderBudget(o).max_items_per_batch, 0);
  o = H100Server(256);
  o.limit_per_prompt = 1;
  o.max_num_seqs = 4;  // the decoder side: 4 requests x 1 image
  EXPECT_EQ(ComputeMmEncoderBudget(o).max_items_per_prompt, 1);
  EXPECT_EQ(ComputeMmEncoderBudget(o).max_items_per_batch, 4);
  o = H100Server(3080);
  o.chunked_prefill = false;  // requests bounded by max_num_batched_tokens // tokens per item
  o.max_num_seqs = 1;
  EXPECT_EQ(ComputeMmEncoderBudget(o).max_items_per_batch, 2);
}

TEST(MmEncoderBudget, RefusesBadCountsByName) {
  MmBudgetOptions o = H100Server(0);
  testing::ExpectInvalidArgument([&] { ComputeMmEncoderBudget(o); }, "max_tokens_per_item");
  o = H100Server(256);
  o.limit_per_prompt = -2;
  testing::ExpectInvalidArgument([&] { ComputeMmEncoderBudget(o); }, "limit_mm_per_prompt");
  o = H100Server(256);
  o.max_num_seqs = 0;
  testing::ExpectInvalidArgument([&] { ComputeMmEncoderBudget(o); }, "max_num_seqs");
}

TEST(MmProfile, TextModelHasNone) {
  ModelSpec text;  // no vision tower
  const MmProfileBreakdown m = EstimateMmProfile(text, MmProfileOptions{});
  EXPECT_FALSE(m.modelled);
  EXPECT_FALSE(m.runs);
  EXPECT_EQ(m.resident_bytes, 0);
  EXPECT_EQ(m.encoder_phase_bytes, 0);
}

}  // namespace vllm_mem
