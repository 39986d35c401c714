/*!
 * \file bindings/bind_kv_cache.cc
 * \brief KV-cache capacity: options in, capacity out. Conversions only; every rule lives in
 *        core/kv_cache_*.
 */
#include <pybind11/stl.h>

#include "bindings/bind.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_dtype.h"

namespace py = pybind11;

namespace vllm_mem::bindings {

void BindKvCache(py::module_& m) {
  py::class_<KvCacheOptions>(m, "KvCacheOptions")
      .def(py::init<>())
      .def_readwrite("max_model_len", &KvCacheOptions::max_model_len)
      .def_readwrite("block_size", &KvCacheOptions::block_size)
      .def_readwrite("kv_cache_dtype", &KvCacheOptions::kv_cache_dtype)
      .def_readwrite("model_dtype", &KvCacheOptions::model_dtype)
      .def_readwrite("tensor_parallel_size", &KvCacheOptions::tensor_parallel_size)
      .def_readwrite("pipeline_parallel_size", &KvCacheOptions::pipeline_parallel_size)
      .def_readwrite("max_num_batched_tokens", &KvCacheOptions::max_num_batched_tokens)
      .def_readwrite("max_concurrent_batches", &KvCacheOptions::max_concurrent_batches)
      .def_readwrite("disable_hybrid_kv_cache_manager", &KvCacheOptions::disable_hybrid_kv_cache_manager)
      .def_readwrite("num_gpu_blocks_override", &KvCacheOptions::num_gpu_blocks_override)
      .def_readwrite("allow_chunked_local_with_hybrid", &KvCacheOptions::allow_chunked_local_with_hybrid)
      .def_readwrite("cap_sliding_window_at_full", &KvCacheOptions::cap_sliding_window_at_full);

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
      .def_readonly("num_padding_layers", &KvCacheCapacity::num_padding_layers);

  m.def("kv_cache_capacity", &ComputeKvCacheCapacity, py::arg("spec"), py::arg("available_bytes_per_worker"),
        py::arg("options"));
  m.def("estimate_max_model_len", &EstimateMaxModelLen, py::arg("spec"), py::arg("available_bytes_per_worker"),
        py::arg("options"));
  m.def("auto_fit_max_model_len", &AutoFitMaxModelLen, py::arg("spec"), py::arg("available_bytes_per_worker"),
        py::arg("options"));
  m.def("check_enough_kv_cache_memory", &CheckEnoughKvCacheMemory, py::arg("spec"),
        py::arg("available_bytes_per_worker"), py::arg("options"));
  m.def("kv_cache_memory_shortfall", &KvCacheMemoryShortfall, py::arg("spec"),
        py::arg("available_bytes_per_worker"), py::arg("options"));
  m.def("kv_cache_log_lines", &KvCacheLogLines, py::arg("capacity"));
  m.def("allowed_kv_cache_dtypes", &AllowedKvCacheDTypes);
}

}  // namespace vllm_mem::bindings
