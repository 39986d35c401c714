/*!
 * \file bindings/bind_kv_cache.cc
 * \brief KV-cache capacity: options in, capacity out. Conversions only; every rule lives in
 *        core/kv_cache_*.
 */
#include <pybind11/stl.h>

#include <utility>
#include <vector>

#include "bindings/bind.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_dtype.h"
#include "vllm_mem/kv_cache/kv_cache_layout.h"
#include "vllm_mem/plan/sizing_cache.h"

namespace py = pybind11;

namespace vllm_mem::bindings {
namespace {

}  // namespace

void BindKvCache(py::module_& m) {
  py::class_<KvCacheOptions>(m, "KvCacheOptions")
      .def(py::init<>())
      .def_readwrite("max_model_len", &KvCacheOptions::max_model_len)
      .def_readwrite("block_size", &KvCacheOptions::block_size)
      .def_readwrite("kv_cache_dtype", &KvCacheOptions::kv_cache_dtype)
      .def_readwrite("model_dtype", &KvCacheOptions::model_dtype)
      .def_readwrite("tensor_parallel_size", &KvCacheOptions::tensor_parallel_size)
      .def_readwrite("pipeline_parallel_size", &KvCacheOptions::pipeline_parallel_size)
      .def_readwrite("decode_context_parallel_size", &KvCacheOptions::decode_context_parallel_size)
      .def_readwrite("max_num_batched_tokens", &KvCacheOptions::max_num_batched_tokens)
      .def_readwrite("max_concurrent_batches", &KvCacheOptions::max_concurrent_batches)
      .def_readwrite("disable_hybrid_kv_cache_manager", &KvCacheOptions::disable_hybrid_kv_cache_manager)
      .def_readwrite("num_gpu_blocks_override", &KvCacheOptions::num_gpu_blocks_override)
      .def_readwrite("allow_chunked_local_with_hybrid", &KvCacheOptions::allow_chunked_local_with_hybrid)
      .def_readwrite("cap_sliding_window_at_full", &KvCacheOptions::cap_sliding_window_at_full)
      .def_readwrite("mamba_cache_dtype", &KvCacheOptions::mamba_cache_dtype)
      .def_readwrite("mamba_ssm_cache_dtype", &KvCacheOptions::mamba_ssm_cache_dtype)
      .def_readwrite("mamba_cache_mode", &KvCacheOptions::mamba_cache_mode)
      .def_readwrite("num_speculative_tokens", &KvCacheOptions::num_speculative_tokens)
      .def_readwrite("mamba_block_size", &KvCacheOptions::mamba_block_size)
      .def_readwrite("hybrid_kernel_block_alignment", &KvCacheOptions::hybrid_kernel_block_alignment)
      .def_readwrite("hybrid_align_to_user_block_size", &KvCacheOptions::hybrid_align_to_user_block_size)
      .def_readwrite("mamba_ssm_dtype_from_config", &KvCacheOptions::mamba_ssm_dtype_from_config)
      .def_readwrite("mamba_conv_state_includes_spec_tokens", &KvCacheOptions::mamba_conv_state_includes_spec_tokens)
      .def_readwrite("kv_tokens_from_concurrency", &KvCacheOptions::kv_tokens_from_concurrency)
      .def_readwrite("group_size_max_ratio", &KvCacheOptions::group_size_max_ratio);

  py::class_<KvCacheGroupInfo>(m, "KvCacheGroupInfo")
      .def_readonly("kind", &KvCacheGroupInfo::kind)
      .def_readonly("layer_indices", &KvCacheGroupInfo::layer_indices)
      .def_readonly("block_size", &KvCacheGroupInfo::block_size)
      .def_readonly("page_size_bytes", &KvCacheGroupInfo::page_size_bytes)
      .def_readonly("sliding_window_tokens", &KvCacheGroupInfo::sliding_window_tokens)
      .def_readonly("max_memory_per_request_bytes", &KvCacheGroupInfo::max_memory_per_request_bytes)
      .def_readonly("blocks_per_request", &KvCacheGroupInfo::blocks_per_request)
      .def_readonly("uniform_type", &KvCacheGroupInfo::uniform_type);

  py::class_<KvCacheCapacity>(m, "KvCacheCapacity")
      .def_readonly("num_blocks", &KvCacheCapacity::num_blocks)
      .def_readonly("num_tokens", &KvCacheCapacity::num_tokens)
      .def_readonly("max_concurrency", &KvCacheCapacity::max_concurrency)
      .def_readonly("block_size", &KvCacheCapacity::block_size)
      .def_readonly("bytes_per_block", &KvCacheCapacity::bytes_per_block)
      .def_readonly("bytes_per_request", &KvCacheCapacity::bytes_per_request)
      .def_readonly("kv_cache_bytes", &KvCacheCapacity::kv_cache_bytes)
      .def_readonly("available_bytes", &KvCacheCapacity::available_bytes)
      .def_readonly("max_model_len", &KvCacheCapacity::max_model_len)
      .def_readonly("num_blocks_per_worker", &KvCacheCapacity::num_blocks_per_worker)
      .def_readonly("groups", &KvCacheCapacity::groups)
      .def_readonly("kv_cache_dtype", &KvCacheCapacity::kv_cache_dtype)
      .def_readonly("num_padding_layers", &KvCacheCapacity::num_padding_layers)
      .def_readonly("mamba_state_bytes", &KvCacheCapacity::mamba_state_bytes)
      .def_readonly("mamba_page_size_padded_bytes", &KvCacheCapacity::mamba_page_size_padded_bytes)
      .def_readonly("mamba_padding_percent", &KvCacheCapacity::mamba_padding_percent)
      .def_readonly("attention_block_size", &KvCacheCapacity::attention_block_size)
      .def_readonly("hybrid_log_lines", &KvCacheCapacity::hybrid_log_lines);

  m.def("kv_cache_capacity", py::overload_cast<const ModelSpec&, const std::vector<int64_t>&, const KvCacheOptions&>(&ComputeKvCacheCapacity), py::arg("spec"), py::arg("available_bytes_per_worker"),
        py::arg("options"));
  m.def("estimate_max_model_len", py::overload_cast<const ModelSpec&, const std::vector<int64_t>&, const KvCacheOptions&>(&EstimateMaxModelLen), py::arg("spec"), py::arg("available_bytes_per_worker"),
        py::arg("options"));
  m.def("auto_fit_max_model_len", py::overload_cast<const ModelSpec&, const std::vector<int64_t>&, const KvCacheOptions&>(&AutoFitMaxModelLen), py::arg("spec"), py::arg("available_bytes_per_worker"),
        py::arg("options"));
  m.def("check_enough_kv_cache_memory", &CheckEnoughKvCacheMemory, py::arg("spec"),
        py::arg("available_bytes_per_worker"), py::arg("options"));
  m.def("kv_cache_memory_shortfall", py::overload_cast<const ModelSpec&, const std::vector<int64_t>&, const KvCacheOptions&>(&KvCacheMemoryShortfall), py::arg("spec"),
        py::arg("available_bytes_per_worker"), py::arg("options"));
  m.def("kv_cache_log_lines", &KvCacheLogLines, py::arg("capacity"));
  m.def("allowed_kv_cache_dtypes", &AllowedKvCacheDTypes);

  // ---- a model's remembered sizing pieces (the KV functions' and the plan's entrance: bind_settings.cc) ----
  py::class_<SizingCache>(m, "SizingCache",
                          "A ModelSpec's remembered KV layouts, KV options per request and weights (sizing_cache.h).")
      .def(py::init<const ModelSpec&>(), py::arg("spec"), py::keep_alive<1, 2>())
      .def_property_readonly("num_kv_layouts", [](const SizingCache& c) { return c.kv_layouts().size(); });
}

}  // namespace vllm_mem::bindings
