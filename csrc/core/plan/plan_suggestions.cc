/*!
 * \file core/plan/plan_suggestions.cc
 * \brief Levers for a plan that does not fit, each checked by re-planning.
 */
#include "vllm_mem/plan/plan_suggestions.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

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

// Largest integer in [lo, hi] for which fits(v) holds, assuming fits is monotone (true below a
// threshold); nullopt when even lo fails.
std::optional<int64_t> LargestFitting(int64_t lo, int64_t hi, const std::function<bool(int64_t)>& fits) {
  if (lo > hi || !fits(lo)) return std::nullopt;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// A lever that does not fit alone is listed only when it frees at least what the report can
// show (0.01 GiB): "frees 0.00 GiB" is a lever that frees nothing to the reader.
constexpr int64_t kMinUsefulBytes = kGiB / 100;

std::string FormatUtil(int64_t thousandths) {
  std::string s = FormatFixed(static_cast<double>(thousandths) / 1000.0, 3);
  while (s.size() > 3 && s.back() == '0') s.pop_back();
  return s;
}

}  // namespace

std::vector<PlanSuggestion> SuggestPlanChanges(const ModelSpec& spec, const StartupPlan& plan) {
  std::vector<PlanSuggestion> out;
  if (plan.fits) return out;
  const FailurePhase phase = plan.failure_phase;
  const int64_t before = Slack(plan, phase);
  const PlanInputs base = BaseInputs(plan);
  const bool kv_phase = phase == FailurePhase::kNoKvBlocks || phase == FailurePhase::kMaxModelLen;
  const bool memory_phase = phase == FailurePhase::kWeights || phase == FailurePhase::kProfilePeak;

  auto add = [&](const std::string& lever, const std::string& direction, const std::string& value,
                 const std::string& setting, const StartupPlan& after, const std::string& reason) {
    PlanSuggestion s;
    s.lever = lever;
    s.direction = direction;
    s.value = value;
    s.setting = setting;
    s.bytes_freed = Slack(after, phase) - before;
    s.fits_after = after.fits;
    s.reason = reason;
    if (s.bytes_freed >= kMinUsefulBytes || s.fits_after) out.push_back(s);
  };
  auto fits_with = [&](const std::function<void(PlanInputs&)>& change) {
    PlanInputs in = base;
    change(in);
    auto p = TryPlan(spec, in);
    return p && p->fits;
  };
  // Gets past the failing phase (fits, or fails only at a later phase of vLLM's start-up).
  auto passes_phase_with = [&](const std::function<void(PlanInputs&)>& change) {
    PlanInputs in = base;
    change(in);
    auto p = TryPlan(spec, in);
    return p && (p->fits || static_cast<int>(p->failure_phase) > static_cast<int>(phase));
  };

  // gpu_memory_utilization: one direction, decided by the phase.
  const int64_t total = plan.inputs.total_memory_bytes;
  const int64_t free = plan.inputs.free_memory_bytes;
  // The largest utilization (in thousandths) whose ceil(total * u) still fits in free memory.
  const int64_t max_util_k = LargestUtilizationFittingPpm(total, free, 1000) / 1000;
  if (phase == FailurePhase::kFreeMemory && max_util_k >= 1) {
    PlanInputs in = base;
    in.gpu_memory_utilization = static_cast<double>(max_util_k) / 1000.0;
    if (auto p = TryPlan(spec, in)) {
      add("gpu_memory_utilization", "decrease", FormatUtil(max_util_k),
          "--gpu-memory-utilization " + FormatUtil(max_util_k), *p,
          "utilization is a fraction of TOTAL memory; only " + FormatGib(free) + " GiB of " + FormatGib(total) +
              " GiB is free at start-up, so at most " + FormatUtil(max_util_k) + " can be requested");
    }
  }
  const int64_t current_k = static_cast<int64_t>(std::ceil(plan.inputs.gpu_memory_utilization * 1000.0 - 1e-9));
  if (kv_phase && current_k < max_util_k) {
    // The smallest utilization that fits: the fit is monotone in utilization.
    auto fits_at = [&](int64_t k) {
      return fits_with([&](PlanInputs& in) { in.gpu_memory_utilization = static_cast<double>(k) / 1000.0; });
    };
    if (fits_at(max_util_k)) {
      int64_t lo = current_k + 1, hi = max_util_k;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (fits_at(mid)) hi = mid; else lo = mid + 1;
      }
      PlanInputs in = base;
      in.gpu_memory_utilization = static_cast<double>(lo) / 1000.0;
      if (auto p = TryPlan(spec, in)) {
        add("gpu_memory_utilization", "increase", FormatUtil(lo), "--gpu-memory-utilization " + FormatUtil(lo), *p,
            "raises the budget to " + FormatGib(p->requested_bytes) + " GiB; the KV cache gets what the profile leaves");
      }
    } else {
      // Not enough alone, but every byte of budget free memory allows goes to the KV cache
      // (and pairs with a shorter context below).
      PlanInputs in = base;
      in.gpu_memory_utilization = static_cast<double>(max_util_k) / 1000.0;
      if (auto p = TryPlan(spec, in)) {
        add("gpu_memory_utilization", "increase", FormatUtil(max_util_k),
            "--gpu-memory-utilization " + FormatUtil(max_util_k), *p,
            "raises the budget to " + FormatGib(p->requested_bytes) + " GiB, as far as the " + FormatGib(free) +
                " GiB free at start-up allows");
      }
    }
  }

  // max_num_seqs / max_num_batched_tokens shrink the profile run's peak (and graph sizes).
  if (kv_phase || phase == FailurePhase::kProfilePeak) {
    const int64_t seqs = plan.inputs.max_num_seqs;
    // The largest value that fits; failing that, the largest that clears this phase.
    auto best = LargestFitting(1, seqs - 1, [&](int64_t v) {
      return fits_with([&](PlanInputs& in) { in.max_num_seqs = v; });
    });
    if (!best) {
      best = LargestFitting(1, seqs - 1, [&](int64_t v) {
        return passes_phase_with([&](PlanInputs& in) { in.max_num_seqs = v; });
      });
    }
    if (best) {
      PlanInputs in = base;
      in.max_num_seqs = *best;
      if (auto p = TryPlan(spec, in)) {
        add("max_num_seqs", "decrease", std::to_string(*best), "--max-num-seqs " + std::to_string(*best), *p,
            "fewer sampler rows (" + std::to_string(*best) + " x vocab) in the profile run");
      }
    }
    const int64_t tokens = plan.inputs.max_num_batched_tokens;
    const int64_t floor_tokens = std::min<int64_t>(plan.inputs.max_num_seqs, tokens - 1);
    auto best_tokens = LargestFitting(std::max<int64_t>(1, floor_tokens), tokens - 1, [&](int64_t v) {
      return fits_with([&](PlanInputs& in) { in.max_num_batched_tokens = v; });
    });
    if (!best_tokens) {
      best_tokens = LargestFitting(std::max<int64_t>(1, floor_tokens), tokens - 1, [&](int64_t v) {
        return passes_phase_with([&](PlanInputs& in) { in.max_num_batched_tokens = v; });
      });
    }
    if (best_tokens) {
      PlanInputs in = base;
      in.max_num_batched_tokens = *best_tokens;
      if (auto p = TryPlan(spec, in)) {
        add("max_num_batched_tokens", "decrease", std::to_string(*best_tokens),
            "--max-num-batched-tokens " + std::to_string(*best_tokens), *p,
            "a smaller profile forward (chunked prefill keeps long prompts working)");
      }
    }
  }

  // CUDA graphs: fewer capture sizes, or none.
  if (kv_phase && !plan.inputs.enforce_eager && plan.inputs.cudagraph_memory_in_budget.value_or(false) && plan.cudagraph_bytes > 0) {
    const auto& sizes = plan.ranks.front().cudagraph.capture_sizes;
    // The largest capture size below the current largest that fits. Fewer and smaller graphs
    // never need more memory, so the fit is monotone in the size and a binary search over the
    // (sorted, distinct) sizes finds it in log2(n) plans; one plan per size took seconds for a
    // large capture size (fuzzing).
    std::optional<int64_t> best_size;
    if (sizes.size() >= 2) {
      const auto best_index = LargestFitting(0, static_cast<int64_t>(sizes.size()) - 2, [&](int64_t i) {
        return fits_with([&](PlanInputs& in) {
          in.max_cudagraph_capture_size = sizes[static_cast<size_t>(i)];
          in.cudagraph_capture_sizes.clear();
        });
      });
      if (best_index) best_size = sizes[static_cast<size_t>(*best_index)];
    }
    if (best_size) {
      PlanInputs in = base;
      in.max_cudagraph_capture_size = *best_size;
      in.cudagraph_capture_sizes.clear();
      if (auto p = TryPlan(spec, in)) {
        add("max_cudagraph_capture_size", "decrease", std::to_string(*best_size),
            "--compilation-config '{\"max_cudagraph_capture_size\": " + std::to_string(*best_size) + "}'", *p,
            "fewer CUDA graphs to capture; batches above " + std::to_string(*best_size) + " run eagerly");
      }
    }
    PlanInputs in = base;
    in.enforce_eager = true;
    if (auto p = TryPlan(spec, in)) {
      add("enforce_eager", "set", "true", "--enforce-eager", *p,
          "no CUDA graphs: frees the graph pool at some decode speed");
    }
  }

  // KV storage: fp8 halves the bytes per token of a 16-bit cache.
  if (kv_phase && (plan.inputs.kv_cache_dtype.empty() || plan.inputs.kv_cache_dtype == "auto") &&
      plan.kv_cache == std::nullopt) {
    PlanInputs in = base;
    in.kv_cache_dtype = "fp8";
    if (auto p = TryPlan(spec, in)) {
      if (p->ranks.front().kv_bytes_per_block < plan.ranks.front().kv_bytes_per_block) {
        add("kv_cache_dtype", "set", "fp8", "--kv-cache-dtype fp8", *p, "8-bit KV cache: half the bytes per token");
      }
    }
  }

  // max_model_len: the largest one request fits in.
  if (phase == FailurePhase::kMaxModelLen && plan.max_model_len_that_fits > 0 &&
      plan.max_model_len_that_fits < plan.inputs.max_model_len) {
    PlanInputs in = base;
    in.max_model_len = plan.max_model_len_that_fits;
    if (auto p = TryPlan(spec, in)) {
      add("max_model_len", "decrease", std::to_string(plan.max_model_len_that_fits),
          "--max-model-len " + std::to_string(plan.max_model_len_that_fits), *p,
          "the longest context one request can hold in this KV budget");
    }
  }

  // A shorter context in the largest budget free memory allows: vLLM's default max_model_len is
  // the model's whole context, and one request of it often needs more KV than the GPU leaves.
  // Less disruptive than new weights or more GPUs, so listed before them.
  if (kv_phase && max_util_k > current_k) {
    PlanInputs in = base;
    in.gpu_memory_utilization = static_cast<double>(max_util_k) / 1000.0;
    auto raised = TryPlan(spec, in);
    if (raised && !raised->fits && raised->failure_phase == FailurePhase::kMaxModelLen &&
        raised->max_model_len_that_fits > 0) {
      in.max_model_len = raised->max_model_len_that_fits;
      if (auto p = TryPlan(spec, in); p && p->fits) {
        const std::string len = std::to_string(in.max_model_len);
        add("combination", "set", "gpu_memory_utilization=" + FormatUtil(max_util_k) + ", max_model_len=" + len,
            "--gpu-memory-utilization " + FormatUtil(max_util_k) + " --max-model-len " + len, *p,
            "the budget free memory allows, and the longest context one request can hold in it");
      }
    }
  }

  // Weights: quantization, then more GPUs.
  if ((kv_phase || memory_phase) && plan.inputs.quantization.empty() && !spec.quantization) {
    PlanInputs in = base;
    in.quantization = "fp8";
    if (auto p = TryPlan(spec, in)) {
      add("quantization", "set", "fp8", "--quantization fp8", *p,
          "8-bit weights: " + FormatGib(p->weights_bytes) + " GiB instead of " + FormatGib(plan.weights_bytes) +
              " GiB per GPU");
    }
  }
  if (kv_phase || memory_phase) {
    for (int64_t tp : {2, 4, 8, 16}) {
      if (tp <= plan.inputs.tensor_parallel_size) continue;
      PlanInputs in = base;
      in.tensor_parallel_size = tp;
      auto p = TryPlan(spec, in);
      if (!p) continue;
      if (p->fits || tp == 16) {
        add("tensor_parallel_size", "increase", std::to_string(tp), "--tensor-parallel-size " + std::to_string(tp), *p,
            "splits weights and KV heads over " + std::to_string(tp * plan.inputs.pipeline_parallel_size) + " GPUs");
        break;
      }
    }
  }

  // No lever fits alone: the smallest combination of the discrete ones that does (fewest
  // levers, then fewest GPUs), e.g. --tensor-parallel-size 2 --kv-cache-dtype fp8.
  const bool any_fits = std::any_of(out.begin(), out.end(), [](const PlanSuggestion& x) { return x.fits_after; });
  if (!any_fits && (kv_phase || memory_phase)) {
    struct Lever {
      std::string name, setting;
      std::function<void(PlanInputs&)> apply;
      int64_t tp = 0;  // > 0: a tensor-parallel size (at most one per combination)
    };
    std::vector<Lever> levers;
    if (plan.inputs.kv_cache_dtype.empty() || plan.inputs.kv_cache_dtype == "auto") {
      levers.push_back({"kv_cache_dtype=fp8", "--kv-cache-dtype fp8", [](PlanInputs& in) { in.kv_cache_dtype = "fp8"; }});
    }
    if (plan.inputs.quantization.empty() && !spec.quantization) {
      levers.push_back({"quantization=fp8", "--quantization fp8", [](PlanInputs& in) { in.quantization = "fp8"; }});
    }
    if (!plan.inputs.enforce_eager && plan.inputs.cudagraph_memory_in_budget.value_or(false)) {
      levers.push_back({"enforce_eager=true", "--enforce-eager", [](PlanInputs& in) { in.enforce_eager = true; }});
    }
    for (int64_t tp : {2, 4, 8, 16}) {
      if (tp <= plan.inputs.tensor_parallel_size) continue;
      levers.push_back({"tensor_parallel_size=" + std::to_string(tp), "--tensor-parallel-size " + std::to_string(tp),
                        [tp](PlanInputs& in) { in.tensor_parallel_size = tp; }, tp});
    }
    std::vector<std::vector<size_t>> combos;
    const size_t n = levers.size();
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) {
        if (levers[i].tp > 0 && levers[j].tp > 0) continue;
        combos.push_back({i, j});
      }
    }
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) {
        for (size_t k = j + 1; k < n; ++k) {
          if ((levers[i].tp > 0) + (levers[j].tp > 0) + (levers[k].tp > 0) > 1) continue;
          combos.push_back({i, j, k});
        }
      }
    }
    auto gpus = [&](const std::vector<size_t>& c) {
      int64_t tp = plan.inputs.tensor_parallel_size;
      for (size_t i : c) tp = levers[i].tp > 0 ? levers[i].tp : tp;
      return tp;
    };
    std::stable_sort(combos.begin(), combos.end(), [&](const auto& a, const auto& b) {
      if (a.size() != b.size()) return a.size() < b.size();
      return gpus(a) < gpus(b);
    });
    for (const auto& c : combos) {
      PlanInputs in = base;
      for (size_t i : c) levers[i].apply(in);
      auto p = TryPlan(spec, in);
      if (!p || !p->fits) continue;
      std::string value, setting;
      for (size_t i : c) {
        value += (value.empty() ? "" : ", ") + levers[i].name;
        setting += (setting.empty() ? "" : " ") + levers[i].setting;
      }
      add("combination", "set", value, setting, *p, "no single change fits; together these do");
      break;
    }
  }

  // Rank: fitting levers first, in the order they disturb the deployment least (as listed
  // above); the rest by bytes freed.
  std::stable_sort(out.begin(), out.end(), [](const PlanSuggestion& a, const PlanSuggestion& b) {
    if (a.fits_after != b.fits_after) return a.fits_after;
    if (!a.fits_after) return a.bytes_freed > b.bytes_freed;
    return false;
  });
  return out;
}

}  // namespace vllm_mem
