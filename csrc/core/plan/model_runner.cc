/*!
 * \file core/plan/model_runner.cc
 * \brief Which model runner vLLM gives a model, and whether its graph memory is budgeted.
 */
#include "vllm_mem/plan/model_runner.h"

#include <algorithm>

namespace vllm_mem {

const char* VllmModelRunnerName(VllmModelRunner runner) { return runner == VllmModelRunner::kV2 ? "v2" : "v1"; }

namespace {

/*! vLLM's _is_default_v2_model_runner_model for the "dense" rollout: model_config.is_moe, and
 *  is_hybrid / is_attention_free (a recurrent state on any layer: spec.hybrid). */
std::string WhyNotDense(const ModelSpec& spec) {
  if (spec.moe) return "a MoE model";
  if (spec.hybrid) return "a hybrid / state-space model";
  return "";
}

/*! Whether one of config.json's architectures is in the release's DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES. */
bool ListedArchitecture(const VllmVersionProfile& profile, const ModelSpec& spec) {
  const auto& listed = profile.v2_runner_architectures;
  return std::any_of(spec.architectures.begin(), spec.architectures.end(), [&](const std::string& a) {
    return std::find(listed.begin(), listed.end(), a) != listed.end();
  });
}

std::string ListedNames(const VllmVersionProfile& profile) {
  std::string out;
  for (const std::string& a : profile.v2_runner_architectures) out += (out.empty() ? "" : ", ") + a;
  return out;
}

/*! "" when the release's V2 takes \p spec by kind (before the speculative check); else why not. */
std::string WhyNotV2(const VllmVersionProfile& profile, const ModelSpec& spec) {
  const std::string& serves = profile.v2_runner_serves;
  if (serves == "listed") {
    // 0.22-0.24: _is_default_v2_model_runner_model tests the architecture list first (0.22-0.23 then
    // not model_config.is_moe and not model_config.is_quantized); hybrids fall back as unsupported.
    if (!ListedArchitecture(profile, spec)) {
      return "gives Model Runner V2 only to the architectures it lists (" + ListedNames(profile) +
             "); this one keeps the V1 runner";
    }
    if (spec.hybrid) return "gives Model Runner V2 no hybrid / state-space model; this one keeps the V1 runner";
    if (profile.v2_runner_listed_dense_unquantized && (spec.moe || spec.quantization.has_value())) {
      return std::string("gives Model Runner V2 to its listed architectures only unquantized and dense; ") +
             (spec.moe ? "a MoE model" : "a quantized checkpoint") + " keeps the V1 runner";
    }
    return "";
  }
  if (serves == "dense") {
    // 0.25-0.28: hybrid and attention-free models keep V1; a listed MoE architecture takes V2.
    const std::string not_dense = WhyNotDense(spec);
    if (!not_dense.empty() && !(spec.moe && !spec.hybrid && ListedArchitecture(profile, spec))) {
      return "gives Model Runner V2 to dense models only; " + not_dense + " keeps the V1 runner";
    }
  }
  return "";
}

}  // namespace

ModelRunnerChoice ChooseModelRunner(const VllmVersionProfile& profile, const ModelSpec& spec,
                                    const std::string& speculative_method) {
  const std::string release = "vLLM " + profile.version;
  if (profile.v2_runner_serves == "none") {
    return {VllmModelRunner::kV1, release + " runs the V1 model runner (Model Runner V2 is opt-in)"};
  }
  if (const std::string why_not = WhyNotV2(profile, spec); !why_not.empty()) {
    return {VllmModelRunner::kV1, release + " " + why_not};
  }
  const auto& methods = profile.v2_runner_speculative_methods;
  if (!speculative_method.empty() && std::find(methods.begin(), methods.end(), speculative_method) == methods.end()) {
    return {VllmModelRunner::kV1, release + ": Model Runner V2 does not run '" + speculative_method +
                                      "' speculative decoding, so the V1 runner serves it"};
  }
  const std::string served = profile.v2_runner_serves == "all"     ? "every model"
                             : profile.v2_runner_serves == "listed" ? "its listed architectures"
                             : ListedArchitecture(profile, spec)    ? "dense models and its listed architectures"
                                                                    : "dense models";
  return {VllmModelRunner::kV2,
          release + " serves " + served + " with Model Runner V2" +
              (profile.v2_runner_cudagraph_profiling
                   ? ", which profiles its CUDA-graph memory into the KV budget"
                   : ", whose profile_cudagraph_memory() returns 0: no CUDA-graph memory in the KV budget")};
}

std::string V2GraphProfileRefusal(const VllmVersionProfile& profile, VllmModelRunner runner, bool captures_graphs,
                                  bool graph_memory_in_budget, bool kv_cache_memory_given) {
  // vLLM skips the whole memory profile (graphs included) when --kv-cache-memory is given.
  if (runner != VllmModelRunner::kV2 || !profile.v2_runner_cudagraph_profiling || !captures_graphs ||
      !graph_memory_in_budget || kv_cache_memory_given) {
    return "";
  }
  return "vLLM " + profile.version +
         ": Model Runner V2 subtracts the memory it measures capturing every CUDA graph (PR #53306), which "
         "is not modelled; plan with enforce_eager=True (--enforce-eager), cudagraph_mode='NONE', "
         "cudagraph_memory_in_budget=False or kv_cache_memory_bytes";
}

bool CudagraphMemoryInBudgetByDefault(const VllmVersionProfile& profile, VllmEngine engine, VllmModelRunner runner) {
  // V0 captured its graphs after allocating the KV cache: never in the budget.
  if (engine != VllmEngine::kV1 || !profile.cudagraph_memory_in_budget) return false;
  return runner == VllmModelRunner::kV1 || profile.v2_runner_cudagraph_profiling;
}

}  // namespace vllm_mem
