/*!
 * \file bindings/bind_kv_cache.cc
 * \brief Bindings of the kv_cache area (not yet bound).
 */
#include "bindings/bind.h"

namespace py = pybind11;

namespace vllm_mem::bindings {

void BindKvCache(py::module_& m) {}

}  // namespace vllm_mem::bindings
