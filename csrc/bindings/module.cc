/*!
 * \file bindings/module.cc
 * \brief The vllm_mem._C extension module: registers every area and maps the core's
 *        exceptions to Python ones.
 */
#include <pybind11/pybind11.h>

#include <string>

#include "bindings/bind.h"
#include "vllm_mem/base/error.h"

namespace py = pybind11;

namespace {

// Raises vllm_mem.errors.<name>(message, field): the typed error with the core's field attached.
// The class is looked up when an error is raised, not at import (vllm_mem.errors imports
// nothing, so this works while the package is still initialising). If that module cannot be
// imported the built-in base is raised instead, never a second error.
void RaiseTyped(const char* name, PyObject* base, const char* message, const std::string* field) {
  try {
    py::object cls = py::module_::import("vllm_mem.errors").attr(name);
    py::object exc = field != nullptr ? cls(message, *field) : cls(message);
    PyErr_SetObject(cls.ptr(), exc.ptr());
  } catch (py::error_already_set&) {
    PyErr_SetString(base, message);
  }
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "vllm_mem's C++ core. Use the typed wrappers in the vllm_mem package.";
  m.attr("__version__") = VLLM_MEM_VERSION;

  // Each core exception becomes the Python exception vLLM itself would raise for it, typed
  // (python/vllm_mem/errors.py) where the core knows more: the field of an InvalidArgument.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const vllm_mem::InvalidArgument& e) {
      RaiseTyped("InvalidArgumentError", PyExc_ValueError, e.what(), &e.field());
    } catch (const vllm_mem::InsufficientMemory& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const vllm_mem::Unsupported& e) {
      RaiseTyped("NotModelledError", PyExc_NotImplementedError, e.what(), nullptr);
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
  BindSettings(m);
  BindPlan(m);
  BindStages(m);
}
