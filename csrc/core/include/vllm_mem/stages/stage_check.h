/*!
 * \file vllm_mem/stages/stage_check.h
 * \brief Several vLLM engines (vLLM-Omni stages) on shared GPUs: per physical device, which
 *        stages are resident, the exact sum of their gpu_memory_utilization, the bytes each
 *        requests, the headroom, the start-up "Free memory on device ..." prediction in start
 *        order, and the usual fixes (lower, move, free memory) made concrete for the config.
 *
 * Each stage is its own vLLM engine; each of its workers requests ceil(total * utilization) of
 * its device (memory_budget.h) and, once started, holds about that much (the KV cache fills the
 * budget). So a device is over-committed when the utilizations resident on it sum above 1.0,
 * whatever the pipeline timing, and a stage fails to start when the memory left free by the
 * stages started before it (and by other processes) is below its request.
 */
#ifndef VLLM_MEM_STAGES_STAGE_CHECK_H_
#define VLLM_MEM_STAGES_STAGE_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/stages/stage_config.h"

namespace vllm_mem {

/*! \brief Memory of one physical GPU. */
struct DeviceMemoryInfo {
  int64_t physical_id = 0;
  std::string name;          //!< "H100-80GB", a device name, or "" when unknown
  int64_t total_bytes = 0;   //!< > 0; 0: looked up in the GPU catalog by name
  int64_t free_bytes = -1;   //!< free before any stage starts; < 0: total - reserve (offline)
};

/*! \brief The device's total: total_bytes when > 0, else the catalog figure of its name
 *  (vllm_mem/plan/gpu_catalog.h). InvalidArgument (field gpu) for an unknown name or no figure at all. */
int64_t DeviceTotalBytes(const DeviceMemoryInfo& info);

/*! \brief The machine the stages run on. */
struct StageCheckOptions {
  std::vector<DeviceMemoryInfo> devices;  //!< per physical id; others use default_device
  DeviceMemoryInfo default_device;        //!< no name and no total: every device must be listed
  int64_t reserve_bytes = 0;              //!< offline: free assumed = total - reserve
  bool free_is_live = false;              //!< free_bytes came from a live snapshot
};

/*! \brief One stage's share of one device. */
struct ResidentStage {
  int64_t stage_id = 0;
  int64_t local_index = 0;       //!< cuda:N inside the stage (its position in its device list)
  double utilization = 0.0;
  int64_t utilization_ppm = 0;
  std::string utilization_text;  //!< as written
  int64_t requested_bytes = 0;   //!< ceil(total * utilization), vLLM's request_memory
  bool enforce_eager = true;
};

/*! \brief One physical device. */
struct DeviceCheck {
  int64_t physical_id = 0;
  std::string name;
  int64_t total_bytes = 0;
  int64_t free_bytes = 0;               //!< before any stage starts
  bool free_is_live = false;
  std::string free_source;              //!< "live", "given" or "assumed: ..."
  std::vector<ResidentStage> stages;    //!< in start order
  int64_t utilization_ppm = 0;          //!< exact sum
  std::string utilization_text;         //!< "0.9"
  std::string utilization_expression;   //!< "0.6 + 0.3 = 0.9"
  int64_t requested_bytes = 0;          //!< sum of the stages' requests
  int64_t headroom_bytes = 0;           //!< total - requested (negative when over)
  int64_t headroom_ppm = 0;             //!< 1.0 - sum, in ppm
  bool over_committed = false;          //!< sum > 1.0
  std::string reason;                   //!< why, when over-committed
  //! vLLM-Omni's parallel_stage_init admission: sum of int(capacity * util) + 2 GiB per stage
  //! with CUDA graphs + 1 GiB external reserve + 1 GiB margin must be <= capacity.
  int64_t admission_required_bytes = 0;
  bool admission_ok = true;
};

/*! \brief The start-up check of one stage worker (vLLM's request_memory), predicted. */
struct StartupPrediction {
  int64_t stage_id = 0;
  int64_t physical_id = 0;
  std::string device;            //!< "cuda:0", the name vLLM prints (inside the stage)
  int64_t free_bytes = 0;        //!< free when the stage starts
  int64_t requested_bytes = 0;
  bool fails = false;
  std::string message;           //!< vLLM's ValueError text when it fails
};

/*! \brief One stage's room to grow or the most it may take. */
struct StageLimit {
  int64_t stage_id = 0;
  int64_t max_utilization_ppm = 0;  //!< largest utilization keeping each of its devices <= 1.0
  int64_t limiting_device = 0;      //!< the device that bounds it
};

/*! \brief Everything the check found. */
struct StageCheckResult {
  StageConfigSet config;
  std::vector<DeviceCheck> devices;           //!< by physical id
  std::vector<StartupPrediction> startup;     //!< in start order
  std::vector<StageLimit> limits;             //!< in start order (GPU stages only)
  std::vector<std::string> problems;          //!< exact reasons; empty when ok
  std::vector<std::string> suggestions;       //!< the usual fixes, concrete
  std::vector<std::string> oom_advice;        //!< "OOM during inference" solutions per stage
  std::vector<std::string> notes;             //!< parser notes and remarks
  std::vector<std::string> plan_lines;        //!< one per stage planned (vllm_mem/stages/stage_plans.h)
  bool ok = true;                             //!< no device over-committed, every stage starts
  // Its text report is built in Python beside the dict and HTML (vllm_mem/stages/render.py).
};

/*! \brief Checks \p config against the devices in \p options. InvalidArgument (field gpus)
 *  when a resident device has no memory figure. */
StageCheckResult CheckStages(const StageConfigSet& config, const StageCheckOptions& options);

}  // namespace vllm_mem

#endif  // VLLM_MEM_STAGES_STAGE_CHECK_H_
