#include <algorithm>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "deepseek_v32_config.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/activation_estimate.h"
#include "vllm_mem/plan/sparse_indexer_profile.h"

namespace vllm_mem {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// vLLM 0.11-0.12: get_max_prefill_buffer_size = 2 x max_model_len keys, and sparse_attn_indexer_fake's
// torch tensors: [keys, 128 + 4] uint8, its [keys, 128] fp8 copy and its [keys, 1] float32 copy,
// each a caching-allocator block (a multiple of 512 bytes).
SparseIndexerProfile Release011() { return {2, false, 0, 0, 0, 0}; }
// vLLM 0.20-0.31: 40 keys per token at every length, with the top-k workspace and the logits stand-in.
SparseIndexerProfile Release020() { return {40, true, kMiB, 512 * kMiB, 0, 0}; }

int64_t Block(int64_t bytes) { return (bytes + 511) / 512 * 512; }

}  // namespace

TEST(SparseIndexerProfile, NewestReleaseByHand) {
  const ModelSpec m = testing::DeepseekV32DenseBody();
  for (const int64_t len : {int64_t{163840}, int64_t{32768}}) {
    const SparseIndexerProfileBytes b = EstimateSparseIndexerProfile(m, len, SparseIndexerProfile{});
    const int64_t keys = 40 * len;
    EXPECT_EQ(b.keys, keys);
    // One WorkspaceManager request: keys x 128 fp8 values, keys x 4 scale bytes, the 1 MiB radix
    // top-k workspace (each already a multiple of 256 bytes here).
    EXPECT_EQ(b.workspace_bytes, keys * 128 + keys * 4 + kMiB);
    // The 512 MiB stand-in for the prefill logits, freed when the op returns.
    EXPECT_EQ(b.transient_bytes, 512 * kMiB);
  }
  // vLLM's own comment: 40 x 163,840 x 132 = 865,075,200 bytes.
  EXPECT_EQ(EstimateSparseIndexerProfile(m, 163840, SparseIndexerProfile{}).workspace_bytes, 865075200 + kMiB);
}

// vLLM 0.32: sparse_mla_prefill_workspace_factor defaults to 5 up to 256K tokens, 2 above, so
// get_max_prefill_buffer_size is max_model_len x (576 * 2 // 132 = 8) x 5 or x 2.
TEST(SparseIndexerProfile, LongContextFactorFrom032ByHand) {
  const ModelSpec m = testing::DeepseekV32DenseBody();
  const SparseIndexerProfile newest{};
  for (const int64_t len : {int64_t{262144}, int64_t{262145}, int64_t{1048576}}) {
    const int64_t keys = (len <= 262144 ? 40 : 16) * len;
    const SparseIndexerProfileBytes b = EstimateSparseIndexerProfile(m, len, newest);
    EXPECT_EQ(b.keys, keys);
    EXPECT_EQ(b.workspace_bytes, (keys * 128 + 255) / 256 * 256 + (keys * 4 + 255) / 256 * 256 + kMiB);
    // 0.20-0.31 keep 40 keys per token at any length.
    EXPECT_EQ(EstimateSparseIndexerProfile(m, len, Release020()).keys, 40 * len);
  }
  // 1M tokens: 16M keys x 132 bytes + 1 MiB = 2,015 MiB, against 5,036 MiB at 40 keys per token.
  EXPECT_EQ(EstimateSparseIndexerProfile(m, 1048576, newest).workspace_bytes, int64_t{16777216} * 132 + kMiB);
}

TEST(SparseIndexerProfile, FirstReleaseByHand) {
  const ModelSpec m = testing::DeepseekV32DenseBody();
  for (const int64_t len : {int64_t{163840}, int64_t{32768}, int64_t{1000}}) {
    const SparseIndexerProfileBytes b = EstimateSparseIndexerProfile(m, len, Release011());
    const int64_t keys = 2 * len;
    EXPECT_EQ(b.keys, keys);
    EXPECT_EQ(b.workspace_bytes, 0);
    EXPECT_EQ(b.transient_bytes, Block(keys * 132) + Block(keys * 128) + Block(keys * 4));
  }
  EXPECT_EQ(EstimateSparseIndexerProfile(m, 163840, Release011()).transient_bytes, int64_t{327680} * 264);
}

TEST(SparseIndexerProfile, NoIndexerNoBytesAndBadLengthNamed) {
  ModelSpec m = testing::DeepseekV32DenseBody();
  m.mla->index_head_dim = 0;
  const SparseIndexerProfileBytes none = EstimateSparseIndexerProfile(m, 163840, SparseIndexerProfile{});
  EXPECT_EQ(none.keys + none.workspace_bytes + none.transient_bytes, 0);
  try {
    EstimateSparseIndexerProfile(testing::DeepseekV32DenseBody(), 0, SparseIndexerProfile{});
    FAIL() << "max_model_len 0 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "max_model_len");
  }
}

// The profile peak moves by exactly the indexer's terms: its request joins the persistent workspace
// every MLP layer and the sampler run over, its transient tensors the attention layer's.
TEST(SparseIndexerProfile, ActivationPeakMovesByTheIndexerTerms) {
  const ModelSpec m = testing::DeepseekV32DenseBody();
  for (const int64_t len : {int64_t{163840}, int64_t{32768}}) {
    ActivationOptions o;
    o.max_num_batched_tokens = 2048;
    o.max_num_seqs = 256;
    o.tensor_parallel_size = 8;
    o.max_model_len = len;
    ActivationOptions off = o;
    off.constants.sparse_indexer = {0, true, 0, 0, 0, 0};  // no keys, no top-k workspace, no logits stand-in
    const ActivationBreakdown base = EstimateActivationPeak(m, off);
    ASSERT_EQ(base.moe_workspace_bytes, 0);
    const ActivationBreakdown b = EstimateActivationPeak(m, o);
    const int64_t ws = 40 * len * 132 + kMiB;
    const int64_t transient = 512 * kMiB;
    EXPECT_EQ(b.sparse_indexer_workspace_bytes, ws);
    EXPECT_EQ(b.sparse_indexer_transient_bytes, transient);
    EXPECT_EQ(b.moe_workspace_bytes, ws);
    EXPECT_EQ(b.mlp_intermediate_bytes, base.mlp_intermediate_bytes + ws);
    EXPECT_EQ(b.attention_bytes, base.attention_bytes + transient);
    EXPECT_EQ(b.forward_bytes, base.hidden_states_bytes +
                                   std::max(base.mlp_intermediate_bytes + ws, base.attention_bytes + transient + ws));
    EXPECT_EQ(b.sampler_phase_bytes, base.sampler_phase_bytes + ws);
    EXPECT_EQ(b.peak_bytes, std::max(b.forward_bytes, b.sampler_phase_bytes));
  }
}

// DeepSeek-V3.2's MTP layer carries the indexer: the drafter's dummy run takes the op's profile branch
// too, so its attention layer holds the 512 MiB logits stand-in over the shared workspace (the same
// request as the target's, already held).
TEST(SparseIndexerProfile, MtpDrafterPassHoldsItsOwnTransient) {
  const ModelSpec m = testing::DeepseekV32DenseBody();
  ModelSpec mtp = m;
  mtp.num_layers = 1;
  mtp.layers.resize(1);
  ActivationOptions o;
  o.max_num_batched_tokens = 2048;
  o.max_num_seqs = 256;
  o.tensor_parallel_size = 8;
  o.max_model_len = 32768;
  o.drafter = std::make_shared<const ModelSpec>(mtp);
  o.drafter_tensor_parallel_size = 8;
  ActivationOptions off = o;
  off.constants.sparse_indexer = {0, true, 0, 0, 0, 0};
  const ActivationBreakdown base = EstimateActivationPeak(m, off);
  const ActivationBreakdown b = EstimateActivationPeak(m, o);
  const int64_t ws = 40 * 32768 * 132 + kMiB;
  const int64_t hidden_out = base.drafter_phase_bytes - std::max(base.mlp_intermediate_bytes, base.attention_bytes);
  EXPECT_EQ(b.drafter_phase_bytes,
            hidden_out + std::max(base.mlp_intermediate_bytes + ws, base.attention_bytes + 512 * kMiB + ws));
}

}  // namespace vllm_mem
