/*!
 * \file vllm_mem/stages/utilization_assignment.h
 * \brief Choosing gpu_memory_utilization (and optionally devices) for several vLLM engines /
 *        vLLM-Omni stages sharing GPUs, so that every stage gets what it needs and the KV
 *        headroom left over is shared as evenly as possible.
 *
 * A stage's need per worker is split in two: fixed bytes (weights on its tensor/pipeline
 * split, activation peak, non-torch and CUDA-graph memory: what vLLM subtracts before the KV
 * cache) and the KV bytes its required concurrency at max_model_len takes. Both come from the
 * start-up planner (vllm_mem/plan/startup_plan.h) and the KV sizing (vllm_mem/kv_cache/kv_cache_capacity.h); this
 * file only searches utilizations:
 *  1. each stage's least utilization u_min (a multiple of the step, 0.01 by default) whose
 *     budget ceil(total * u) covers fixed + KV need on each of its devices;
 *  2. unplaced stages go, largest need first, onto the devices with the most room left;
 *  3. if some device's sum of u_min exceeds the cap, the first stage in start order that
 *     overflows it is named, with the bytes missing;
 *  4. otherwise the room left is handed out a step at a time to the stage whose KV budget is
 *     the smallest multiple of its need (max-min fairness of KV headroom), until no step fits.
 */
#ifndef VLLM_MEM_STAGES_UTILIZATION_ASSIGNMENT_H_
#define VLLM_MEM_STAGES_UTILIZATION_ASSIGNMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/stages/stage_check.h"

namespace vllm_mem {

/*! \brief What one stage needs on each of its workers. */
struct StageDemand {
  int64_t stage_id = 0;
  int64_t world_size = 1;              //!< tensor x pipeline workers, one GPU each
  std::vector<int64_t> devices;        //!< fixed physical devices (world_size of them); empty: place it
  int64_t fixed_bytes = 0;             //!< weights + activation + non-torch + CUDA graphs, per worker
  int64_t kv_bytes_needed = 0;         //!< KV for the required concurrency, per worker
};

/*! \brief The GPUs and the search settings. */
struct AssignmentOptions {
  std::vector<DeviceMemoryInfo> devices;  //!< physical ids and totals (names resolved via the catalog)
  //! Most a device may carry in total: the docs advise against 1.0 (no buffer left).
  int64_t max_device_utilization_ppm = 950'000;
  int64_t step_ppm = 10'000;              //!< granularity of the utilizations handed out (0.01)
};

/*! \brief One stage's answer. */
struct StageAssignment {
  int64_t stage_id = 0;
  std::vector<int64_t> devices;
  int64_t min_utilization_ppm = 0;   //!< least utilization that satisfies it
  int64_t utilization_ppm = 0;       //!< assigned
  std::string utilization_text;      //!< "0.45"
  int64_t requested_bytes = 0;       //!< ceil(total * u) on its smallest device
  int64_t kv_bytes = 0;              //!< KV budget per worker at the assigned utilization
  int64_t kv_bytes_needed = 0;
  double kv_headroom = 0.0;          //!< kv_bytes / kv_bytes_needed (>= 1 when satisfied)
};

/*! \brief One device's total after assignment. */
struct AssignedDevice {
  int64_t physical_id = 0;
  std::string name;
  int64_t total_bytes = 0;
  int64_t utilization_ppm = 0;
  std::string utilization_text;      //!< exact sum ("0.95")
  std::vector<int64_t> stage_ids;
};

/*! \brief The assignment, or why there is none. */
struct UtilizationAssignment {
  bool feasible = false;
  std::vector<StageAssignment> stages;  //!< in the order given
  std::vector<AssignedDevice> devices;
  int64_t unsatisfied_stage_id = -1;    //!< the stage that cannot be satisfied
  int64_t unsatisfied_device = -1;      //!< on which device
  int64_t shortfall_bytes = 0;          //!< by how many bytes
  std::string message;                  //!< summary or the reason it fails
};

/*! \brief Searches utilizations (and placements for stages without devices). InvalidArgument
 *  for malformed demands (duplicate ids, device count != world_size, unknown device, negative
 *  bytes) or options (cap outside (0, 1], step outside (0, cap]). */
UtilizationAssignment AssignUtilizations(const std::vector<StageDemand>& demands, const AssignmentOptions& options);

}  // namespace vllm_mem

#endif  // VLLM_MEM_STAGES_UTILIZATION_ASSIGNMENT_H_
