/*!
 * \file bindings/bind_stages.cc
 * \brief Stage configs, per-device stage checks and the cross-rank imbalance check, read-only
 *        from Python (vllm_mem.stages wraps them).
 */
#include <pybind11/stl.h>

#include "bindings/bind.h"
#include "core/memory_imbalance.h"
#include "core/stage_check.h"
#include "core/stage_config.h"

namespace py = pybind11;

namespace vllm_mem::bindings {

void BindStages(py::module_& m) {
  py::class_<StageConfig>(m, "StageConfig", "One vLLM-Omni stage, resolved.")
      .def_readonly("stage_id", &StageConfig::stage_id)
      .def_readonly("list_index", &StageConfig::list_index)
      .def_readonly("source", &StageConfig::source)
      .def_readonly("devices_text", &StageConfig::devices_text)
      .def_readonly("devices_defaulted", &StageConfig::devices_defaulted)
      .def_readonly("on_cpu", &StageConfig::on_cpu)
      .def_readonly("logical_devices", &StageConfig::logical_devices)
      .def_readonly("physical_devices", &StageConfig::physical_devices)
      .def_readonly("resident_devices", &StageConfig::resident_devices)
      .def_readonly("gpu_memory_utilization", &StageConfig::gpu_memory_utilization)
      .def_readonly("utilization_ppm", &StageConfig::utilization_ppm)
      .def_readonly("utilization_text", &StageConfig::utilization_text)
      .def_readonly("utilization_defaulted", &StageConfig::utilization_defaulted)
      .def_readonly("utilization_field", &StageConfig::utilization_field)
      .def_readonly("tensor_parallel_size", &StageConfig::tensor_parallel_size)
      .def_readonly("pipeline_parallel_size", &StageConfig::pipeline_parallel_size)
      .def_readonly("enforce_eager", &StageConfig::enforce_eager)
      .def_readonly("max_num_batched_tokens", &StageConfig::max_num_batched_tokens)
      .def_readonly("max_num_seqs", &StageConfig::max_num_seqs)
      .def_readonly("max_model_len", &StageConfig::max_model_len)
      .def_readonly("max_batch_size", &StageConfig::max_batch_size)
      .def_readonly("model", &StageConfig::model)
      .def_readonly("model_stage", &StageConfig::model_stage)
      .def_readonly("model_arch", &StageConfig::model_arch);

  py::class_<StageConfigSet>(m, "StageConfigSet", "A parsed vLLM-Omni stage config.")
      .def_property_readonly("format",
                             [](const StageConfigSet& s) {
                               return s.format == StageConfigFormat::kStageArgs ? "stage_args" : "stages";
                             })
      .def_readonly("stages", &StageConfigSet::stages)
      .def_readonly("cuda_visible_devices", &StageConfigSet::cuda_visible_devices)
      .def_readonly("notes", &StageConfigSet::notes);

  m.def(
      "parse_stage_config",
      [](const std::string& json_text, const std::vector<int64_t>& cuda_visible_devices, int64_t num_visible_devices) {
        StageConfigOptions o;
        o.cuda_visible_devices = cuda_visible_devices;
        o.num_visible_devices = num_visible_devices;
        return ParseStageConfigText(json_text, o);
      },
      py::arg("json_text"), py::arg("cuda_visible_devices") = std::vector<int64_t>{},
      py::arg("num_visible_devices") = 0);
  m.def("parse_cuda_visible_devices", &ParseCudaVisibleDevices, py::arg("text"));
  m.def("format_utilization_ppm", &FormatUtilizationPpm, py::arg("ppm"));

  py::class_<DeviceMemoryInfo>(m, "DeviceMemoryInfo")
      .def(py::init([](int64_t physical_id, const std::string& name, int64_t total_bytes, int64_t free_bytes) {
             return DeviceMemoryInfo{physical_id, name, total_bytes, free_bytes};
           }),
           py::arg("physical_id"), py::arg("name") = "", py::arg("total_bytes") = 0, py::arg("free_bytes") = -1);

  py::class_<ResidentStage>(m, "ResidentStage")
      .def_readonly("stage_id", &ResidentStage::stage_id)
      .def_readonly("local_index", &ResidentStage::local_index)
      .def_readonly("utilization_ppm", &ResidentStage::utilization_ppm)
      .def_readonly("utilization_text", &ResidentStage::utilization_text)
      .def_readonly("requested_bytes", &ResidentStage::requested_bytes)
      .def_readonly("enforce_eager", &ResidentStage::enforce_eager);

  py::class_<DeviceCheck>(m, "DeviceCheck")
      .def_readonly("physical_id", &DeviceCheck::physical_id)
      .def_readonly("name", &DeviceCheck::name)
      .def_readonly("total_bytes", &DeviceCheck::total_bytes)
      .def_readonly("free_bytes", &DeviceCheck::free_bytes)
      .def_readonly("free_is_live", &DeviceCheck::free_is_live)
      .def_readonly("free_source", &DeviceCheck::free_source)
      .def_readonly("stages", &DeviceCheck::stages)
      .def_readonly("utilization_ppm", &DeviceCheck::utilization_ppm)
      .def_readonly("utilization_text", &DeviceCheck::utilization_text)
      .def_readonly("utilization_expression", &DeviceCheck::utilization_expression)
      .def_readonly("requested_bytes", &DeviceCheck::requested_bytes)
      .def_readonly("headroom_bytes", &DeviceCheck::headroom_bytes)
      .def_readonly("headroom_ppm", &DeviceCheck::headroom_ppm)
      .def_readonly("over_committed", &DeviceCheck::over_committed)
      .def_readonly("reason", &DeviceCheck::reason)
      .def_readonly("admission_required_bytes", &DeviceCheck::admission_required_bytes)
      .def_readonly("admission_ok", &DeviceCheck::admission_ok);

  py::class_<StartupPrediction>(m, "StartupPrediction")
      .def_readonly("stage_id", &StartupPrediction::stage_id)
      .def_readonly("physical_id", &StartupPrediction::physical_id)
      .def_readonly("device", &StartupPrediction::device)
      .def_readonly("free_bytes", &StartupPrediction::free_bytes)
      .def_readonly("requested_bytes", &StartupPrediction::requested_bytes)
      .def_readonly("fails", &StartupPrediction::fails)
      .def_readonly("message", &StartupPrediction::message);

  py::class_<StageLimit>(m, "StageLimit")
      .def_readonly("stage_id", &StageLimit::stage_id)
      .def_readonly("max_utilization_ppm", &StageLimit::max_utilization_ppm)
      .def_readonly("limiting_device", &StageLimit::limiting_device);

  py::class_<StageCheckResult>(m, "StageCheckResult")
      .def_readonly("config", &StageCheckResult::config)
      .def_readonly("devices", &StageCheckResult::devices)
      .def_readonly("startup", &StageCheckResult::startup)
      .def_readonly("limits", &StageCheckResult::limits)
      .def_readonly("problems", &StageCheckResult::problems)
      .def_readonly("suggestions", &StageCheckResult::suggestions)
      .def_readonly("oom_advice", &StageCheckResult::oom_advice)
      .def_readonly("notes", &StageCheckResult::notes)
      .def_readonly("ok", &StageCheckResult::ok)
      .def("report", &StageCheckResult::Report);

  m.def(
      "check_stages",
      [](const StageConfigSet& config, const std::vector<DeviceMemoryInfo>& devices,
         const DeviceMemoryInfo& default_device, int64_t reserve_bytes, bool free_is_live) {
        StageCheckOptions o;
        o.devices = devices;
        o.default_device = default_device;
        o.reserve_bytes = reserve_bytes;
        o.free_is_live = free_is_live;
        return CheckStages(config, o);
      },
      py::arg("config"), py::arg("devices"), py::arg("default_device"), py::arg("reserve_bytes") = 0,
      py::arg("free_is_live") = false);

  py::class_<MemoryImbalance>(m, "MemoryImbalance")
      .def_readonly("imbalanced", &MemoryImbalance::imbalanced)
      .def_readonly("ratio", &MemoryImbalance::ratio)
      .def_readonly("free_bytes_per_rank", &MemoryImbalance::free_bytes_per_rank)
      .def_readonly("min_free_bytes", &MemoryImbalance::min_free_bytes)
      .def_readonly("max_free_bytes", &MemoryImbalance::max_free_bytes)
      .def_readonly("min_rank", &MemoryImbalance::min_rank)
      .def_readonly("max_rank", &MemoryImbalance::max_rank)
      .def_readonly("warning_ranks", &MemoryImbalance::warning_ranks)
      .def_readonly("lost_bytes", &MemoryImbalance::lost_bytes)
      .def_readonly("message", &MemoryImbalance::message);
  m.def("check_memory_imbalance", &CheckMemoryImbalance, py::arg("free_bytes_per_rank"),
        py::arg("ratio") = kSglangImbalanceRatio);
}

}  // namespace vllm_mem::bindings
