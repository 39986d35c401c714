/*!
 * \file vllm_mem/plan/model_runner.h
 * \brief Which GPU model runner vLLM gives a model: the V1 runner (vllm/v1/worker/
 *        gpu_model_runner.py) or Model Runner V2 (vllm/v1/worker/gpu/model_runner.py). The
 *        release decides which models V2 serves (vllm_versions.json "model_runner"); the runner
 *        decides whether its CUDA-graph memory is profiled into the KV budget.
 */
#ifndef VLLM_MEM_PLAN_MODEL_RUNNER_H_
#define VLLM_MEM_PLAN_MODEL_RUNNER_H_

#include <string>

#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/vllm_version_profile.h"

namespace vllm_mem {

/*! \brief vLLM's GPU model runner. The Python API says "v1" / "v2". */
enum class VllmModelRunner { kV1, kV2 };
const char* VllmModelRunnerName(VllmModelRunner runner);  //!< "v1" / "v2"

/*! \brief The runner and why, in one line for reports. */
struct ModelRunnerChoice {
  VllmModelRunner runner = VllmModelRunner::kV1;
  std::string reason;
};

/*! \brief The runner a plain `vllm serve` of \p profile's release gives \p spec
 *  (VllmConfig.use_v2_model_runner without VLLM_USE_V2_MODEL_RUNNER): V2 when the release's
 *  V2 serves this kind of model (dense: neither MoE nor hybrid / Mamba / attention-free) and
 *  \p speculative_method ("" : none; normalised, "draft_model" for a named drafter) is one V2
 *  runs; else V1. */
ModelRunnerChoice ChooseModelRunner(const VllmVersionProfile& profile, const ModelSpec& spec,
                                    const std::string& speculative_method);

/*! \brief Whether the runner's CUDA-graph memory comes out of the KV budget by default: the V1
 *  engine with the release's cudagraph_memory_in_budget, and, for V2, only where its
 *  profile_cudagraph_memory() measures (else it returns 0). */
bool CudagraphMemoryInBudgetByDefault(const VllmVersionProfile& profile, VllmEngine engine, VllmModelRunner runner);

/*! \brief "" when the plan is modelled; else why not: \p profile's Model Runner V2 measures its
 *  CUDA-graph memory by capturing every graph (v2_runner_cudagraph_profiling, from 0.29), no rule
 *  reproduces that measurement, and it would enter this budget (\p runner V2, \p captures_graphs,
 *  \p graph_memory_in_budget, no \p kv_cache_memory_given). The message names the settings
 *  that are planned (enforce_eager, cudagraph_mode NONE, the estimate out of the budget). */
std::string V2GraphProfileRefusal(const VllmVersionProfile& profile, VllmModelRunner runner, bool captures_graphs,
                                  bool graph_memory_in_budget, bool kv_cache_memory_given);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_MODEL_RUNNER_H_
