/*!
 * \file bindings/bind_plan.cc
 * \brief Bindings of the start-up plan area: GPU catalog, worker-flow budget arithmetic,
 *        profile-run estimators, the plan, its levers and the sweep. Conversions only.
 */
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings/bind.h"
#include "vllm_mem/plan/activation_estimate.h"
#include "vllm_mem/plan/cudagraph_estimate.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/non_torch_estimate.h"
#include "vllm_mem/plan/plan_suggestions.h"
#include "vllm_mem/plan/plan_sweep.h"
#include "vllm_mem/plan/startup_budget.h"
#include "vllm_mem/plan/startup_plan.h"

namespace py = pybind11;

namespace vllm_mem::bindings {
namespace {

template <typename T>
py::array_t<T> ToArray(std::vector<T>&& v) {
  // Move the vector onto the heap and let the array own it: no copy of large columns.
  auto* owned = new std::vector<T>(std::move(v));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(static_cast<py::ssize_t>(owned->size()), owned->data(), free_when_done);
}

py::dict GpuDict(const GpuInfo& g) {
  py::dict d;
  d["name"] = g.name;
  d["device_name"] = g.device_name;
  d["vendor"] = GpuVendorName(g.vendor);
  d["memory_type"] = g.memory_type;
  d["nominal_memory_gb"] = g.nominal_memory_gb;
  d["total_memory_bytes"] = g.total_memory_bytes;
  d["figure_source"] = MemoryFigureSourceName(g.figure_source);
  d["figure_uncertainty_bytes"] = g.figure_uncertainty_bytes;
  d["source_note"] = g.source_note;
  d["aliases"] = g.aliases;
  return d;
}

}  // namespace

void BindPlan(py::module_& m) {
  // ---- GPU catalog ---------------------------------------------------------------------------
  m.def("gpu_catalog", [] {
    py::list out;
    for (const auto& g : GpuCatalog()) out.append(GpuDict(g));
    return out;
  }, "Every catalog entry as a dict.");
  m.def("lookup_gpu", [](const std::string& name) { return GpuDict(LookupGpu(name)); }, py::arg("name"));
  m.def("close_gpu_matches", &CloseGpuMatches, py::arg("name"), py::arg("limit") = 5);
  m.def("normalize_gpu_name", &NormalizeGpuName, py::arg("name"));

  // ---- worker-flow arithmetic ----------------------------------------------------------------
  m.def("python_float_repr", &PythonFloatRepr, py::arg("value"));
  py::class_<RequestedMemory>(m, "RequestedMemory")
      .def_readonly("requested_bytes", &RequestedMemory::requested_bytes)
      .def_readonly("fits", &RequestedMemory::fits)
      .def_readonly("error_message", &RequestedMemory::error_message)
      .def_readonly("largest_fitting_utilization_ppm", &RequestedMemory::largest_fitting_utilization_ppm);
  m.def("check_request_memory", &CheckRequestMemory, py::arg("total_memory_bytes"), py::arg("free_memory_bytes"),
        py::arg("gpu_memory_utilization"), py::arg("device") = "cuda:0");
  py::class_<ProfileMeasurements>(m, "ProfileMeasurements")
      .def(py::init<>())
      .def_readwrite("weights_bytes", &ProfileMeasurements::weights_bytes)
      .def_readwrite("torch_peak_increase_bytes", &ProfileMeasurements::torch_peak_increase_bytes)
      .def_readwrite("non_torch_increase_bytes", &ProfileMeasurements::non_torch_increase_bytes)
      .def_readwrite("cudagraph_estimate_bytes", &ProfileMeasurements::cudagraph_estimate_bytes);
  py::class_<AvailableKvOptions>(m, "AvailableKvOptions")
      .def(py::init<>())
      .def_readwrite("total_memory_bytes", &AvailableKvOptions::total_memory_bytes)
      .def_readwrite("gpu_memory_utilization", &AvailableKvOptions::gpu_memory_utilization)
      .def_readwrite("kv_cache_memory_bytes", &AvailableKvOptions::kv_cache_memory_bytes)
      .def_readwrite("init_free_memory_bytes", &AvailableKvOptions::init_free_memory_bytes)
      .def_readwrite("estimate_cudagraphs", &AvailableKvOptions::estimate_cudagraphs);
  py::class_<AvailableKvMemory>(m, "AvailableKvMemory")
      .def_readonly("requested_bytes", &AvailableKvMemory::requested_bytes)
      .def_readonly("non_kv_cache_bytes", &AvailableKvMemory::non_kv_cache_bytes)
      .def_readonly("cudagraph_applied_bytes", &AvailableKvMemory::cudagraph_applied_bytes)
      .def_readonly("available_kv_cache_bytes", &AvailableKvMemory::available_kv_cache_bytes)
      .def_readonly("from_kv_cache_memory_bytes", &AvailableKvMemory::from_kv_cache_memory_bytes)
      .def_readonly("available_line", &AvailableKvMemory::available_line)
      .def_readonly("cudagraph_line", &AvailableKvMemory::cudagraph_line)
      .def_readonly("kv_cache_memory_bytes_line", &AvailableKvMemory::kv_cache_memory_bytes_line);
  m.def("determine_available_kv_cache_memory", &DetermineAvailableKvCacheMemory, py::arg("requested_bytes"),
        py::arg("profile"), py::arg("options"));
  py::class_<KvCacheMemorySuggestion>(m, "KvCacheMemorySuggestion")
      .def_readonly("to_requested_limit_bytes", &KvCacheMemorySuggestion::to_requested_limit_bytes)
      .def_readonly("to_gpu_limit_bytes", &KvCacheMemorySuggestion::to_gpu_limit_bytes)
      .def_readonly("line", &KvCacheMemorySuggestion::line);
  m.def("suggest_kv_cache_memory_bytes", &SuggestKvCacheMemoryBytes, py::arg("init_free_memory_bytes"),
        py::arg("total_memory_bytes"), py::arg("gpu_memory_utilization"), py::arg("requested_bytes"),
        py::arg("weights_bytes"), py::arg("peak_activation_bytes"), py::arg("non_torch_bytes"),
        py::arg("cudagraph_bytes"), py::arg("kv_cache_in_use_bytes"));
  m.def("cudagraph_profiling_line", &CudagraphProfilingLine, py::arg("cudagraph_estimate_bytes"),
        py::arg("total_memory_bytes"), py::arg("gpu_memory_utilization"), py::arg("estimate_cudagraphs") = true);
  m.def("estimated_cudagraph_line", &EstimatedCudagraphLine, py::arg("cudagraph_estimate_bytes"));
  m.attr("KV_SUGGESTION_BUFFER_BYTES") = kKvSuggestionBufferBytes;

  // ---- estimators ----------------------------------------------------------------------------
  py::class_<ActivationConstants>(m, "ActivationConstants")
      .def(py::init<>())
      .def_readwrite("hidden_tensors", &ActivationConstants::hidden_tensors)
      .def_readwrite("sampler_bytes_per_logit", &ActivationConstants::sampler_bytes_per_logit)
      .def_readwrite("fused_moe_chunk_tokens", &ActivationConstants::fused_moe_chunk_tokens);
  py::class_<NonTorchConstants>(m, "NonTorchConstants")
      .def(py::init<>())
      .def_readwrite("single_process_bytes", &NonTorchConstants::single_process_bytes)
      .def_readwrite("multi_process_bytes", &NonTorchConstants::multi_process_bytes)
      .def_readwrite("tensor_parallel_nccl_bytes", &NonTorchConstants::tensor_parallel_nccl_bytes)
      .def_readwrite("per_tensor_parallel_peer_bytes", &NonTorchConstants::per_tensor_parallel_peer_bytes);
  py::class_<CudagraphConstants>(m, "CudagraphConstants")
      .def(py::init<>())
      .def_readwrite("first_capture_fixed_bytes", &CudagraphConstants::first_capture_fixed_bytes)
      .def_readwrite("bytes_per_graph_node", &CudagraphConstants::bytes_per_graph_node)
      .def_readwrite("per_graph_bytes_per_layer_hidden", &CudagraphConstants::per_graph_bytes_per_layer_hidden)
      .def_readwrite("per_graph_floor_bytes", &CudagraphConstants::per_graph_floor_bytes);
  py::class_<StartupBaselineConstants>(m, "StartupBaselineConstants")
      .def(py::init<>())
      .def_readwrite("single_process_bytes", &StartupBaselineConstants::single_process_bytes)
      .def_readwrite("multi_process_bytes", &StartupBaselineConstants::multi_process_bytes);
  py::class_<ActivationBreakdown>(m, "ActivationBreakdown")
      .def_readonly("hidden_states_bytes", &ActivationBreakdown::hidden_states_bytes)
      .def_readonly("mlp_intermediate_bytes", &ActivationBreakdown::mlp_intermediate_bytes)
      .def_readonly("moe_workspace_bytes", &ActivationBreakdown::moe_workspace_bytes)
      .def_readonly("attention_bytes", &ActivationBreakdown::attention_bytes)
      .def_readonly("forward_bytes", &ActivationBreakdown::forward_bytes)
      .def_readonly("logits_bytes", &ActivationBreakdown::logits_bytes)
      .def_readonly("sampler_bytes", &ActivationBreakdown::sampler_bytes)
      .def_readonly("sampler_phase_bytes", &ActivationBreakdown::sampler_phase_bytes)
      .def_readonly("pipeline_buffers_bytes", &ActivationBreakdown::pipeline_buffers_bytes)
      .def_readonly("peak_bytes", &ActivationBreakdown::peak_bytes)
      .def_readonly("sampler_dominates", &ActivationBreakdown::sampler_dominates);
  py::class_<NonTorchBreakdown>(m, "NonTorchBreakdown")
      .def_readonly("cuda_runtime_bytes", &NonTorchBreakdown::cuda_runtime_bytes)
      .def_readonly("nccl_bytes", &NonTorchBreakdown::nccl_bytes)
      .def_readonly("total_bytes", &NonTorchBreakdown::total_bytes);
  py::class_<CudagraphEstimate>(m, "CudagraphEstimate")
      .def_readonly("capture_sizes", &CudagraphEstimate::capture_sizes)
      .def_readonly("num_full_graphs", &CudagraphEstimate::num_full_graphs)
      .def_readonly("num_piecewise_graphs", &CudagraphEstimate::num_piecewise_graphs)
      .def_readonly("largest_full", &CudagraphEstimate::largest_full)
      .def_readonly("largest_piecewise", &CudagraphEstimate::largest_piecewise)
      .def_readonly("first_capture_bytes", &CudagraphEstimate::first_capture_bytes)
      .def_readonly("graph_nodes_per_rank", &CudagraphEstimate::graph_nodes_per_rank)
      .def_readonly("per_graph_bytes", &CudagraphEstimate::per_graph_bytes)
      .def_readonly("total_bytes", &CudagraphEstimate::total_bytes)
      .def_readonly("profiling_line", &CudagraphEstimate::profiling_line);
  m.def("default_capture_sizes", &DefaultCaptureSizes, py::arg("max_size"));
  m.def("estimate_non_torch_increase", &EstimateNonTorchIncrease, py::arg("tensor_parallel_size"),
        py::arg("pipeline_parallel_size"), py::arg("constants") = NonTorchConstants{});

  // ---- the plan ------------------------------------------------------------------------------
  py::class_<PlanInputs>(m, "PlanInputs")
      .def(py::init<>())
      .def_readwrite("total_memory_bytes", &PlanInputs::total_memory_bytes)
      .def_readwrite("free_memory_bytes", &PlanInputs::free_memory_bytes)
      .def_readwrite("gpu_name", &PlanInputs::gpu_name)
      .def_readwrite("gpu_count", &PlanInputs::gpu_count)
      .def_readwrite("gpu_memory_utilization", &PlanInputs::gpu_memory_utilization)
      .def_readwrite("max_model_len", &PlanInputs::max_model_len)
      .def_readwrite("tensor_parallel_size", &PlanInputs::tensor_parallel_size)
      .def_readwrite("pipeline_parallel_size", &PlanInputs::pipeline_parallel_size)
      .def_readwrite("max_num_seqs", &PlanInputs::max_num_seqs)
      .def_readwrite("max_num_batched_tokens", &PlanInputs::max_num_batched_tokens)
      .def_readwrite("dtype", &PlanInputs::dtype)
      .def_readwrite("quantization", &PlanInputs::quantization)
      .def_readwrite("kv_cache_dtype", &PlanInputs::kv_cache_dtype)
      .def_readwrite("block_size", &PlanInputs::block_size)
      .def_readwrite("enforce_eager", &PlanInputs::enforce_eager)
      .def_property(
          "cudagraph_mode", [](const PlanInputs& p) { return CudagraphModeName(p.cudagraph_mode); },
          [](PlanInputs& p, const std::string& v) { p.cudagraph_mode = ParseCudagraphMode(v); })
      .def_readwrite("cudagraph_capture_sizes", &PlanInputs::cudagraph_capture_sizes)
      .def_readwrite("max_cudagraph_capture_size", &PlanInputs::max_cudagraph_capture_size)
      .def_readwrite("kv_cache_memory_bytes", &PlanInputs::kv_cache_memory_bytes)
      .def_readwrite("cudagraph_memory_in_budget", &PlanInputs::cudagraph_memory_in_budget)
      .def_readwrite("checkpoint_weights_bytes", &PlanInputs::checkpoint_weights_bytes)
      .def_readwrite("activation_constants", &PlanInputs::activation_constants)
      .def_readwrite("non_torch_constants", &PlanInputs::non_torch_constants)
      .def_readwrite("cudagraph_constants", &PlanInputs::cudagraph_constants)
      .def_readwrite("baseline_constants", &PlanInputs::baseline_constants);
  py::class_<RankPlan>(m, "RankPlan")
      .def_readonly("pp_rank", &RankPlan::pp_rank)
      .def_readonly("first_layer", &RankPlan::first_layer)
      .def_readonly("end_layer", &RankPlan::end_layer)
      .def_readonly("weights_bytes", &RankPlan::weights_bytes)
      .def_readonly("activation_peak_bytes", &RankPlan::activation_peak_bytes)
      .def_readonly("non_torch_bytes", &RankPlan::non_torch_bytes)
      .def_readonly("cudagraph_bytes", &RankPlan::cudagraph_bytes)
      .def_readonly("cudagraph_applied_bytes", &RankPlan::cudagraph_applied_bytes)
      .def_readonly("non_kv_cache_bytes", &RankPlan::non_kv_cache_bytes)
      .def_readonly("available_kv_cache_bytes", &RankPlan::available_kv_cache_bytes)
      .def_readonly("kv_bytes_per_block", &RankPlan::kv_bytes_per_block)
      .def_readonly("kv_bytes_per_request", &RankPlan::kv_bytes_per_request)
      .def_readonly("num_blocks", &RankPlan::num_blocks)
      .def_readonly("activation", &RankPlan::activation)
      .def_readonly("non_torch", &RankPlan::non_torch)
      .def_readonly("cudagraph", &RankPlan::cudagraph);
  py::class_<StartupPlan>(m, "StartupPlan")
      .def_readonly("inputs", &StartupPlan::inputs)
      .def_readonly("free_memory_assumed", &StartupPlan::free_memory_assumed)
      .def_readonly("requested_bytes", &StartupPlan::requested_bytes)
      .def_readonly("ranks", &StartupPlan::ranks)
      .def_readonly("tightest_pp_rank", &StartupPlan::tightest_pp_rank)
      .def_readonly("weights_bytes", &StartupPlan::weights_bytes)
      .def_readonly("activation_peak_bytes", &StartupPlan::activation_peak_bytes)
      .def_readonly("non_torch_bytes", &StartupPlan::non_torch_bytes)
      .def_readonly("cudagraph_bytes", &StartupPlan::cudagraph_bytes)
      .def_readonly("non_kv_cache_bytes", &StartupPlan::non_kv_cache_bytes)
      .def_readonly("available_kv_cache_bytes", &StartupPlan::available_kv_cache_bytes)
      .def_readonly("fits", &StartupPlan::fits)
      .def_property_readonly("failure_phase", [](const StartupPlan& p) { return FailurePhaseName(p.failure_phase); })
      .def_readonly("failure_message", &StartupPlan::failure_message)
      .def_readonly("shortfall_bytes", &StartupPlan::shortfall_bytes)
      .def_readonly("kv_cache", &StartupPlan::kv_cache)
      .def_readonly("max_model_len_that_fits", &StartupPlan::max_model_len_that_fits)
      .def_readonly("model_max_model_len", &StartupPlan::model_max_model_len)
      .def_readonly("kv_block_size", &StartupPlan::kv_block_size)
      .def_readonly("kv_cache_memory_suggestion", &StartupPlan::kv_cache_memory_suggestion)
      .def_readonly("request_memory_error", &StartupPlan::request_memory_error)
      .def_readonly("cudagraph_line", &StartupPlan::cudagraph_line);
  py::class_<PlanSuggestion>(m, "PlanSuggestion")
      .def_readonly("lever", &PlanSuggestion::lever)
      .def_readonly("direction", &PlanSuggestion::direction)
      .def_readonly("value", &PlanSuggestion::value)
      .def_readonly("setting", &PlanSuggestion::setting)
      .def_readonly("bytes_freed", &PlanSuggestion::bytes_freed)
      .def_readonly("fits_after", &PlanSuggestion::fits_after)
      .def_readonly("reason", &PlanSuggestion::reason);
  m.def("evaluate_plan", &EvaluatePlan, py::arg("spec"), py::arg("inputs"), py::call_guard<py::gil_scoped_release>());
  m.def("suggest_plan_changes", &SuggestPlanChanges, py::arg("spec"), py::arg("plan"),
        py::call_guard<py::gil_scoped_release>());
  m.def("format_suggestions", &FormatSuggestions, py::arg("suggestions"));
  m.def("format_plan_report", &FormatPlanReport, py::arg("spec"), py::arg("plan"), py::arg("model_name"),
        py::arg("suggestions_text"));
  m.def("failure_phase_names", [] {
    std::vector<std::string> names;
    for (auto p : {FailurePhase::kNone, FailurePhase::kFreeMemory, FailurePhase::kWeights, FailurePhase::kProfilePeak,
                   FailurePhase::kNoKvBlocks, FailurePhase::kMaxModelLen}) {
      names.push_back(FailurePhaseName(p));
    }
    return names;
  }, "Phase names indexed by the sweep's failure_phase codes (-1: invalid input).");

  // ---- the sweep -----------------------------------------------------------------------------
  py::class_<SweepAxes>(m, "SweepAxes")
      .def(py::init<>())
      .def_readwrite("base", &SweepAxes::base)
      .def_readwrite("total_memory_bytes", &SweepAxes::total_memory_bytes)
      .def_readwrite("gpu_names", &SweepAxes::gpu_names)
      .def_readwrite("gpu_memory_utilization", &SweepAxes::gpu_memory_utilization)
      .def_readwrite("max_model_len", &SweepAxes::max_model_len)
      .def_readwrite("tensor_parallel_size", &SweepAxes::tensor_parallel_size)
      .def_readwrite("pipeline_parallel_size", &SweepAxes::pipeline_parallel_size)
      .def_readwrite("max_num_seqs", &SweepAxes::max_num_seqs)
      .def_readwrite("max_num_batched_tokens", &SweepAxes::max_num_batched_tokens)
      .def_readwrite("dtype", &SweepAxes::dtype)
      .def_readwrite("kv_cache_dtype", &SweepAxes::kv_cache_dtype)
      .def_readwrite("quantization", &SweepAxes::quantization)
      .def_readwrite("block_size", &SweepAxes::block_size)
      .def_readwrite("enforce_eager", &SweepAxes::enforce_eager);
  m.def("run_sweep", [](const ModelSpec& spec, const SweepAxes& axes) {
    SweepColumns c;
    {
      py::gil_scoped_release release;  // the whole cross product runs without the GIL
      c = RunSweep(spec, axes);
    }
    py::dict d;
    d["gpu_index"] = ToArray(std::move(c.gpu_index));
    d["total_memory_bytes"] = ToArray(std::move(c.total_memory_bytes));
    d["gpu_memory_utilization"] = ToArray(std::move(c.gpu_memory_utilization));
    d["max_model_len"] = ToArray(std::move(c.max_model_len));
    d["tensor_parallel_size"] = ToArray(std::move(c.tensor_parallel_size));
    d["pipeline_parallel_size"] = ToArray(std::move(c.pipeline_parallel_size));
    d["max_num_seqs"] = ToArray(std::move(c.max_num_seqs));
    d["max_num_batched_tokens"] = ToArray(std::move(c.max_num_batched_tokens));
    d["block_size"] = ToArray(std::move(c.block_size));
    d["dtype_index"] = ToArray(std::move(c.dtype_index));
    d["kv_cache_dtype_index"] = ToArray(std::move(c.kv_cache_dtype_index));
    d["quantization_index"] = ToArray(std::move(c.quantization_index));
    d["enforce_eager"] = ToArray(std::move(c.enforce_eager));
    d["requested_bytes"] = ToArray(std::move(c.requested_bytes));
    d["weights_bytes"] = ToArray(std::move(c.weights_bytes));
    d["activation_peak_bytes"] = ToArray(std::move(c.activation_peak_bytes));
    d["non_torch_bytes"] = ToArray(std::move(c.non_torch_bytes));
    d["cudagraph_bytes"] = ToArray(std::move(c.cudagraph_bytes));
    d["available_kv_cache_bytes"] = ToArray(std::move(c.available_kv_cache_bytes));
    d["num_blocks"] = ToArray(std::move(c.num_blocks));
    d["num_tokens"] = ToArray(std::move(c.num_tokens));
    d["max_model_len_that_fits"] = ToArray(std::move(c.max_model_len_that_fits));
    d["max_concurrency"] = ToArray(std::move(c.max_concurrency));
    d["fits"] = ToArray(std::move(c.fits));
    d["failure_phase"] = ToArray(std::move(c.failure_phase));
    d["dtype_values"] = c.dtype_values;
    d["kv_cache_dtype_values"] = c.kv_cache_dtype_values;
    d["quantization_values"] = c.quantization_values;
    d["gpu_names"] = c.gpu_names;
    d["num_rows"] = c.num_rows;
    d["num_fast_rows"] = c.num_fast_rows;
    return d;
  }, py::arg("spec"), py::arg("axes"));
}

}  // namespace vllm_mem::bindings
