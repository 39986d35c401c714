// The verdict chain shared by the plan and the sweep (plan_verdict.h), and the lever table of
// the suggestions (plan_suggestions.h). The figures of the chain tests are inputs made up to put
// each phase first in line; every expectation follows from vLLM's start-up order
// (request_memory, load_model, profile_run, then check_enough_kv_cache_memory; vllm/v1/worker/
// gpu_worker.py) and from the inputs themselves.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "bundled_config.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/plan_suggestions.h"
#include "vllm_mem/plan/plan_verdict.h"
#include "vllm_mem/plan/startup_plan.h"

namespace vllm_mem {
namespace {

// One rank that fits every phase with 80 GiB free: 16 GiB weights, 20 GiB non-KV, 40 GiB of KV
// budget, 2 MiB blocks, 1 GiB per request.
VerdictFigures Fitting() {
  VerdictFigures f;
  f.requested_bytes = 72 * kGiB;
  f.free_memory_bytes = 80 * kGiB;
  AddRank(f, 16 * kGiB, 20 * kGiB, 40 * kGiB, 2 * kMiB, kGiB, 40 * kGiB / (2 * kMiB), true);
  return f;
}

}  // namespace

TEST(PlanVerdict, FitsWhenEveryPhasePasses) {
  const Verdict v = DecideVerdict(Fitting(), nullptr);
  EXPECT_TRUE(v.fits());
  EXPECT_EQ(v.shortfall_bytes, 0);
  EXPECT_TRUE(v.message.empty());
}

TEST(PlanVerdict, TheFirstFailingPhaseInVllmsOrderDecides) {
  // Every later phase fails too; each time the earliest one is named.
  VerdictFigures f = Fitting();
  f.free_memory_bytes = 10 * kGiB;  // below the weights, the non-KV terms and the request
  f.request_fits = false;
  f.kv_fits = false;
  const VerdictWords words{"request text", "kv text", false, 0, 0};
  Verdict v = DecideVerdict(f, &words);
  EXPECT_EQ(v.phase, FailurePhase::kFreeMemory);
  EXPECT_EQ(v.shortfall_bytes, 72 * kGiB - 10 * kGiB);
  EXPECT_EQ(v.message, "request text");
  f.request_fits = true;
  v = DecideVerdict(f, &words);
  EXPECT_EQ(v.phase, FailurePhase::kWeights);
  EXPECT_EQ(v.shortfall_bytes, 16 * kGiB - 10 * kGiB);
  EXPECT_EQ(v.message.rfind("Failed to load model - not enough GPU memory: the weights (16.0 GiB per GPU)", 0), 0u);
  f.free_memory_bytes = 18 * kGiB;  // the weights load, the profile run does not
  v = DecideVerdict(f, &words);
  EXPECT_EQ(v.phase, FailurePhase::kProfilePeak);
  EXPECT_EQ(v.shortfall_bytes, 20 * kGiB - 18 * kGiB);
  f.free_memory_bytes = 80 * kGiB;
  v = DecideVerdict(f, &words);
  EXPECT_EQ(v.phase, FailurePhase::kMaxModelLen);
  EXPECT_EQ(v.message, "kv text");
  EXPECT_EQ(v.shortfall_bytes, 0);  // this rank holds a request; the check said otherwise
}

TEST(PlanVerdict, KvShortfallIsTheWorstRanksAndNoBlockComesFirst) {
  VerdictFigures f;
  f.requested_bytes = 72 * kGiB;
  f.free_memory_bytes = 80 * kGiB;
  // Rank 0 holds 3 blocks but not a 10 MiB request; rank 1 has 1 MiB for 2 MiB blocks.
  AddRank(f, kGiB, kGiB, 7 * kMiB, 2 * kMiB, 10 * kMiB, 3, false);
  Verdict v = DecideVerdict(f, nullptr);
  EXPECT_EQ(v.phase, FailurePhase::kMaxModelLen);
  EXPECT_EQ(v.shortfall_bytes, 3 * kMiB);
  EXPECT_TRUE(v.message.empty());  // no words asked: the sweep's rows
  AddRank(f, kGiB, kGiB, kMiB, 2 * kMiB, 10 * kMiB, 0, false);
  v = DecideVerdict(f, nullptr);
  EXPECT_EQ(v.phase, FailurePhase::kNoKvBlocks);
  EXPECT_EQ(v.shortfall_bytes, kMiB);  // max(2 - 7, 2 - 1) MiB
  EXPECT_EQ(f.min_blocks, 0);
}

TEST(PlanVerdict, V0WordsItsOwnKvFailures) {
  // vllm/worker/worker.py raise_if_cache_size_invalid: max_model_len against blocks x block size.
  VerdictFigures f;
  f.requested_bytes = 72 * kGiB;
  f.free_memory_bytes = 80 * kGiB;
  AddRank(f, kGiB, kGiB, 100 * kMiB, 2 * kMiB, 256 * kMiB, 50, false);
  const VerdictWords words{"", "v1 text", true, 2048, 16};
  const Verdict v = DecideVerdict(f, &words);
  EXPECT_EQ(v.message,
            "The model's max seq len (2048) is larger than the maximum number of tokens that can be stored "
            "in KV cache (800). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.");
}

TEST(PlanVerdict, ThePlanSaysWhatTheChainSays) {
  // A T4 cannot load Llama-3.1-8B's 14.99 GiB at TP 1 (test_startup_plan.cc PhaseWeights).
  PlanInputs in;
  in.total_memory_bytes = LookupGpu("T4").total_memory_bytes;
  in.max_model_len = 8192;
  const ModelSpec llama = testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json");
  const StartupPlan p = EvaluatePlan(llama, in);
  VerdictFigures f;
  f.requested_bytes = p.requested_bytes;
  f.free_memory_bytes = p.inputs.free_memory_bytes;
  for (const RankPlan& r : p.ranks) {
    AddRank(f, r.weights_bytes, r.non_kv_cache_bytes, r.available_kv_cache_bytes, r.kv_bytes_per_block,
            r.kv_bytes_per_request, r.num_blocks, true);
  }
  const Verdict v = DecideVerdict(f, nullptr);
  EXPECT_EQ(v.phase, p.failure_phase);
  EXPECT_EQ(v.phase, FailurePhase::kWeights);
  EXPECT_EQ(v.shortfall_bytes, p.shortfall_bytes);
}

TEST(PlanLevers, TheTableIsOrderedAndEachLeverRunsAlone) {
  const std::vector<std::string> names = PlanLeverNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(names.back(), "smallest_combination");  // it reads what the others found
  // Llama-3.1-8B at its full 131072 context on an L4: the KV cache misses one request.
  const ModelSpec llama = testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json");
  PlanInputs in;
  in.total_memory_bytes = LookupGpu("L4").total_memory_bytes;
  const StartupPlan p = EvaluatePlan(llama, in);
  ASSERT_FALSE(p.fits);
  const bool kv_phase = p.failure_phase == FailurePhase::kMaxModelLen || p.failure_phase == FailurePhase::kNoKvBlocks;
  ASSERT_TRUE(kv_phase) << FailurePhaseName(p.failure_phase);
  const std::vector<PlanSuggestion> all = SuggestPlanChanges(llama, p);
  size_t found = 0;
  for (const std::string& name : names) {
    const std::vector<PlanSuggestion> one = TryPlanLever(llama, p, name);
    if (name == "lower_utilization") {
      EXPECT_TRUE(one.empty());  // a free-memory lever only
    }
    if (name == "smallest_combination") continue;               // alone it does not know what fits alone
    for (const PlanSuggestion& s : one) {
      bool listed = false;
      for (const PlanSuggestion& x : all) listed = listed || (x.setting == s.setting && x.bytes_freed == s.bytes_freed);
      EXPECT_TRUE(listed) << name << ": " << s.setting;
      ++found;
    }
  }
  EXPECT_GT(found, 0u);
  EXPECT_TRUE(TryPlanLever(llama, p, "no_such_lever").empty());
}

}  // namespace vllm_mem
