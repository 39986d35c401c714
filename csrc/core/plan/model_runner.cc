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

}  // namespace

ModelRunnerChoice ChooseModelRunner(const VllmVersionProfile& profile, const ModelSpec& spec,
                                    const std::string& speculative_method) {
  const std::string release = "vLLM " + profile.version;
  if (profile.v2_runner_serves == "none") {
    return {VllmModelRunner::kV1, release + " runs the V1 model runner (Model Runner V2 is opt-in)"};
  }
  if (profile.v2_runner_serves == "dense") {
    const std::string not_dense = WhyNotDense(spec);
    if (!not_dense.empty()) {
      return {VllmModelRunner::kV1,
              release + " gives Model Runner V2 to dense models only; " + not_dense + " keeps the V1 runner"};
    }
  }
  const auto& methods = profile.v2_runner_speculative_methods;
  if (!speculative_method.empty() && std::find(methods.begin(), methods.end(), speculative_method) == methods.end()) {
    return {VllmModelRunner::kV1, release + ": Model Runner V2 does not run '" + speculative_method +
                                      "' speculative decoding, so the V1 runner serves it"};
  }
  return {VllmModelRunner::kV2,
          release + " serves " + (profile.v2_runner_serves == "dense" ? "dense models" : "every model") +
              " with Model Runner V2" +
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
