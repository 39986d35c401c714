/*!
 * \file vllm_mem/stages/stage_demand.h
 * \brief What one stage (one vLLM engine) needs per worker GPU to serve a model at a given
 *        max_model_len and concurrency, split as utilization_assignment.h wants it: fixed bytes
 *        (weights on the TP/PP split, activation peak, non-torch, CUDA graphs) and KV bytes.
 *
 * Nothing is re-derived here: the fixed part is the start-up planner's per-rank non-KV figure
 * (vllm_mem/plan/startup_plan.h; the largest over pipeline ranks), and the KV part is the least
 * per-worker budget at which that plan's own KV pool (StartupPlan::kv_query: the model's layers and a
 * drafter's, at the release's KV options, decode context parallelism included) reaches the
 * concurrency. So every setting plan() takes reaches the need as it reaches the plan.
 */
#ifndef VLLM_MEM_STAGES_STAGE_DEMAND_H_
#define VLLM_MEM_STAGES_STAGE_DEMAND_H_

#include <cstdint>
#include <vector>

#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/stages/utilization_assignment.h"

namespace vllm_mem {

/*! \brief The demand of a stage serving \p spec with \p inputs (plan()'s settings object, the
 *  environment resolved; total_memory_bytes and gpu_name: the GPU the stage is sized for;
 *  utilization, free memory and kv_cache_memory_bytes are ignored: the budget is what is searched)
 *  at \p concurrency requests of max_model_len tokens. InvalidArgument for bad inputs, a
 *  non-positive concurrency, max_model_len auto or num_gpu_blocks_override (both fix the KV cache
 *  by something other than the concurrency). */
StageDemand StageDemandFor(const ModelSpec& spec, const PlanInputs& inputs, int64_t stage_id,
                           const std::vector<int64_t>& devices, double concurrency);

}  // namespace vllm_mem

#endif  // VLLM_MEM_STAGES_STAGE_DEMAND_H_
