/*!
 * \file bindings/module.cc
 * \brief The vllm_mem._C extension module: registers every area and maps the core's
 *        exceptions to Python ones.
 */
#include <pybind11/pybind11.h>

#include "bindings/bind.h"
#include "vllm_mem/base/error.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "vllm_mem's C++ core. Use the typed wrappers in the vllm_mem package.";
  m.attr("__version__") = VLLM_MEM_VERSION;

  // Each core exception becomes the Python exception vLLM itself would raise for it.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const vllm_mem::InvalidArgument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const vllm_mem::InsufficientMemory& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const vllm_mem::Unsupported& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const vllm_mem::DeviceError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  using namespace vllm_mem::bindings;
  BindUnits(m);
  BindModelSpec(m);
  BindKvCache(m);
  BindWeights(m);
  BindDevice(m);
  BindPlan(m);
  BindStages(m);
}
