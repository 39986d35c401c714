/*!
 * \file bindings/bind_weights.cc
 * \brief Bindings of the weights area (not yet bound).
 */
#include "bindings/bind.h"

namespace py = pybind11;

namespace vllm_mem::bindings {

void BindWeights(py::module_& m) {}

}  // namespace vllm_mem::bindings
