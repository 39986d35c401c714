/*!
 * \file bindings/bind_stages.cc
 * \brief Stage configs, per-device stage checks and the cross-rank imbalance check, read-only
 *        from Python (vllm_mem.stages wraps them).
 */
#include <pybind11/stl.h>

#include <tuple>
#include <utility>

#include "bindings/bind.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/stages/memory_imbalance.h"
#include "vllm_mem/stages/rank_layout.h"
#include "vllm_mem/stages/stage_check.h"
#include "vllm_mem/stages/stage_config.h"
#include "vllm_mem/stages/stage_demand.h"
#include "vllm_mem/stages/stage_plans.h"
#include "vllm_mem/stages/utilization_assignment.h"

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

  m.def("device_total_bytes", &DeviceTotalBytes, py::arg("info"),
        "total_bytes when > 0, else the GPU catalog's figure for the name");

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
      .def_readonly("plan_lines", &StageCheckResult::plan_lines)
      .def_readonly("ok", &StageCheckResult::ok);

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

  py::class_<StagePlanSummary>(m, "StagePlanSummary")
      .def_readonly("stage_id", &StagePlanSummary::stage_id)
      .def_readonly("model", &StagePlanSummary::model)
      .def_readonly("physical_id", &StagePlanSummary::physical_id)
      .def_readonly("total_bytes", &StagePlanSummary::total_bytes)
      .def_readonly("free_bytes", &StagePlanSummary::free_bytes)
      .def_readonly("max_model_len", &StagePlanSummary::max_model_len)
      .def_readonly("fits", &StagePlanSummary::fits)
      .def_readonly("failure_phase", &StagePlanSummary::failure_phase)
      .def_readonly("failure_message", &StagePlanSummary::failure_message)
      .def_readonly("shortfall_bytes", &StagePlanSummary::shortfall_bytes)
      .def_readonly("requested_bytes", &StagePlanSummary::requested_bytes)
      .def_readonly("weights_bytes", &StagePlanSummary::weights_bytes)
      .def_readonly("non_kv_cache_bytes", &StagePlanSummary::non_kv_cache_bytes)
      .def_readonly("available_kv_cache_bytes", &StagePlanSummary::available_kv_cache_bytes)
      .def_readonly("num_blocks", &StagePlanSummary::num_blocks)
      .def_readonly("num_tokens", &StagePlanSummary::num_tokens)
      .def_readonly("max_concurrency", &StagePlanSummary::max_concurrency)
      .def_readonly("line", &StagePlanSummary::line);

  m.def(
      "check_stages_with_plans",
      [](const StageConfigSet& config, const std::vector<DeviceMemoryInfo>& devices,
         const DeviceMemoryInfo& default_device, int64_t reserve_bytes, bool free_is_live,
         const std::vector<std::tuple<int64_t, ModelSpec, std::string, int64_t, PlanInputs>>& models) {
        StageCheckOptions o;
        o.devices = devices;
        o.default_device = default_device;
        o.reserve_bytes = reserve_bytes;
        o.free_is_live = free_is_live;
        StageCheckResult result = CheckStages(config, o);
        std::vector<StageModel> stage_models;
        for (const auto& [id, spec, name, len, settings] : models) {
          stage_models.push_back({id, spec, name, len, settings});
        }
        std::vector<StagePlanSummary> plans = AddStagePlans(result, stage_models);
        return std::make_pair(std::move(result), std::move(plans));
      },
      py::arg("config"), py::arg("devices"), py::arg("default_device"), py::arg("reserve_bytes"),
      py::arg("free_is_live"), py::arg("models"));

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

  py::class_<WorkerLayout>(m, "WorkerLayout")
      .def_readonly("rank", &WorkerLayout::rank)
      .def_readonly("tp_rank", &WorkerLayout::tp_rank)
      .def_readonly("pp_rank", &WorkerLayout::pp_rank)
      .def_readonly("first_layer", &WorkerLayout::first_layer)
      .def_readonly("end_layer", &WorkerLayout::end_layer)
      .def_readonly("holds_embedding", &WorkerLayout::holds_embedding)
      .def_readonly("holds_lm_head", &WorkerLayout::holds_lm_head)
      .def_readonly("total_bytes", &WorkerLayout::total_bytes)
      .def_readonly("budget_bytes", &WorkerLayout::budget_bytes)
      .def_readonly("free_bytes", &WorkerLayout::free_bytes)
      .def_readonly("fails_startup", &WorkerLayout::fails_startup)
      .def_readonly("weights_bytes", &WorkerLayout::weights_bytes)
      .def_readonly("overhead_bytes", &WorkerLayout::overhead_bytes)
      .def_readonly("available_kv_bytes", &WorkerLayout::available_kv_bytes)
      .def_readonly("num_blocks", &WorkerLayout::num_blocks)
      .def_readonly("extra_blocks", &WorkerLayout::extra_blocks);

  py::class_<RankLayout>(m, "RankLayout")
      .def_readonly("workers", &RankLayout::workers)
      .def_readonly("tightest_rank", &RankLayout::tightest_rank)
      .def_readonly("tightest_reason", &RankLayout::tightest_reason)
      .def_readonly("kv_cache", &RankLayout::kv_cache)
      .def_readonly("fits", &RankLayout::fits)
      .def_readonly("failure_message", &RankLayout::failure_message);

  m.def(
      "compute_rank_layout",
      [](const ModelSpec& spec, const std::vector<int64_t>& total_memory_bytes_per_worker, double utilization,
         const std::vector<int64_t>& free_memory_bytes_per_worker, const std::vector<int64_t>& overhead_bytes_per_pp_rank,
         const std::string& dtype, const std::string& quantization, int64_t tensor_parallel_size,
         int64_t pipeline_parallel_size, const KvCacheOptions& kv) {
        RankLayoutInputs in;
        in.total_memory_bytes_per_worker = total_memory_bytes_per_worker;
        in.gpu_memory_utilization = utilization;
        in.free_memory_bytes_per_worker = free_memory_bytes_per_worker;
        in.overhead_bytes_per_pp_rank = overhead_bytes_per_pp_rank;
        in.weights.dtype = dtype;
        in.weights.quantization = quantization;
        in.weights.tensor_parallel_size = tensor_parallel_size;
        in.weights.pipeline_parallel_size = pipeline_parallel_size;
        in.kv = kv;
        return ComputeRankLayout(spec, in);
      },
      py::arg("spec"), py::arg("total_memory_bytes_per_worker"), py::arg("gpu_memory_utilization"),
      py::arg("free_memory_bytes_per_worker"), py::arg("overhead_bytes_per_pp_rank"), py::arg("dtype"),
      py::arg("quantization"), py::arg("tensor_parallel_size"), py::arg("pipeline_parallel_size"), py::arg("kv"));

  py::class_<StageDemand>(m, "StageDemand")
      .def(py::init([](int64_t stage_id, int64_t world_size, const std::vector<int64_t>& devices, int64_t fixed_bytes,
                       int64_t kv_bytes_needed) {
             return StageDemand{stage_id, world_size, devices, fixed_bytes, kv_bytes_needed};
           }),
           py::arg("stage_id"), py::arg("world_size"), py::arg("devices"), py::arg("fixed_bytes"),
           py::arg("kv_bytes_needed"))
      .def_readonly("stage_id", &StageDemand::stage_id)
      .def_readonly("world_size", &StageDemand::world_size)
      .def_readonly("devices", &StageDemand::devices)
      .def_readonly("fixed_bytes", &StageDemand::fixed_bytes)
      .def_readonly("kv_bytes_needed", &StageDemand::kv_bytes_needed);

  py::class_<StageAssignment>(m, "StageAssignment")
      .def_readonly("stage_id", &StageAssignment::stage_id)
      .def_readonly("devices", &StageAssignment::devices)
      .def_readonly("min_utilization_ppm", &StageAssignment::min_utilization_ppm)
      .def_readonly("utilization_ppm", &StageAssignment::utilization_ppm)
      .def_readonly("utilization_text", &StageAssignment::utilization_text)
      .def_readonly("requested_bytes", &StageAssignment::requested_bytes)
      .def_readonly("kv_bytes", &StageAssignment::kv_bytes)
      .def_readonly("kv_bytes_needed", &StageAssignment::kv_bytes_needed)
      .def_readonly("kv_headroom", &StageAssignment::kv_headroom);

  py::class_<AssignedDevice>(m, "AssignedDevice")
      .def_readonly("physical_id", &AssignedDevice::physical_id)
      .def_readonly("name", &AssignedDevice::name)
      .def_readonly("total_bytes", &AssignedDevice::total_bytes)
      .def_readonly("utilization_ppm", &AssignedDevice::utilization_ppm)
      .def_readonly("utilization_text", &AssignedDevice::utilization_text)
      .def_readonly("stage_ids", &AssignedDevice::stage_ids);

  py::class_<UtilizationAssignment>(m, "UtilizationAssignment")
      .def_readonly("feasible", &UtilizationAssignment::feasible)
      .def_readonly("stages", &UtilizationAssignment::stages)
      .def_readonly("devices", &UtilizationAssignment::devices)
      .def_readonly("unsatisfied_stage_id", &UtilizationAssignment::unsatisfied_stage_id)
      .def_readonly("unsatisfied_device", &UtilizationAssignment::unsatisfied_device)
      .def_readonly("shortfall_bytes", &UtilizationAssignment::shortfall_bytes)
      .def_readonly("message", &UtilizationAssignment::message);

  m.def(
      "assign_utilizations",
      [](const std::vector<StageDemand>& demands, const std::vector<DeviceMemoryInfo>& devices,
         int64_t max_device_utilization_ppm, int64_t step_ppm) {
        AssignmentOptions o;
        o.devices = devices;
        o.max_device_utilization_ppm = max_device_utilization_ppm;
        o.step_ppm = step_ppm;
        return AssignUtilizations(demands, o);
      },
      py::arg("demands"), py::arg("devices"), py::arg("max_device_utilization_ppm"), py::arg("step_ppm"));
  m.def("stage_demand_for", &StageDemandFor, py::arg("spec"), py::arg("inputs"), py::arg("stage_id"),
        py::arg("devices"), py::arg("concurrency"),
        "A stage's need from plan()'s settings object (PlanInputs, built as plan() builds it).");
  m.def("utilization_to_ppm", &UtilizationToPpm, py::arg("utilization"));
}

}  // namespace vllm_mem::bindings
