/*!
 * \file vllm_mem/plan/plan_suggestions.h
 * \brief What to change when a start-up plan does not fit: the levers of vLLM's "conserving
 *        memory" guide, each re-evaluated with the planner, with the exact setting that works,
 *        the bytes it frees and one direction only (never "increase or decrease").
 */
#ifndef VLLM_MEM_PLAN_PLAN_SUGGESTIONS_H_
#define VLLM_MEM_PLAN_PLAN_SUGGESTIONS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/startup_plan.h"

namespace vllm_mem {

/*! \brief One lever. */
struct PlanSuggestion {
  std::string lever;      //!< the plan keyword: "gpu_memory_utilization", "max_model_len", ...
  std::string direction;  //!< "increase", "decrease" or "set": never both
  std::string value;      //!< the new value, as the keyword takes it ("0.934", "16384", "fp8", "true")
  std::string setting;    //!< the vLLM command-line flag to use, e.g. "--max-model-len 16384"
  int64_t bytes_freed = 0;  //!< per GPU: how much the failing phase's shortfall shrinks
  bool fits_after = false;  //!< the plan fits with this change alone
  std::string reason;       //!< one line: why this lever, in the phase's terms
};

/*! \brief The ranked levers for \p plan (empty when it fits): those that make it fit alone come
 *  first, least disruptive first; then levers that help but do not suffice. */
std::vector<PlanSuggestion> SuggestPlanChanges(const ModelSpec& spec, const StartupPlan& plan);

/*! \brief The lever table's names, in the order SuggestPlanChanges runs them (least disruptive
 *  first; the combination of discrete levers last). */
std::vector<std::string> PlanLeverNames();

/*! \brief One lever of the table alone on \p plan (empty when it does not apply to the failing
 *  phase or helps too little); \p lever: a name of PlanLeverNames. SuggestPlanChanges is every
 *  lever in turn, ranked. */
std::vector<PlanSuggestion> TryPlanLever(const ModelSpec& spec, const StartupPlan& plan, std::string_view lever);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_PLAN_SUGGESTIONS_H_
