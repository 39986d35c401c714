/*!
 * \file bindings/bind_units.cc
 * \brief format_gib and friends.
 */
#include "bindings/bind.h"
#include "vllm_mem/base/units.h"

namespace py = pybind11;

namespace vllm_mem::bindings {

void BindUnits(py::module_& m) {
  m.def("format_gib", &FormatGib, py::arg("num_bytes"), "str(round(num_bytes / 2**30, 2)), as vLLM prints");
  m.def("format_mib", &FormatMib, py::arg("num_bytes"), "str(round(num_bytes / 2**20, 2))");
  m.def("format_thousands", &FormatThousands, py::arg("value"), "f'{value:,}'");
}

}  // namespace vllm_mem::bindings
