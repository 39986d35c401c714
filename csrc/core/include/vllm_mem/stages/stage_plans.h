/*!
 * \file vllm_mem/stages/stage_plans.h
 * \brief The full start-up plan of each stage whose model is known, on the devices the stage
 *        check placed it: weights on its TP/PP split, KV capacity and max concurrency within
 *        its gpu_memory_utilization, with the free memory predicted at its start.
 *
 * Each stage is one vLLM engine, so its plan is the start-up planner's (vllm_mem/plan/startup_plan.h)
 * evaluated with the stage's settings; the device is the stage's smallest resident GPU and the
 * free memory the least predicted at its start (vllm_mem/stages/stage_check.h), so a stage that another
 * stage crowds out fails here the way it would fail on the machine.
 */
#ifndef VLLM_MEM_STAGES_STAGE_PLANS_H_
#define VLLM_MEM_STAGES_STAGE_PLANS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/stages/stage_check.h"

namespace vllm_mem {

/*! \brief A stage's model, serving length and settings. */
struct StageModel {
  int64_t stage_id = 0;
  ModelSpec spec;
  std::string name;            //!< for the report
  int64_t max_model_len = 0;   //!< 0: the stage's max_model_len, else the model's limit; -1: auto-fit
  /*! The settings object plan() evaluates, built as plan() builds it from the stage's engine
   *  arguments (kv_cache_dtype, block_size, speculative_config, ...; the release resolved, the
   *  checkpoint's weight bytes). PlanStages sets over it only what the stage check decides: the
   *  device and its free memory at the stage's start, and the knobs the stage config itself reads
   *  (utilization, TP/PP, enforce_eager, scheduler sizes, max_model_len) with vLLM-Omni's defaults. */
  PlanInputs settings;
};

/*! \brief One stage's plan, summarised. */
struct StagePlanSummary {
  int64_t stage_id = 0;
  std::string model;
  int64_t physical_id = 0;         //!< the device the plan was evaluated on (smallest resident)
  int64_t total_bytes = 0;
  int64_t free_bytes = 0;          //!< predicted at the stage's start
  int64_t max_model_len = 0;
  bool fits = false;
  std::string failure_phase;       //!< "" when it fits
  std::string failure_message;
  int64_t shortfall_bytes = 0;
  int64_t requested_bytes = 0;
  int64_t weights_bytes = 0;       //!< per GPU, tightest pipeline rank
  int64_t non_kv_cache_bytes = 0;
  int64_t available_kv_cache_bytes = 0;
  int64_t num_blocks = 0;
  int64_t num_tokens = 0;
  double max_concurrency = 0.0;
  std::string line;                //!< one readable line
};

/*! \brief Plans every stage in \p models (stage ids must be in the check). InvalidArgument for
 *  an unknown or CPU stage id. */
std::vector<StagePlanSummary> PlanStages(const StageCheckResult& check, const std::vector<StageModel>& models);

/*! \brief PlanStages, recorded into \p check: a plan line each, and a problem (ok = false) for
 *  each stage whose plan does not fit. */
std::vector<StagePlanSummary> AddStagePlans(StageCheckResult& check, const std::vector<StageModel>& models);

}  // namespace vllm_mem

#endif  // VLLM_MEM_STAGES_STAGE_PLANS_H_
