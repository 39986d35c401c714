#include <string>

#include <gtest/gtest.h>

#include "deepseek_v32_config.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/activation_estimate.h"
#include "vllm_mem/plan/sparse_mla_workspace.h"

namespace vllm_mem {
namespace {

SparseMlaWorkspaceOptions On(const std::string& cc, const std::string& kv, int64_t tp, int64_t len = 163840) {
  SparseMlaWorkspaceOptions o;
  o.gpu_known = true;
  o.compute_capability = cc;
  o.kv_cache_dtype = kv;
  o.tensor_parallel_size = tp;
  o.max_num_batched_tokens = 8192;
  o.max_model_len_tokens = len;
  return o;
}

// The release rules of vllm_versions.json sparse_mla_workspace, as its changes read.
SparseMlaWorkspaceRule Release(const std::string& v) {
  SparseMlaWorkspaceRule r{0, 0, 0, false, false, false, 128, true, 0, false, false};
  if (v >= "0.13") r.prefill_rows_per_max_model_len_tokens = 5;
  if (v >= "0.17") r.sm100_flashinfer_max_heads = 16;
  if (v >= "0.18") r.query_buffer = true;
  if (v >= "0.19") r.sm100_flashinfer_for_fp8 = true;
  if (v >= "0.25") r.sm90_flash_attn_for_bf16 = true;
  if (v >= "0.29") r.query_heads_padded_for_bf16_kv = true;
  if (v >= "0.31") r.fp8_mqa_prefill_buffers = true, r.keeps_views = false;
  return r;
}

constexpr int64_t kT = 8192;
constexpr int64_t kPrefill163840 = int64_t{5} * 163840 * 576 * 2;  // 943,718,400: vLLM's '~900 MB'

}  // namespace

TEST(SparseMlaWorkspace, HopperByReleaseByHand) {
  const ModelSpec m = testing::DeepseekV32DenseBody();
  // 0.11-0.12: no WorkspaceManager, nothing reserved (FlashMLA sparse is still the backend).
  const SparseMlaLoadWorkspace first = EstimateSparseMlaLoadWorkspace(m, On("9.0", "fp8", 8), Release("0.11"));
  EXPECT_TRUE(first.flashmla_sparse);
  EXPECT_EQ(first.reserved_bytes, 0);
  // 0.13: the fp8 prefill workspace alone; a bf16 cache reserves nothing.
  EXPECT_EQ(EstimateSparseMlaLoadWorkspace(m, On("9.0", "fp8", 8), Release("0.13")).reserved_bytes, kPrefill163840);
  EXPECT_EQ(EstimateSparseMlaLoadWorkspace(m, On("9.0", "auto", 8), Release("0.13")).reserved_bytes, 0);
  // 0.18: plus the query buffer, 8,192 tokens x 16 heads per rank x 576 bf16.
  const int64_t q16 = kT * 16 * 576 * 2;
  EXPECT_EQ(EstimateSparseMlaLoadWorkspace(m, On("9.0", "fp8", 8), Release("0.18")).reserved_bytes,
            q16 + kPrefill163840);
  EXPECT_EQ(EstimateSparseMlaLoadWorkspace(m, On("9.0", "auto", 8), Release("0.18")).reserved_bytes, q16);
  // 0.25: a bf16 cache goes to FlashAttention MLA sparse on SM90.
  const SparseMlaLoadWorkspace fa = EstimateSparseMlaLoadWorkspace(m, On("9.0", "auto", 8), Release("0.25"));
  EXPECT_FALSE(fa.flashmla_sparse);
  EXPECT_EQ(fa.reserved_bytes, 0);
  // 0.31 and the newest: three more token-sized buffers with fp8 (heads padded to 64).
  const int64_t mqa = kT * 64 * 576 * 2 + kT * 64 * 512 * 2 + kT * 16 * 512 * 2;
  EXPECT_EQ(EstimateSparseMlaLoadWorkspace(m, On("9.0", "fp8", 8), Release("0.31")).reserved_bytes,
            q16 + kPrefill163840 + mqa);
  EXPECT_EQ(EstimateSparseMlaLoadWorkspace(m, On("9.0", "fp8", 8), SparseMlaWorkspaceRule{}).reserved_bytes,
            int64_t{2369781760});
  // 0.32: the prefill workspace is 2 x max_model_len above 256K tokens.
  const int64_t len = 1048576;
  EXPECT_EQ(EstimateSparseMlaLoadWorkspace(m, On("9.0", "fp8", 8, len), SparseMlaWorkspaceRule{}).reserved_bytes,
            q16 + len * 2 * 576 * 2 + mqa);
  EXPECT_EQ(EstimateSparseMlaLoadWorkspace(m, On("9.0", "fp8", 8, len), Release("0.31")).reserved_bytes,
            q16 + len * 5 * 576 * 2 + mqa);
}

TEST(SparseMlaWorkspace, BlackwellPicksByHeadsAndDtype) {
  const ModelSpec m = testing::DeepseekV32DenseBody();
  // Before 0.17 FlashMLA sparse is the only sparse backend on SM100.
  EXPECT_TRUE(EstimateSparseMlaLoadWorkspace(m, On("10.0", "auto", 8), Release("0.13")).flashmla_sparse);
  // From 0.17 FlashInfer MLA sparse first at 16 heads per rank or fewer (TP 8), FlashMLA at 32 (TP 4).
  EXPECT_FALSE(EstimateSparseMlaLoadWorkspace(m, On("10.0", "auto", 8), Release("0.17")).flashmla_sparse);
  EXPECT_TRUE(EstimateSparseMlaLoadWorkspace(m, On("10.0", "auto", 4), Release("0.17")).flashmla_sparse);
  // From 0.19 an fp8 cache goes to FlashInfer whatever the heads.
  EXPECT_TRUE(EstimateSparseMlaLoadWorkspace(m, On("10.0", "fp8", 8), Release("0.18")).flashmla_sparse);
  EXPECT_FALSE(EstimateSparseMlaLoadWorkspace(m, On("10.0", "fp8", 4), Release("0.19")).flashmla_sparse);
  // 0.29-0.31: a bf16 cache's query heads padded to 128 on SM100 (32 -> 128); 64 from 0.32.
  EXPECT_EQ(EstimateSparseMlaLoadWorkspace(m, On("10.0", "auto", 4), Release("0.29")).reserved_bytes,
            kT * 128 * 576 * 2);
  EXPECT_EQ(EstimateSparseMlaLoadWorkspace(m, On("10.0", "auto", 4), SparseMlaWorkspaceRule{}).reserved_bytes,
            kT * 64 * 576 * 2);
  // Ampere, SM120 and AMD: never FlashMLA sparse; AMD and an unknown GPU are not modelled.
  EXPECT_FALSE(EstimateSparseMlaLoadWorkspace(m, On("8.0", "auto", 8), Release("0.20")).flashmla_sparse);
  EXPECT_FALSE(EstimateSparseMlaLoadWorkspace(m, On("12.0", "fp8", 8), Release("0.20")).flashmla_sparse);
  EXPECT_FALSE(EstimateSparseMlaLoadWorkspace(m, On("", "fp8", 8), Release("0.20")).modelled);
  SparseMlaWorkspaceOptions unknown = On("9.0", "fp8", 8);
  unknown.gpu_known = false;
  const SparseMlaLoadWorkspace u = EstimateSparseMlaLoadWorkspace(m, unknown, Release("0.20"));
  EXPECT_FALSE(u.modelled);
  EXPECT_EQ(u.reserved_bytes, 0);
}

TEST(SparseMlaWorkspace, NoIndexerNoBytesAndBadInputNamed) {
  ModelSpec m = testing::DeepseekV32DenseBody();
  m.mla->index_topk = 0;
  EXPECT_EQ(EstimateSparseMlaLoadWorkspace(m, On("9.0", "fp8", 8), Release("0.20")).reserved_bytes, 0);
  SparseMlaWorkspaceOptions bad = On("9.0", "fp8", 8);
  bad.max_num_batched_tokens = 0;
  try {
    EstimateSparseMlaLoadWorkspace(testing::DeepseekV32DenseBody(), bad, Release("0.20"));
    FAIL() << "max_num_batched_tokens 0 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "max_num_batched_tokens");
  }
}

TEST(SparseMlaWorkspace, ProfileGrowthKeepsOrFreesTheFirstBuffer) {
  EXPECT_EQ(SharedWorkspaceProfileGrowth(900, 1000, true), 0);
  EXPECT_EQ(SharedWorkspaceProfileGrowth(900, 1000, false), 0);
  EXPECT_EQ(SharedWorkspaceProfileGrowth(1500, 1000, true), 1500);  // the views keep the first alive
  EXPECT_EQ(SharedWorkspaceProfileGrowth(1500, 1000, false), 500);
  EXPECT_EQ(SharedWorkspaceProfileGrowth(1500, 0, true), 1500);
}

// The activation peak's shared-workspace term is what the profile run adds beyond the load reservation.
TEST(SparseMlaWorkspace, ActivationHoldsOnlyTheGrowth) {
  const ModelSpec m = testing::DeepseekV32DenseBody();
  ActivationOptions o;
  o.max_num_batched_tokens = 2048;
  o.max_num_seqs = 256;
  o.tensor_parallel_size = 8;
  o.max_model_len = 163840;
  const ActivationBreakdown none = EstimateActivationPeak(m, o);
  const int64_t request = none.sparse_indexer_workspace_bytes;  // 40 x 163,840 x 132 + 1 MiB
  ASSERT_EQ(none.moe_workspace_bytes, request);
  for (const bool keeps : {true, false}) {
    o.constants.sparse_mla_workspace.keeps_views = keeps;
    o.shared_workspace_reserved_bytes = kPrefill163840;  // larger than the request: nothing added
    const ActivationBreakdown fits = EstimateActivationPeak(m, o);
    EXPECT_EQ(fits.moe_workspace_bytes, 0);
    EXPECT_EQ(fits.shared_workspace_reserved_bytes, kPrefill163840);
    EXPECT_EQ(fits.mlp_intermediate_bytes, none.mlp_intermediate_bytes - request);
    o.shared_workspace_reserved_bytes = request / 2;
    EXPECT_EQ(EstimateActivationPeak(m, o).moe_workspace_bytes, keeps ? request : request - request / 2);
  }
}

}  // namespace vllm_mem
