// --max-model-len auto / -1 (vLLM's auto-fit, PR #29431, from 0.14) through the settings table:
// the plan, the KV entry points' options, the sweep and the release's refusal before the rule.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bundled_config.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/kv_cache/kv_cache_layout.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/plan_request.h"
#include "vllm_mem/plan/plan_sweep.h"
#include "vllm_mem/plan/release_resolution.h"
#include "vllm_mem/plan/startup_plan.h"

namespace vllm_mem {
namespace {

const ModelSpec& Llama() {
  static const ModelSpec spec = testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json");
  return spec;
}

// Llama-3.1-8B (its config.json): 32 layers x 8 KV heads x head_dim 128 x (K, V) x 2 bytes
// (bfloat16) = 131,072 B per token; a 16-token block (vLLM's FullAttentionSpec page) is 2 MiB.
// max_position_embeddings 131,072 with llama3 rope scaling, which vLLM does not multiply in
// (_get_and_verify_max_len skips su/longrope/llama3): the derived maximum is 131,072.
constexpr int64_t kBytesPerToken = 32 * 8 * 128 * 2 * 2;
constexpr int64_t kPageBytes = 16 * kBytesPerToken;
constexpr int64_t kDerivedLen = 131072;

PlanInputs H100(double util, int64_t max_model_len, const std::string& version = "0.21") {
  PlanInputs in;
  in.vllm_version = version;
  in.total_memory_bytes = LookupGpu("H100-80GB").total_memory_bytes;
  in.gpu_memory_utilization = util;
  in.max_model_len = max_model_len;
  return in;
}

// vLLM's _estimate_max_model_len_from_groups for one full-attention group: the largest L with
// cdiv(L, 16) pages <= the budget, i.e. whole blocks of 16 tokens, capped at the derived length.
int64_t FullAttentionFit(int64_t available_bytes) {
  return std::min<int64_t>(kDerivedLen, available_bytes / kPageBytes * 16);
}

}  // namespace

TEST(MaxModelLenAuto, TheRowTakesMinusOneAndNamesAutoInItsBounds) {
  const SettingRow& row = *FindSettingRow("max_model_len");
  EXPECT_EQ(row.auto_int, kMaxModelLenAuto);
  EXPECT_STREQ(row.auto_text, "auto");
  EXPECT_NO_THROW(ValidateSetting(row, kMaxModelLenAuto));
  try {
    ValidateSetting(row, int64_t{-2});
    FAIL() << "-2 is no length and not vLLM's auto";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("or auto (-1)"), std::string::npos) << e.what();
  }
}

TEST(MaxModelLenAuto, ReducedToTheLongestLengthTheBudgetHolds) {
  // 0.3 of an H100 leaves a KV budget far below the 16 GiB one 131,072-token request needs.
  const StartupPlan full = EvaluatePlan(Llama(), H100(0.3, 0));
  ASSERT_EQ(full.failure_phase, FailurePhase::kMaxModelLen);
  const StartupPlan p = EvaluatePlan(Llama(), H100(0.3, kMaxModelLenAuto));
  ASSERT_TRUE(p.fits) << p.failure_message;
  EXPECT_EQ(p.request.max_model_len, kMaxModelLenAuto);  // what was asked stays as asked
  EXPECT_TRUE(p.inputs.max_model_len_auto);
  EXPECT_EQ(p.auto_fit_from_max_model_len, kDerivedLen);
  const int64_t fitted = FullAttentionFit(p.available_kv_cache_bytes);
  ASSERT_LT(fitted, kDerivedLen);
  EXPECT_EQ(p.inputs.max_model_len, fitted);
  ASSERT_TRUE(p.kv_cache.has_value());
  EXPECT_EQ(p.kv_cache->max_model_len, fitted);
  EXPECT_EQ(p.ranks[0].kv_bytes_per_request, fitted / 16 * kPageBytes);
  EXPECT_EQ(AutoFitLine(p), "Auto-fit max_model_len: reduced from 131072 to " + std::to_string(fitted) +
                                " to fit in available GPU memory (" + FormatGib(p.available_kv_cache_bytes) +
                                " GiB available for KV cache)");
  // vLLM sized the scheduler and ran the profile at the derived length, before it knew its
  // budget, and kept them: the same figures as the plan of the full length.
  EXPECT_EQ(p.inputs.max_num_batched_tokens, full.inputs.max_num_batched_tokens);
  EXPECT_EQ(p.inputs.max_num_seqs, full.inputs.max_num_seqs);
  EXPECT_EQ(p.activation_peak_bytes, full.activation_peak_bytes);
  EXPECT_EQ(p.cudagraph_bytes, full.cudagraph_bytes);
  EXPECT_EQ(p.available_kv_cache_bytes, full.available_kv_cache_bytes);
  // The length the fit settled on, asked for, is a plan that fits with the same blocks.
  const StartupPlan asked = EvaluatePlan(Llama(), H100(0.3, fitted));
  ASSERT_TRUE(asked.fits);
  EXPECT_EQ(asked.kv_cache->num_blocks, p.kv_cache->num_blocks);
}

TEST(MaxModelLenAuto, TheFullLengthWhenItFits) {
  const StartupPlan p = EvaluatePlan(Llama(), H100(0.92, kMaxModelLenAuto));
  ASSERT_TRUE(p.fits);
  EXPECT_EQ(p.inputs.max_model_len, kDerivedLen);
  EXPECT_EQ(AutoFitLine(p), "Auto-fit max_model_len: full model context length 131072 fits in available GPU memory");
  EXPECT_EQ(AutoFitLine(EvaluatePlan(Llama(), H100(0.92, 0))), "");  // not asked: no line
}

TEST(MaxModelLenAuto, NotOneTokenIsVllmsValueError) {
  const StartupPlan p = EvaluatePlan(Llama(), H100(0.2, kMaxModelLenAuto));  // weights alone pass 0.2
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.failure_message, kCannotAutoFitMessage);
  EXPECT_EQ(p.inputs.max_model_len, kDerivedLen);  // vLLM raises before it changes the length
  EXPECT_EQ(AutoFitLine(p), "");
}

TEST(MaxModelLenAuto, RefusedBeforeTheRelease) {
  // The rule max_model_len_auto: PR #29431 is in vLLM's weekly summary of 2025-12-26, after
  // v0.13.0 (2025-12-19): 0.13 has no auto-fit.
  try {
    EvaluatePlan(Llama(), H100(0.9, kMaxModelLenAuto, "0.13"));
    FAIL() << "0.13 has no auto-fit";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "max_model_len");
    const std::string what = e.what();
    EXPECT_NE(what.find("auto-fit from 0.14.0"), std::string::npos) << what;
    EXPECT_NE(what.find("invalid human_readable_int value: 'auto'"), std::string::npos) << what;
    EXPECT_LE(what.size(), 300U);  // docs/errors.md
  }
  EXPECT_TRUE(EvaluatePlan(Llama(), H100(0.3, kMaxModelLenAuto, "0.14")).fits);
  KvCacheSettings kv;
  kv.max_model_len = kMaxModelLenAuto;
  kv.vllm_version = "0.13";
  EXPECT_THROW(KvOptionsForRelease(kv), InvalidArgument);
}

TEST(MaxModelLenAuto, KvQuestionsFitToTheirBudget) {
  const KvCacheLayoutCache cache(Llama());
  KvCacheSettings kv;
  kv.max_model_len = kMaxModelLenAuto;
  KvCacheOptions o = KvOptionsForRelease(kv);
  const std::vector<int64_t> budget = {100 * kPageBytes + 5};
  AutoFitKvOptions(cache, budget, o);
  EXPECT_EQ(o.max_model_len, 1600);  // 100 whole blocks of 16 tokens
  EXPECT_EQ(ComputeKvCacheCapacity(cache, budget, o).max_model_len, 1600);
  KvCacheOptions none = KvOptionsForRelease(kv);
  EXPECT_EQ(KvShortfallAutoFitted(cache, {kPageBytes - 1}, none), kCannotAutoFitMessage);
  EXPECT_THROW(AutoFitKvOptions(cache, {kPageBytes - 1}, none), InsufficientMemory);
  EXPECT_EQ(KvShortfallAutoFitted(cache, budget, KvOptionsForRelease(kv)), "");
  KvCacheOptions bound = KvOptionsForRelease(kv);
  BoundAutoMaxModelLen(Llama(), bound);
  EXPECT_EQ(bound.max_model_len, kDerivedLen);
}

TEST(MaxModelLenAuto, SweepRowsEachFitTheirOwnBudget) {
  SweepAxes axes;
  axes.base = H100(0.3, 0);
  axes.gpu_memory_utilization = {0.3, 0.92};
  axes.max_model_len = {kMaxModelLenAuto};
  const SweepColumns c = RunSweep(Llama(), axes);
  ASSERT_EQ(c.num_rows, 2);
  EXPECT_EQ(c.num_fast_rows, 0);  // a fitted length depends on the row's budget: whole plans
  for (size_t i = 0; i < 2; ++i) {
    const StartupPlan p = EvaluatePlan(Llama(), H100(c.gpu_memory_utilization[i], kMaxModelLenAuto));
    EXPECT_EQ(c.max_model_len[i], p.inputs.max_model_len);
    EXPECT_EQ(c.num_blocks[i], p.kv_cache->num_blocks);
  }
  EXPECT_LT(c.max_model_len[0], kDerivedLen);
  EXPECT_EQ(c.max_model_len[1], kDerivedLen);
}

}  // namespace vllm_mem
