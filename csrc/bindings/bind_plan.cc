/*!
 * \file bindings/bind_plan.cc
 * \brief Bindings of the start-up plan area: GPU catalog, worker-flow budget arithmetic,
 *        profile-run estimators, the plan, its levers and the sweep. Conversions only.
 */
#include <algorithm>
#include <mutex>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings/bind.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/kv_cache/kv_cache_layout.h"
#include "vllm_mem/model/dtype.h"
#include "vllm_mem/plan/activation_estimate.h"
#include "vllm_mem/plan/cudagraph_estimate.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/mm_profile_estimate.h"
#include "vllm_mem/plan/non_torch_estimate.h"
#include "vllm_mem/plan/plan_suggestions.h"
#include "vllm_mem/plan/plan_sweep.h"
#include "vllm_mem/plan/sizing_cache.h"
#include "vllm_mem/plan/speculative_config_keys.h"
#include "vllm_mem/plan/speculative_decoding.h"
#include "vllm_mem/plan/startup_budget.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/plan/vllm_version_profile.h"

namespace py = pybind11;

namespace vllm_mem::bindings {
namespace {

/*! Column storage of dead sweep arrays, for the next sweep (RunSweep's storage): a sweep writes
 *  tens of MB of columns, and fresh memory costs a page fault per 4 KiB. At most kSpareBytes are
 *  kept. Never destroyed: an array may die after static destructors ran (at interpreter exit). */
constexpr size_t kSpareBytes = size_t{256} << 20;
struct SparePool {
  std::mutex mutex;
  size_t bytes = 0;
};
SparePool& Spares() {
  static auto* pool = new SparePool;
  return *pool;
}
template <typename T>
std::vector<std::vector<T>>& SparesOf() {  // guarded by Spares().mutex
  static auto* spares = new std::vector<std::vector<T>>;
  return *spares;
}

template <typename T>
void GiveBack(std::vector<T>&& v) {
  SparePool& pool = Spares();
  std::lock_guard<std::mutex> lock(pool.mutex);
  const size_t bytes = v.capacity() * sizeof(T);
  if (pool.bytes + bytes > kSpareBytes) return;  // freed by the caller, as before
  pool.bytes += bytes;
  SparesOf<T>().push_back(std::move(v));
}

template <typename T>
void TakeSpare(std::vector<T>& into) {
  SparePool& pool = Spares();
  std::lock_guard<std::mutex> lock(pool.mutex);
  std::vector<std::vector<T>>& spares = SparesOf<T>();
  if (spares.empty()) return;
  into = std::move(spares.back());
  spares.pop_back();
  pool.bytes -= into.capacity() * sizeof(T);
}

template <typename T>
py::array_t<T> ToArray(std::vector<T>&& v) {
  // Move the vector onto the heap and let the array own it: no copy of large columns. When the
  // array dies its storage goes to the spares.
  auto* owned = new std::vector<T>(std::move(v));
  py::capsule free_when_done(owned, [](void* p) {
    auto* column = static_cast<std::vector<T>*>(p);
    GiveBack(std::move(*column));
    delete column;
  });
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
  d["compute_capability"] = g.compute_capability;
  d["supports_bfloat16"] = g.supports_bfloat16;
  d["sm_count"] = g.sm_count;
  d["sm_source"] = g.sm_source;
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
      .def_readwrite("cudagraph_estimate_bytes", &ProfileMeasurements::cudagraph_estimate_bytes)
      .def_readwrite("non_kv_cache_bytes", &ProfileMeasurements::non_kv_cache_bytes);
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
      .def_readwrite("sampler_kernel_programs", &ActivationConstants::sampler_kernel_programs)
      .def_readwrite("sampler_fixed_bytes", &ActivationConstants::sampler_fixed_bytes)
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
  py::class_<MmEncoderBudget>(m, "MmEncoderBudget")
      .def_readonly("encoder_compute_budget_tokens", &MmEncoderBudget::encoder_compute_budget_tokens)
      .def_readonly("encoder_cache_size_tokens", &MmEncoderBudget::encoder_cache_size_tokens)
      .def_readonly("max_items_per_prompt", &MmEncoderBudget::max_items_per_prompt)
      .def_readonly("max_items_per_batch", &MmEncoderBudget::max_items_per_batch)
      .def_readonly("encoder_budget_tokens", &MmEncoderBudget::encoder_budget_tokens);
  m.def("compute_mm_encoder_budget",
        [](int64_t max_tokens_per_item, int64_t max_num_batched_tokens, int64_t max_num_seqs, int64_t max_model_len,
           int64_t limit_per_prompt, bool chunked_prefill) {
          return ComputeMmEncoderBudget({max_tokens_per_item, max_num_batched_tokens, max_num_seqs, max_model_len,
                                         limit_per_prompt, chunked_prefill});
        },
        py::arg("max_tokens_per_item"), py::arg("max_num_batched_tokens"), py::arg("max_num_seqs"),
        py::arg("max_model_len"), py::arg("limit_per_prompt") = kDefaultMmLimitPerPrompt,
        py::arg("chunked_prefill") = true);
  py::class_<MmProfileBreakdown>(m, "MmProfileBreakdown")
      .def_readonly("modelled", &MmProfileBreakdown::modelled)
      .def_readonly("runs", &MmProfileBreakdown::runs)
      .def_readonly("budget", &MmProfileBreakdown::budget)
      .def_readonly("modality", &MmProfileBreakdown::modality)
      .def_readonly("video_frames", &MmProfileBreakdown::video_frames)
      .def_readonly("no_effect_kwargs", &MmProfileBreakdown::no_effect_kwargs)
      .def_readonly("items", &MmProfileBreakdown::items)
      .def_readonly("pixel_bytes", &MmProfileBreakdown::pixel_bytes)
      .def_readonly("encoder_output_bytes", &MmProfileBreakdown::encoder_output_bytes)
      .def_readonly("attention_mask_bytes", &MmProfileBreakdown::attention_mask_bytes)
      .def_readonly("encoder_layer_bytes", &MmProfileBreakdown::encoder_layer_bytes)
      .def_readonly("encoder_phase_bytes", &MmProfileBreakdown::encoder_phase_bytes)
      .def_readonly("resident_bytes", &MmProfileBreakdown::resident_bytes);
  py::class_<ActivationBreakdown>(m, "ActivationBreakdown")
      .def_readonly("hidden_states_bytes", &ActivationBreakdown::hidden_states_bytes)
      .def_readonly("mlp_intermediate_bytes", &ActivationBreakdown::mlp_intermediate_bytes)
      .def_readonly("moe_workspace_bytes", &ActivationBreakdown::moe_workspace_bytes)
      .def_readonly("sparse_indexer_workspace_bytes", &ActivationBreakdown::sparse_indexer_workspace_bytes)
      .def_readonly("sparse_indexer_transient_bytes", &ActivationBreakdown::sparse_indexer_transient_bytes)
      .def_readonly("shared_workspace_reserved_bytes", &ActivationBreakdown::shared_workspace_reserved_bytes)
      .def_readonly("attention_bytes", &ActivationBreakdown::attention_bytes)
      .def_readonly("lora_bytes", &ActivationBreakdown::lora_bytes)
      .def_readonly("forward_bytes", &ActivationBreakdown::forward_bytes)
      .def_readonly("logits_bytes", &ActivationBreakdown::logits_bytes)
      .def_readonly("sampler_bytes", &ActivationBreakdown::sampler_bytes)
      .def_readonly("sampler_kernel_buffer_bytes", &ActivationBreakdown::sampler_kernel_buffer_bytes)
      .def_readonly("sampler_phase_bytes", &ActivationBreakdown::sampler_phase_bytes)
      .def_readonly("pipeline_buffers_bytes", &ActivationBreakdown::pipeline_buffers_bytes)
      .def_readonly("drafter_phase_bytes", &ActivationBreakdown::drafter_phase_bytes)
      .def_readonly("rejection_logits_bytes", &ActivationBreakdown::rejection_logits_bytes)
      .def_readonly("multimodal", &ActivationBreakdown::multimodal)
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
      .def_property_readonly("profiling_line", &CudagraphCaptureCountsLine);
  m.def("default_capture_sizes", &DefaultCaptureSizes, py::arg("max_size"));
  m.def("estimate_non_torch_increase", &EstimateNonTorchIncrease, py::arg("tensor_parallel_size"),
        py::arg("pipeline_parallel_size"), py::arg("constants") = NonTorchConstants{});

  // ---- vLLM release profiles ------------------------------------------------------------------
  m.def("vllm_version_profiles", [] {
    py::list out;
    for (const VllmVersionProfile& p : VllmVersionProfiles()) {
      py::dict d;
      d["version"] = p.version;
      d["date"] = p.date;
      d["note"] = p.note;
      py::list rules;
      for (const VersionRuleNote& r : p.rules) {
        py::dict rd;
        rd["rule"] = r.rule;
        rd["value"] = r.value;
        rd["since"] = r.since;
        rd["release"] = r.release;
        rd["source"] = r.source;
        rules.append(rd);
      }
      d["rules"] = rules;
      out.append(d);
    }
    return out;
  }, "Every vLLM release profile, oldest first, each rule with its value and source.");
  m.def("lookup_vllm_version", [](const std::string& version) {
    const VersionLookup l = LookupVllmVersion(version);
    return py::make_tuple(l.profile->version, l.asked, l.newer_than_known, l.note);
  }, py::arg("version"), "(profile version, normalised asked version, newer than known, note).");
  m.def("apply_vllm_version_kv_rules", [](KvCacheOptions& options, const std::string& version) {
    const VllmVersionProfile& p = *LookupVllmVersion(version).profile;
    ApplyVersionKvRules(p, "", options);
    return p.version;
  }, py::arg("options"), py::arg("version"),
     "Sets the release's KV rules on options (as plan() applies them); returns the profile's version.");
  m.def("derived_max_model_len", &DerivedMaxModelLen, py::arg("spec"));
  m.def("vllm_profile_settings", [](const std::string& version) {
    const VllmVersionProfile& p = *LookupVllmVersion(version).profile;
    py::dict d;
    d["version"] = p.version;
    d["engine"] = p.engine;
    d["v0_engine_available"] = p.v0_engine_available;
    d["gpu_memory_utilization"] = p.gpu_memory_utilization;
    d["cudagraph_memory_in_budget"] = p.cudagraph_memory_in_budget;
    d["sampler_bytes_per_logit"] = p.sampler_bytes_per_logit;
    d["sampler_kernel_programs"] = p.sampler_kernel_programs;
    d["sampler_fixed_bytes"] = p.sampler_fixed_bytes;
    d["v2_sampler_bytes_per_logit"] = p.v2_sampler_bytes_per_logit;
    d["hybrid_kv_cache_manager"] = p.hybrid_kv_cache_manager;
    d["default_block_size"] = p.default_block_size;
    d["max_model_len_auto"] = p.max_model_len_auto;
    d["v2_runner_serves"] = p.v2_runner_serves;
    d["v2_runner_cudagraph_profiling"] = p.v2_runner_cudagraph_profiling;
    return d;
  }, py::arg("version"));
  m.def("long_max_model_len_error", [](const std::string& version, const ModelSpec& spec, int64_t max_model_len,
                                       bool allow_long) {
    return LongMaxModelLenError(*LookupVllmVersion(version).profile, spec, max_model_len, allow_long);
  }, py::arg("version"), py::arg("spec"), py::arg("max_model_len"), py::arg("allow_long"));
  m.def("kv_log_lines_for", [](const std::string& version, const std::string& engine, int64_t num_blocks,
                               int64_t num_tokens, double max_concurrency, int64_t block_size, int64_t bytes_per_block,
                               int64_t max_model_len, int64_t num_groups) {
    // The release's wording needs only these figures of a KvCacheCapacity.
    const VllmVersionProfile& p = *LookupVllmVersion(version).profile;
    KvCacheCapacity c;
    c.num_blocks = num_blocks;
    c.num_tokens = num_tokens;
    c.max_concurrency = max_concurrency;
    c.block_size = block_size;
    c.bytes_per_block = bytes_per_block;
    c.max_model_len = max_model_len;
    c.groups.resize(static_cast<size_t>(std::clamp<int64_t>(num_groups, 0, 4096)));
    const bool v0 = EngineFor(p, engine) == VllmEngine::kV0;
    return KvCacheLogLinesFor(c, v0 ? KvLogFormat::kV0Blocks : p.kv_log_format);
  }, py::arg("version"), py::arg("engine"), py::arg("num_blocks"), py::arg("num_tokens"), py::arg("max_concurrency"),
     py::arg("block_size"), py::arg("bytes_per_block"), py::arg("max_model_len"), py::arg("num_groups"));
  m.def("resolve_batch_defaults", [](const std::string& version, const std::string& engine, const std::string& usage_context,
                                     int64_t total_memory_bytes, const std::string& gpu_name, int64_t max_model_len) {
    const VersionLookup l = LookupVllmVersion(version);
    const BatchDefaults b = ResolveBatchDefaults(*l.profile, engine.empty() ? l.profile->engine : engine, usage_context,
                                                 total_memory_bytes, gpu_name, max_model_len, 0, 0);
    return py::make_tuple(b.max_num_seqs, b.max_num_batched_tokens);
  }, py::arg("version"), py::arg("engine"), py::arg("usage_context"), py::arg("total_memory_bytes"), py::arg("gpu_name"),
     py::arg("max_model_len"));

  // ---- speculative decoding (speculative_decoding.h) ------------------------------------------
  py::class_<SpeculativeConfig>(m, "SpeculativeConfig")
      .def(py::init<>())
      .def_readwrite("method", &SpeculativeConfig::method)
      .def_readwrite("num_speculative_tokens", &SpeculativeConfig::num_speculative_tokens)
      .def_readwrite("draft", &SpeculativeConfig::draft)
      .def_readwrite("draft_name", &SpeculativeConfig::draft_name)
      .def_readwrite("draft_tensor_parallel_size", &SpeculativeConfig::draft_tensor_parallel_size)
      .def_readwrite("n_predict", &SpeculativeConfig::n_predict)
      .def_readwrite("draft_vocab_size", &SpeculativeConfig::draft_vocab_size)
      .def_readwrite("draft_target_hidden_size", &SpeculativeConfig::draft_target_hidden_size)
      .def_readwrite("target_num_mtp_layers", &SpeculativeConfig::target_num_mtp_layers)
      .def_readwrite("eagle_embed_tokens_shared", &SpeculativeConfig::eagle_embed_tokens_shared)
      .def_readwrite("eagle_lm_head_shared", &SpeculativeConfig::eagle_lm_head_shared)
      .def_readwrite("quantization", &SpeculativeConfig::quantization)
      .def_readwrite("max_model_len", &SpeculativeConfig::max_model_len)
      .def_readwrite("no_effect_keys", &SpeculativeConfig::no_effect_keys);
  m.def("check_speculative_config_keys", [](const std::string& json_text, const std::string& vllm_version) {
    return CheckSpeculativeConfigKeys(ParseJson(json_text, "speculative_config"), vllm_version);
  }, py::arg("json_text"), py::arg("vllm_version"),
     "The keys accepted without a memory effect; raises for a key vLLM refuses or a value not modelled.");
  m.def("speculative_config_keys", [] {
    py::list rows;
    for (const SpeculativeConfigKey& k : SpeculativeConfigKeys()) {
      py::dict row;
      row["key"] = k.key;
      row["use"] = SpeculativeKeyUseName(k.use);
      row["effect"] = k.effect;
      row["since"] = k.since;
      row["release"] = k.release;
      row["removed"] = k.removed;
      row["removed_release"] = k.removed_release;
      row["source"] = k.source;
      rows.append(row);
    }
    return rows;
  }, "The --speculative-config key table (plan/speculative_config_keys.json), one dict per key.");
  m.def("speculative_unknown_keys_refused_since", &SpeculativeUnknownKeysRefusedSince);
  py::class_<DraftWeights>(m, "DraftWeights")
      .def_readonly("layers_bytes", &DraftWeights::layers_bytes)
      .def_readonly("extra_bytes", &DraftWeights::extra_bytes)
      .def_readonly("embedding_bytes", &DraftWeights::embedding_bytes)
      .def_readonly("lm_head_bytes", &DraftWeights::lm_head_bytes)
      .def_readonly("total_bytes", &DraftWeights::total_bytes)
      .def_readonly("embedding_shared", &DraftWeights::embedding_shared)
      .def_readonly("lm_head_shared", &DraftWeights::lm_head_shared)
      .def_readonly("num_parameters", &DraftWeights::num_parameters);
  m.def("read_speculative_config_fields", [](const std::string& json_text, bool as_target, SpeculativeConfig c) {
    ReadSpeculativeConfigFields(ParseJson(json_text, "config.json"), as_target, c);
    return c;
  }, py::arg("json_text"), py::arg("as_target"), py::arg("config"));
  m.def("normalize_speculative_method", &NormalizeSpeculativeMethod, py::arg("method"));
  m.def("draft_weights", [](const ModelSpec& target, const SpeculativeConfig& c, int64_t tp, const std::string& dtype,
                            const std::string& quantization) {
    return ComputeDraftWeights(target, c, ResolveSpeculativeConfig(target, c, tp, 1), dtype, quantization);
  }, py::arg("target"), py::arg("config"), py::arg("tensor_parallel_size"), py::arg("dtype"),
     py::arg("quantization"));
  m.def("spec_decode_capture_sizes", &SpecDecodeCaptureSizes, py::arg("capture_sizes"), py::arg("max_capture_size"),
        py::arg("max_num_seqs"), py::arg("max_num_batched_tokens"), py::arg("uniform_decode_query_len"));

  // ---- the plan ------------------------------------------------------------------------------
  // PlanInputs (the request plus what the release resolves): bind_settings.cc.
  py::class_<RankPlan>(m, "RankPlan")
      .def_readonly("pp_rank", &RankPlan::pp_rank)
      .def_readonly("first_layer", &RankPlan::first_layer)
      .def_readonly("end_layer", &RankPlan::end_layer)
      .def_readonly("weights_bytes", &RankPlan::weights_bytes)
      .def_readonly("draft_weights_bytes", &RankPlan::draft_weights_bytes)
      .def_readonly("vision_encoder_bytes", &RankPlan::vision_encoder_bytes)
      .def_readonly("lora_slots_bytes", &RankPlan::lora_slots_bytes)
      .def_readonly("draft_kv_bytes_per_block", &RankPlan::draft_kv_bytes_per_block)
      .def_readonly("draft_kv_cache_bytes", &RankPlan::draft_kv_cache_bytes)
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
      .def_readonly("request", &StartupPlan::request)
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
      .def_readonly("auto_fit_from_max_model_len", &StartupPlan::auto_fit_from_max_model_len)
      .def_readonly("auto_fit_limiting_bytes", &StartupPlan::auto_fit_limiting_bytes)
      .def_property_readonly("auto_fit_line", &AutoFitLine)
      .def_readonly("kv_block_size", &StartupPlan::kv_block_size)
      // vLLM's lines, formatted when read (the plan keeps the figures they are made of).
      .def_property_readonly("kv_cache_memory_suggestion", &KvCacheMemorySuggestionOf)
      .def_readonly("request_memory_error", &StartupPlan::request_memory_error)
      .def_property_readonly("cudagraph_line", &CudagraphLine)
      .def_property_readonly("kv_log_lines", &KvLogLines)
      .def_property_readonly("available_kv_line", &AvailableKvLine)
      .def_readonly("kv_cache_memory_suggestion_fits", &StartupPlan::kv_cache_memory_suggestion_fits);
  py::class_<PlanSuggestion>(m, "PlanSuggestion")
      .def_readonly("lever", &PlanSuggestion::lever)
      .def_readonly("direction", &PlanSuggestion::direction)
      .def_readonly("value", &PlanSuggestion::value)
      .def_readonly("setting", &PlanSuggestion::setting)
      .def_readonly("bytes_freed", &PlanSuggestion::bytes_freed)
      .def_readonly("fits_after", &PlanSuggestion::fits_after)
      .def_readonly("reason", &PlanSuggestion::reason);
  m.def(
      "evaluate_plan", [](const ModelSpec& spec, const PlanInputs& inputs) {
        return OnHeap([&] { return EvaluatePlan(spec, inputs); });
      },
      py::arg("spec"), py::arg("inputs"), py::call_guard<py::gil_scoped_release>());
  m.def(
      "evaluate_plan",
      [](const SizingCache& cache, const PlanInputs& inputs) {
        return OnHeap([&] { return EvaluatePlan(cache, inputs); });
      },
      py::arg("cache"), py::arg("inputs"));
  m.def("suggest_plan_changes", &SuggestPlanChanges, py::arg("spec"), py::arg("plan"),
        py::call_guard<py::gil_scoped_release>());
  // What the text report (python/vllm_mem/planner/render.py) names that the plan resolved on the way.
  m.def("served_dtype", [](const ModelSpec& spec, const std::string& dtype) {
    return DTypeName(ResolveModelDType(dtype, spec.dtype, "dtype"));
  }, py::arg("spec"), py::arg("dtype"), "The dtype vLLM serves the model in for --dtype (auto: float32 as bfloat16).");
  m.def("resolved_num_speculative_tokens", [](const ModelSpec& target, const SpeculativeConfig& config, int64_t tp,
                                              int64_t pp) {
    return ResolveSpeculativeConfig(target, config, tp, pp).num_speculative_tokens;
  }, py::arg("target"), py::arg("config"), py::arg("tensor_parallel_size"), py::arg("pipeline_parallel_size"),
     "num_speculative_tokens as vLLM resolves it (the drafter's n_predict when not given).");
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
    SweepColumns storage;
    ForEachColumn(storage, [](const char*, auto& column) { TakeSpare(column); });
    SweepColumns c;
    {
      py::gil_scoped_release release;  // the whole cross product runs without the GIL
      c = RunSweep(spec, axes, std::move(storage));
    }
    py::dict d;
    ForEachColumn(c, [&d](const char* name, auto& column) { d[name] = ToArray(std::move(column)); });
    d["dtype_values"] = c.dtype_values;
    d["kv_cache_dtype_values"] = c.kv_cache_dtype_values;
    d["quantization_values"] = c.quantization_values;
    d["gpu_names"] = c.gpu_names;
    d["invalid_reasons"] = c.invalid_reasons;
    d["num_rows"] = c.num_rows;
    d["num_fast_rows"] = c.num_fast_rows;
    return d;
  }, py::arg("spec"), py::arg("axes"));
}

}  // namespace vllm_mem::bindings
