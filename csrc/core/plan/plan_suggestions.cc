/*!
 * \file core/plan/plan_suggestions.cc
 * \brief Levers for a plan that does not fit, each checked by re-planning.
 */
#include "vllm_mem/plan/plan_suggestions.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "core/base/binary_search.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

// The failing phase's margin (bytes per GPU; negative = short). Measured the same way before
// and after a change, so "bytes freed" is the change in this margin.
int64_t Slack(const StartupPlan& p, FailurePhase phase) {
  const int64_t free = p.inputs.free_memory_bytes;
  int64_t worst_weights = 0, worst_profile = 0;
  int64_t kv = INT64_MAX;
  for (const auto& r : p.ranks) {
    worst_weights = std::max(worst_weights, r.weights_bytes);
    worst_profile = std::max(worst_profile, r.non_kv_cache_bytes);
    const int64_t need = phase == FailurePhase::kNoKvBlocks ? r.kv_bytes_per_block : r.kv_bytes_per_request;
    kv = std::min(kv, r.available_kv_cache_bytes - need);
  }
  switch (phase) {
    case FailurePhase::kFreeMemory: return free - p.requested_bytes;
    case FailurePhase::kWeights: return free - worst_weights;
    case FailurePhase::kProfilePeak: return free - worst_profile;
    default: return kv;
  }
}

std::optional<StartupPlan> TryPlan(const ModelSpec& spec, const PlanInputs& in) {
  try {
    return EvaluatePlan(spec, in);
  } catch (const InvalidArgument&) {
    return std::nullopt;  // e.g. a TP the heads do not divide: not a lever here
  } catch (const Unsupported&) {
    return std::nullopt;
  }
}

// Inputs with the assumed free memory restored to "assume", so a changed TP re-derives it.
PlanInputs BaseInputs(const StartupPlan& plan) {
  PlanInputs in = plan.inputs;
  if (plan.free_memory_assumed) in.free_memory_bytes = -1;
  return in;
}

// A lever that does not fit alone is listed only when it frees at least what the report can
// show (0.01 GiB): "frees 0.00 GiB" is a lever that frees nothing to the reader.
constexpr int64_t kMinUsefulBytes = kGiB / 100;

std::string FormatUtil(int64_t thousandths) {
  std::string s = FormatFixed(static_cast<double>(thousandths) / 1000.0, 3);
  while (s.size() > 3 && s.back() == '0') s.pop_back();
  return s;
}

/*! What every lever reads, and where its suggestion goes. */
struct LeverContext {
  const ModelSpec& spec;
  const StartupPlan& plan;
  FailurePhase phase = FailurePhase::kNone;
  int64_t before = 0;  //!< the failing phase's margin before any change
  PlanInputs base;     //!< the plan's inputs, free memory re-derived when it was assumed
  bool kv_phase = false;      //!< failed at the KV cache (no block, or not one request)
  bool memory_phase = false;  //!< failed loading the weights or in the profile run
  int64_t max_util_k = 0;     //!< the largest utilization (thousandths) free memory allows
  int64_t current_k = 0;      //!< the plan's utilization, in thousandths rounded up
  std::vector<PlanSuggestion>& out;

  /*! Lists the change when it fits or frees what the report can show. */
  void Add(const std::string& lever, const std::string& direction, const std::string& value, const std::string& setting,
           const StartupPlan& after, const std::string& reason) const {
    PlanSuggestion s{lever, direction, value, setting, Slack(after, phase) - before, after.fits, reason};
    if (s.bytes_freed >= kMinUsefulBytes || s.fits_after) out.push_back(std::move(s));
  }
  template <typename Change>
  std::optional<StartupPlan> PlanWith(Change&& change) const {
    PlanInputs in = base;
    change(in);
    return TryPlan(spec, in);
  }
  template <typename Change>
  bool FitsWith(Change&& change) const {
    auto p = PlanWith(change);
    return p && p->fits;
  }
  /*! Gets past the failing phase (fits, or fails only at a later phase of vLLM's start-up). */
  template <typename Change>
  bool PassesPhaseWith(Change&& change) const {
    auto p = PlanWith(change);
    return p && (p->fits || static_cast<int>(p->failure_phase) > static_cast<int>(phase));
  }
  /*! The largest value in [lo, hi] set by \p set that fits; failing that, that clears the phase. */
  template <typename Set>
  std::optional<int64_t> LargestWorking(int64_t lo, int64_t hi, Set&& set) const {
    auto best = LargestHolding(lo, hi, [&](int64_t v) { return FitsWith([&](PlanInputs& in) { set(in, v); }); });
    if (best) return best;
    return LargestHolding(lo, hi, [&](int64_t v) { return PassesPhaseWith([&](PlanInputs& in) { set(in, v); }); });
  }
};

void SetUtilization(PlanInputs& in, int64_t thousandths) {
  in.gpu_memory_utilization = static_cast<double>(thousandths) / 1000.0;
}

/*! Free memory below the request: utilization is a fraction of the total, so ask for less. */
void LowerUtilization(const LeverContext& c) {
  if (c.phase != FailurePhase::kFreeMemory || c.max_util_k < 1) return;
  const int64_t total = c.plan.inputs.total_memory_bytes, free = c.plan.inputs.free_memory_bytes;
  if (auto p = c.PlanWith([&](PlanInputs& in) { SetUtilization(in, c.max_util_k); })) {
    c.Add("gpu_memory_utilization", "decrease", FormatUtil(c.max_util_k),
          "--gpu-memory-utilization " + FormatUtil(c.max_util_k), *p,
          "utilization is a fraction of TOTAL memory; only " + FormatGib(free) + " GiB of " + FormatGib(total) +
              " GiB is free at start-up, so at most " + FormatUtil(c.max_util_k) + " can be requested");
  }
}

/*! The KV cache short: the smallest utilization that fits (the fit is monotone in it), or all
 *  that free memory allows when none does (it pairs with a shorter context below). */
void RaiseUtilization(const LeverContext& c) {
  if (!c.kv_phase || c.current_k >= c.max_util_k) return;
  const auto fits_at = [&](int64_t k) { return c.FitsWith([&](PlanInputs& in) { SetUtilization(in, k); }); };
  if (const auto lo = SmallestHolding(c.current_k + 1, c.max_util_k, fits_at)) {
    if (auto p = c.PlanWith([&](PlanInputs& in) { SetUtilization(in, *lo); })) {
      c.Add("gpu_memory_utilization", "increase", FormatUtil(*lo), "--gpu-memory-utilization " + FormatUtil(*lo), *p,
            "raises the budget to " + FormatGib(p->requested_bytes) + " GiB; the KV cache gets what the profile leaves");
    }
  } else if (auto p = c.PlanWith([&](PlanInputs& in) { SetUtilization(in, c.max_util_k); })) {
    c.Add("gpu_memory_utilization", "increase", FormatUtil(c.max_util_k),
          "--gpu-memory-utilization " + FormatUtil(c.max_util_k), *p,
          "raises the budget to " + FormatGib(p->requested_bytes) + " GiB, as far as the " +
              FormatGib(c.plan.inputs.free_memory_bytes) + " GiB free at start-up allows");
  }
}

/*! Fewer sequences: fewer sampler rows in the profile run (and smaller graphs). */
void FewerSeqs(const LeverContext& c) {
  if (!c.kv_phase && c.phase != FailurePhase::kProfilePeak) return;
  const auto best = c.LargestWorking(1, c.plan.inputs.max_num_seqs - 1, [](PlanInputs& in, int64_t v) { in.max_num_seqs = v; });
  if (!best) return;
  if (auto p = c.PlanWith([&](PlanInputs& in) { in.max_num_seqs = *best; })) {
    c.Add("max_num_seqs", "decrease", std::to_string(*best), "--max-num-seqs " + std::to_string(*best), *p,
          "fewer sampler rows (" + std::to_string(*best) + " x vocab) in the profile run");
  }
}

/*! Fewer batched tokens: a smaller profile forward. */
void FewerBatchedTokens(const LeverContext& c) {
  if (!c.kv_phase && c.phase != FailurePhase::kProfilePeak) return;
  const int64_t tokens = c.plan.inputs.max_num_batched_tokens;
  const int64_t floor_tokens = std::min<int64_t>(c.plan.inputs.max_num_seqs, tokens - 1);
  const auto best = c.LargestWorking(std::max<int64_t>(1, floor_tokens), tokens - 1,
                                     [](PlanInputs& in, int64_t v) { in.max_num_batched_tokens = v; });
  if (!best) return;
  if (auto p = c.PlanWith([&](PlanInputs& in) { in.max_num_batched_tokens = *best; })) {
    c.Add("max_num_batched_tokens", "decrease", std::to_string(*best),
          "--max-num-batched-tokens " + std::to_string(*best), *p,
          "a smaller profile forward (chunked prefill keeps long prompts working)");
  }
}

/*! The graph pool counts against the KV budget (the release estimates it there). */
bool GraphsInBudget(const LeverContext& c) {
  return c.kv_phase && !c.plan.inputs.enforce_eager && c.plan.inputs.cudagraph_memory_in_budget.value_or(false) &&
         c.plan.cudagraph_bytes > 0;
}

void SetCaptureSize(PlanInputs& in, int64_t size) {
  in.max_cudagraph_capture_size = size;
  in.cudagraph_capture_sizes.clear();
}

/*! The largest capture size below the current largest that fits. Fewer and smaller graphs never
 *  need more memory, so the fit is monotone in the size and a binary search over the (sorted,
 *  distinct) sizes finds it in log2(n) plans; one plan per size took seconds for a large
 *  capture size (fuzzing). */
void FewerCudaGraphs(const LeverContext& c) {
  if (!GraphsInBudget(c)) return;
  const auto& sizes = c.plan.ranks.front().cudagraph.capture_sizes;
  if (sizes.size() < 2) return;
  const auto best_index = LargestHolding(0, static_cast<int64_t>(sizes.size()) - 2, [&](int64_t i) {
    return c.FitsWith([&](PlanInputs& in) { SetCaptureSize(in, sizes[static_cast<size_t>(i)]); });
  });
  if (!best_index) return;
  const int64_t best = sizes[static_cast<size_t>(*best_index)];
  if (auto p = c.PlanWith([&](PlanInputs& in) { SetCaptureSize(in, best); })) {
    c.Add("max_cudagraph_capture_size", "decrease", std::to_string(best),
          "--compilation-config '{\"max_cudagraph_capture_size\": " + std::to_string(best) + "}'", *p,
          "fewer CUDA graphs to capture; batches above " + std::to_string(best) + " run eagerly");
  }
}

void NoCudaGraphs(const LeverContext& c) {
  if (!GraphsInBudget(c)) return;
  if (auto p = c.PlanWith([](PlanInputs& in) { in.enforce_eager = true; })) {
    c.Add("enforce_eager", "set", "true", "--enforce-eager", *p, "no CUDA graphs: frees the graph pool at some decode speed");
  }
}

bool KvDtypeIsAuto(const PlanInputs& in) { return in.kv_cache_dtype.empty() || in.kv_cache_dtype == "auto"; }

/*! KV storage: fp8 halves the bytes per token of a 16-bit cache. */
void Fp8KvCache(const LeverContext& c) {
  if (!c.kv_phase || !KvDtypeIsAuto(c.plan.inputs) || c.plan.kv_cache != std::nullopt) return;
  if (auto p = c.PlanWith([](PlanInputs& in) { in.kv_cache_dtype = "fp8"; })) {
    if (p->ranks.front().kv_bytes_per_block < c.plan.ranks.front().kv_bytes_per_block) {
      c.Add("kv_cache_dtype", "set", "fp8", "--kv-cache-dtype fp8", *p, "8-bit KV cache: half the bytes per token");
    }
  }
}

/*! max_model_len: the largest one request fits in. */
void ShorterContext(const LeverContext& c) {
  const int64_t len = c.plan.max_model_len_that_fits;
  if (c.phase != FailurePhase::kMaxModelLen || len <= 0 || len >= c.plan.inputs.max_model_len) return;
  if (auto p = c.PlanWith([&](PlanInputs& in) { in.max_model_len = len; })) {
    c.Add("max_model_len", "decrease", std::to_string(len), "--max-model-len " + std::to_string(len), *p,
          "the longest context one request can hold in this KV budget");
  }
}

/*! A shorter context in the largest budget free memory allows: vLLM's default max_model_len is
 *  the model's whole context, and one request of it often needs more KV than the GPU leaves.
 *  Less disruptive than new weights or more GPUs, so listed before them. */
void RaisedBudgetShorterContext(const LeverContext& c) {
  if (!c.kv_phase || c.max_util_k <= c.current_k) return;
  PlanInputs in = c.base;
  SetUtilization(in, c.max_util_k);
  auto raised = TryPlan(c.spec, in);
  if (!raised || raised->fits || raised->failure_phase != FailurePhase::kMaxModelLen ||
      raised->max_model_len_that_fits <= 0) {
    return;
  }
  in.max_model_len = raised->max_model_len_that_fits;
  if (auto p = TryPlan(c.spec, in); p && p->fits) {
    const std::string len = std::to_string(in.max_model_len);
    c.Add("combination", "set", "gpu_memory_utilization=" + FormatUtil(c.max_util_k) + ", max_model_len=" + len,
          "--gpu-memory-utilization " + FormatUtil(c.max_util_k) + " --max-model-len " + len, *p,
          "the budget free memory allows, and the longest context one request can hold in it");
  }
}

bool CanQuantize(const LeverContext& c) { return c.plan.inputs.quantization.empty() && !c.spec.quantization; }

/*! Weights: 8-bit. */
void Fp8Weights(const LeverContext& c) {
  if ((!c.kv_phase && !c.memory_phase) || !CanQuantize(c)) return;
  if (auto p = c.PlanWith([](PlanInputs& in) { in.quantization = "fp8"; })) {
    c.Add("quantization", "set", "fp8", "--quantization fp8", *p,
          "8-bit weights: " + FormatGib(p->weights_bytes) + " GiB instead of " + FormatGib(c.plan.weights_bytes) +
              " GiB per GPU");
  }
}

constexpr int64_t kTensorParallelSizes[] = {2, 4, 8, 16};

/*! More GPUs: the smallest tensor-parallel size that fits, else the largest tried. */
void MoreGpus(const LeverContext& c) {
  if (!c.kv_phase && !c.memory_phase) return;
  for (int64_t tp : kTensorParallelSizes) {
    if (tp <= c.plan.inputs.tensor_parallel_size) continue;
    auto p = c.PlanWith([tp](PlanInputs& in) { in.tensor_parallel_size = tp; });
    if (!p || (!p->fits && tp != 16)) continue;
    c.Add("tensor_parallel_size", "increase", std::to_string(tp), "--tensor-parallel-size " + std::to_string(tp), *p,
          "splits weights and KV heads over " + std::to_string(tp * c.plan.inputs.pipeline_parallel_size) + " GPUs");
    return;
  }
}

/*! A discrete lever a combination may take. */
struct DiscreteLever {
  std::string name, setting;
  std::function<void(PlanInputs&)> apply;
  int64_t tp = 0;  //!< > 0: a tensor-parallel size (at most one per combination)
};

std::vector<DiscreteLever> DiscreteLevers(const LeverContext& c) {
  const PlanInputs& in = c.plan.inputs;
  std::vector<DiscreteLever> levers;
  if (KvDtypeIsAuto(in)) levers.push_back({"kv_cache_dtype=fp8", "--kv-cache-dtype fp8", [](PlanInputs& i) { i.kv_cache_dtype = "fp8"; }});
  if (CanQuantize(c)) levers.push_back({"quantization=fp8", "--quantization fp8", [](PlanInputs& i) { i.quantization = "fp8"; }});
  if (!in.enforce_eager && in.cudagraph_memory_in_budget.value_or(false)) {
    levers.push_back({"enforce_eager=true", "--enforce-eager", [](PlanInputs& i) { i.enforce_eager = true; }});
  }
  for (int64_t tp : kTensorParallelSizes) {
    if (tp <= in.tensor_parallel_size) continue;
    levers.push_back({"tensor_parallel_size=" + std::to_string(tp), "--tensor-parallel-size " + std::to_string(tp),
                      [tp](PlanInputs& i) { i.tensor_parallel_size = tp; }, tp});
  }
  return levers;
}

/*! Pairs then triples of \p levers, at most one TP each, fewest levers then fewest GPUs first. */
std::vector<std::vector<size_t>> Combinations(const std::vector<DiscreteLever>& levers, int64_t current_tp) {
  std::vector<std::vector<size_t>> combos;
  const size_t n = levers.size();
  const auto tps = [&](std::initializer_list<size_t> c) {
    int count = 0;
    for (size_t i : c) count += levers[i].tp > 0;
    return count;
  };
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j)
      if (tps({i, j}) <= 1) combos.push_back({i, j});
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j)
      for (size_t k = j + 1; k < n; ++k)
        if (tps({i, j, k}) <= 1) combos.push_back({i, j, k});
  const auto gpus = [&](const std::vector<size_t>& c) {
    int64_t tp = current_tp;
    for (size_t i : c) tp = levers[i].tp > 0 ? levers[i].tp : tp;
    return tp;
  };
  std::stable_sort(combos.begin(), combos.end(), [&](const auto& a, const auto& b) {
    return a.size() != b.size() ? a.size() < b.size() : gpus(a) < gpus(b);
  });
  return combos;
}

/*! No lever fits alone: the smallest combination of the discrete ones that does, e.g.
 *  --tensor-parallel-size 2 --kv-cache-dtype fp8. */
void SmallestCombination(const LeverContext& c) {
  const bool any_fits = std::any_of(c.out.begin(), c.out.end(), [](const PlanSuggestion& x) { return x.fits_after; });
  if (any_fits || (!c.kv_phase && !c.memory_phase)) return;
  const std::vector<DiscreteLever> levers = DiscreteLevers(c);
  for (const auto& combo : Combinations(levers, c.plan.inputs.tensor_parallel_size)) {
    auto p = c.PlanWith([&](PlanInputs& in) {
      for (size_t i : combo) levers[i].apply(in);
    });
    if (!p || !p->fits) continue;
    std::string value, setting;
    for (size_t i : combo) {
      value += (value.empty() ? "" : ", ") + levers[i].name;
      setting += (setting.empty() ? "" : " ") + levers[i].setting;
    }
    c.Add("combination", "set", value, setting, *p, "no single change fits; together these do");
    return;
  }
}

/*! The levers, in the order they disturb a deployment least; each decides whether it applies
 *  to the failing phase. */
struct LeverEntry {
  const char* name;
  void (*run)(const LeverContext&);
};
constexpr LeverEntry kLevers[] = {
    {"lower_utilization", LowerUtilization},
    {"raise_utilization", RaiseUtilization},
    {"fewer_seqs", FewerSeqs},
    {"fewer_batched_tokens", FewerBatchedTokens},
    {"fewer_cuda_graphs", FewerCudaGraphs},
    {"no_cuda_graphs", NoCudaGraphs},
    {"fp8_kv_cache", Fp8KvCache},
    {"shorter_context", ShorterContext},
    {"raised_budget_shorter_context", RaisedBudgetShorterContext},
    {"fp8_weights", Fp8Weights},
    {"more_gpus", MoreGpus},
    {"smallest_combination", SmallestCombination},  // last: it reads what the others found
};

LeverContext MakeContext(const ModelSpec& spec, const StartupPlan& plan, std::vector<PlanSuggestion>& out) {
  LeverContext c{spec, plan, plan.failure_phase, Slack(plan, plan.failure_phase), BaseInputs(plan),
                 false, false, 0, 0, out};
  c.kv_phase = c.phase == FailurePhase::kNoKvBlocks || c.phase == FailurePhase::kMaxModelLen;
  c.memory_phase = c.phase == FailurePhase::kWeights || c.phase == FailurePhase::kProfilePeak;
  // The largest utilization (in thousandths) whose ceil(total * u) still fits in free memory.
  c.max_util_k = LargestUtilizationFittingPpm(plan.inputs.total_memory_bytes, plan.inputs.free_memory_bytes, 1000) / 1000;
  c.current_k = static_cast<int64_t>(std::ceil(plan.inputs.gpu_memory_utilization * 1000.0 - 1e-9));
  return c;
}

/*! Fitting levers first, in the table's order; the rest by bytes freed. */
void Rank(std::vector<PlanSuggestion>& out) {
  std::stable_sort(out.begin(), out.end(), [](const PlanSuggestion& a, const PlanSuggestion& b) {
    if (a.fits_after != b.fits_after) return a.fits_after;
    if (!a.fits_after) return a.bytes_freed > b.bytes_freed;
    return false;
  });
}

}  // namespace

std::vector<std::string> PlanLeverNames() {
  std::vector<std::string> names;
  for (const LeverEntry& lever : kLevers) names.emplace_back(lever.name);
  return names;
}

std::vector<PlanSuggestion> TryPlanLever(const ModelSpec& spec, const StartupPlan& plan, std::string_view lever) {
  std::vector<PlanSuggestion> out;
  if (plan.fits) return out;
  const LeverContext c = MakeContext(spec, plan, out);
  for (const LeverEntry& entry : kLevers) {
    if (lever == entry.name) entry.run(c);
  }
  return out;
}

std::vector<PlanSuggestion> SuggestPlanChanges(const ModelSpec& spec, const StartupPlan& plan) {
  std::vector<PlanSuggestion> out;
  if (plan.fits) return out;
  const LeverContext c = MakeContext(spec, plan, out);
  for (const LeverEntry& lever : kLevers) lever.run(c);
  Rank(out);
  return out;
}

}  // namespace vllm_mem
