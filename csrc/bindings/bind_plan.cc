/*!
 * \file bindings/bind_plan.cc
 * \brief Bindings of the plan area (not yet bound).
 */
#include "bindings/bind.h"

namespace py = pybind11;

namespace vllm_mem::bindings {

void BindPlan(py::module_& m) {}

}  // namespace vllm_mem::bindings
