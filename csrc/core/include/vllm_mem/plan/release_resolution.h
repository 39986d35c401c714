/*!
 * \file vllm_mem/plan/release_resolution.h
 * \brief The first phase of a plan: the settings the user left unset filled with the rules of
 *        the vLLM release (vllm_version_profile.h). Kept apart from the profiles, which know
 *        nothing of a plan, so the profile and the plan do not depend on each other.
 */
#ifndef VLLM_MEM_PLAN_RELEASE_RESOLUTION_H_
#define VLLM_MEM_PLAN_RELEASE_RESOLUTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/kv_cache/kv_cache_layout.h"
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

/*! \brief The mamba_cache_mode vLLM runs \p spec with, for \p settings on \p profile's release
 *  (MambaModelConfig.verify_and_update_config). Prefix caching is the user's setting, else the
 *  release's default: for a hybrid model rule hybrid_prefix_caching_default (on from 0.28), for an
 *  attention-free one (every layer recurrent) off on every release. With prefix caching on and the
 *  mode left "none": "align" where rule mamba_cache_mode_align_by_default holds (from 0.28, for
 *  every class, with or without speculative decoding); before, vLLM picks by the class flag, so a
 *  family that refuses "all" (HybridSpec::cache_mode_all_refusal) gets "align" and for the others
 *  the question is refused (InvalidArgument naming enable_prefix_caching) until the mode is passed
 *  or prefix caching turned off. Prefix caching asked for, or a mode other than "none", on an
 *  attention-free model is Unsupported (vLLM does not support prefix caching there). The mode
 *  passed, or any model without recurrent state, is returned as it is. */
std::string ResolvedMambaCacheMode(const VllmVersionProfile& profile, const ModelSpec& spec,
                                   const KvCacheSettings& settings);

/*! \brief vLLM's ValueError when --max-model-len auto finds not one token that fits
 *  (kv_cache_utils._auto_fit_max_model_len). */
inline constexpr const char* kCannotAutoFitMessage =
    "Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. Try increasing "
    "`gpu_memory_utilization`.";

/*! \brief A KV question's max_model_len auto (kMaxModelLenAuto; KvOptionsForRelease has refused it
 *  on a release without the rule): the derived maximum, the bound vLLM's auto-fit searches from. */
void BoundAutoMaxModelLen(const ModelSpec& spec, KvCacheOptions& options);

/*! \brief A KV question's max_model_len auto fitted as vLLM fits it to \p available_bytes (one
 *  entry, one per pipeline rank, or one per worker): the longest length in [1, the derived
 *  maximum] one request fits on every worker (AutoFitMaxModelLen). InsufficientMemory with
 *  kCannotAutoFitMessage when not one token fits. Other lengths are left as they are. */
void AutoFitKvOptions(const KvCacheLayoutCache& cache, const std::vector<int64_t>& available_bytes,
                      KvCacheOptions& options);

/*! \brief KvCacheMemoryShortfall after AutoFitKvOptions: with max_model_len auto, "" or
 *  kCannotAutoFitMessage (vLLM's only refusal of an auto-fitted length). */
std::string KvShortfallAutoFitted(const KvCacheLayoutCache& cache, const std::vector<int64_t>& available_bytes,
                                  KvCacheOptions options);
}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_RELEASE_RESOLUTION_H_
