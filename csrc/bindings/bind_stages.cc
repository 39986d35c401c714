/*!
 * \file bindings/bind_stages.cc
 * \brief Bindings of the stages area (not yet bound).
 */
#include "bindings/bind.h"

namespace py = pybind11;

namespace vllm_mem::bindings {

void BindStages(py::module_& m) {}

}  // namespace vllm_mem::bindings
