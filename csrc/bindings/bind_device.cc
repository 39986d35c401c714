/*!
 * \file bindings/bind_device.cc
 * \brief Bindings of the device area (not yet bound).
 */
#include "bindings/bind.h"

namespace py = pybind11;

namespace vllm_mem::bindings {

void BindDevice(py::module_& m) {}

}  // namespace vllm_mem::bindings
