/*!
 * \file vllm_mem/stages/stage_config.h
 * \brief vLLM-Omni stage configs as vLLM-Omni reads them: the old top-level `stage_args:` list
 *        and the newer top-level `stages:` list, with device strings mapped through
 *        CUDA_VISIBLE_DEVICES to physical GPUs.
 *
 * Configs reach the core as JSON (Python loads YAML with PyYAML and passes json.dumps), so the
 * C++ tests and the Python API read exactly the same thing.
 *
 * Lookup rules (docs/stages.md):
 *  - a knob (gpu_memory_utilization, tensor_parallel_size, ...) is `engine_args[key]`, then
 *    the flat `stage[key]` (the newer format's spelling);
 *  - devices are `runtime.devices`, then `devices`; absent means vLLM-Omni's documented
 *    default "0";
 *  - `"a,b"` lists logical indices, an int or digit string is one logical index; each is an
 *    index into CUDA_VISIBLE_DEVICES when that is given, else the physical id itself.
 *
 * The TP rule is vLLM's, not vLLM-Omni's: vLLM-Omni only sets CUDA_VISIBLE_DEVICES to the
 * stage's list, and vLLM then runs tensor_parallel_size x pipeline_parallel_size workers on the
 * first that many visible devices. Fewer listed devices than that is an error (vLLM cannot start
 * the workers on one node); more is allowed, and the extra devices carry nothing of the stage.
 */
#ifndef VLLM_MEM_STAGES_STAGE_CONFIG_H_
#define VLLM_MEM_STAGES_STAGE_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vllm_mem/base/json.h"

namespace vllm_mem {

/*! \brief vLLM-Omni's documented default gpu_memory_utilization of a stage. */
inline constexpr double kOmniDefaultGpuMemoryUtilization = 0.8;

/*! \brief Which top-level list the config used. */
enum class StageConfigFormat {
  kStageArgs,  //!< `stage_args:` (vLLM-Omni up to late 2025; removed upstream since)
  kStages,     //!< `stages:` (vllm_omni/deploy/*.yaml)
};

/*! \brief One stage, resolved. */
struct StageConfig {
  int64_t stage_id = 0;
  int64_t list_index = 0;     //!< position in the list: the start order
  std::string source;         //!< "stage_args[1]" / "stages[1]", for messages
  std::string devices_text;   //!< devices as written ("0,1", "1"); "" when defaulted
  bool devices_defaulted = false;
  bool on_cpu = false;        //!< devices: cpu / null: no GPU budget
  std::vector<int64_t> logical_devices;   //!< as listed
  std::vector<int64_t> physical_devices;  //!< mapped through CUDA_VISIBLE_DEVICES
  std::vector<int64_t> resident_devices;  //!< the first world-size physical devices: those
                                          //!< vLLM's workers use and budget on

  double gpu_memory_utilization = kOmniDefaultGpuMemoryUtilization;
  int64_t utilization_ppm = 0;      //!< exact parts per million, for sums
  std::string utilization_text;     //!< as the user wrote it ("0.6")
  bool utilization_defaulted = false;
  std::string utilization_field;    //!< where it was read ("engine_args.gpu_memory_utilization")

  int64_t tensor_parallel_size = 1;
  int64_t pipeline_parallel_size = 1;
  bool enforce_eager = true;          //!< vLLM-Omni's documented default
  int64_t max_num_batched_tokens = 0; //!< 0: not set
  int64_t max_num_seqs = 0;           //!< 0: not set
  int64_t max_model_len = 0;          //!< 0: not set
  int64_t max_batch_size = 0;         //!< runtime.max_batch_size; 0: not set
  std::string model;                  //!< engine_args.model / model (a path or HF id), may be ""
  std::string model_stage;            //!< engine_args.model_stage ("thinker", "talker", ...)
  std::string model_arch;             //!< engine_args.model_arch

  /*! \brief tensor_parallel_size * pipeline_parallel_size: vLLM's workers per stage. */
  int64_t WorldSize() const { return tensor_parallel_size * pipeline_parallel_size; }
  /*! \brief "stage 1", as messages name it. */
  std::string Label() const { return "stage " + std::to_string(stage_id); }
};

/*! \brief What the parser needs to know about the machine. */
struct StageConfigOptions {
  //! CUDA_VISIBLE_DEVICES as physical ids; empty: unset (logical index == physical id)
  std::vector<int64_t> cuda_visible_devices;
  //! number of GPUs visible when known (> 0 bounds-checks indices without CUDA_VISIBLE_DEVICES)
  int64_t num_visible_devices = 0;
};

/*! \brief A parsed config. */
struct StageConfigSet {
  StageConfigFormat format = StageConfigFormat::kStages;
  std::vector<StageConfig> stages;  //!< in list (start) order
  std::vector<int64_t> cuda_visible_devices;  //!< the mapping used (empty: identity)
  std::vector<std::string> notes;   //!< defaults taken, keys ignored, format remarks
};

/*! \brief Reads a stage config document. InvalidArgument naming the stage ("stage_args[2]
 *  (stage 1)") and the field for: a top level that is not a mapping or has no stage list,
 *  a stage that is not a mapping, a missing or duplicate stage_id, a device index outside the
 *  visible set or listed twice, fewer devices than tensor_parallel_size x
 *  pipeline_parallel_size, a utilization outside (0, 1], and fields of the wrong type. */
StageConfigSet ParseStageConfig(const JsonValue& root, const StageConfigOptions& options = {});

/*! \brief Same, from JSON text. */
StageConfigSet ParseStageConfigText(std::string_view json_text, const StageConfigOptions& options = {});

/*! \brief CUDA_VISIBLE_DEVICES text ("0,3") as physical ids; InvalidArgument for non-integer
 *  entries (UUID / MIG forms are not mapped). Empty text gives an empty list (unset). */
std::vector<int64_t> ParseCudaVisibleDevices(std::string_view text);

/*! \brief A ppm utilization as users write it: 900000 -> "0.9", 1000000 -> "1.0",
 *  1100000 -> "1.1", 250000 -> "0.25". */
std::string FormatUtilizationPpm(int64_t ppm);

/*! \brief Python's repr of a float (shortest round-trip text, ".0" kept): 0.6 -> "0.6". */
std::string FormatUtilization(double utilization);

}  // namespace vllm_mem

#endif  // VLLM_MEM_STAGES_STAGE_CONFIG_H_
