/*!
 * \file vllm_mem/plan/release_resolution.h
 * \brief The first phase of a plan: the settings the user left unset filled with the rules of
 *        the vLLM release (vllm_version_profile.h). Kept apart from the profiles, which know
 *        nothing of a plan, so the profile and the plan do not depend on each other.
 */
#ifndef VLLM_MEM_PLAN_RELEASE_RESOLUTION_H_
#define VLLM_MEM_PLAN_RELEASE_RESOLUTION_H_

#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/plan/vllm_version_profile.h"

namespace vllm_mem {

/*! \brief \p inputs with every default the user left unset filled from \p profile: engine,
 *  gpu_memory_utilization (0), cudagraph_memory_in_budget (unset), max_num_seqs and
 *  max_num_batched_tokens (0), max_model_len (0: DerivedMaxModelLen), the sampler constant,
 *  the KV manager and log format, dtype "auto" on a GPU without bfloat16. Refuses (InvalidArgument)
 *  a max_model_len above the derived maximum unless allow_long_max_model_len, and engine "v0" for
 *  a release without it. */
PlanInputs ResolveForVersion(const VllmVersionProfile& profile, const ModelSpec& spec, PlanInputs inputs);
}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_RELEASE_RESOLUTION_H_
