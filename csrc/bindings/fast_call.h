/*!
 * \file bindings/fast_call.h
 * \brief The conversions of the positional fast paths (kv_cache_capacity, weight_bytes, plan):
 *        plain CPython METH_FASTCALL functions, because pybind11's dispatcher (argument vector,
 *        keyword matching, one type caster per argument) cost more than the sizing itself.
 *
 * Each fast function takes exactly the plain values a caller usually passes (an exact int in
 * range, None, True/False, a short str) and returns None for anything else: the Python wrapper
 * then runs its checked path, which raises the same ValueError/TypeError as before. So the
 * fast path never has an error message of its own, and the bounds below mirror
 * python/vllm_mem/_validate.py (SETTINGS and text()) exactly: a value the checked path would
 * refuse must never be accepted here.
 */
#ifndef VLLM_MEM_BINDINGS_FAST_CALL_H_
#define VLLM_MEM_BINDINGS_FAST_CALL_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace vllm_mem::bindings::fast {

/*! _limits.MAX_NAME_CHARS: the longest dtype / quantization / mode name text() accepts
 *  (exported as _C._FAST_NAME_CHARS; tests/python/test_properties.py checks the two agree). */
inline constexpr Py_ssize_t kMaxNameChars = 256;

/*! An exact int (never a bool, NumPy integer or subclass) in [low, high]. */
inline bool Int(PyObject* o, int64_t low, int64_t high, int64_t* out) {
  if (!PyLong_CheckExact(o)) return false;
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  if (v < low || v > high) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

/*! None (as \p none_value) or an exact int in [low, high]. */
inline bool OptionalInt(PyObject* o, int64_t low, int64_t high, int64_t none_value, int64_t* out) {
  if (o == Py_None) {
    *out = none_value;
    return true;
  }
  return Int(o, low, high, out);
}

/*! True or False themselves (NumPy bools take the checked path). */
inline bool Flag(PyObject* o, bool* out) {
  if (o != Py_True && o != Py_False) return false;
  *out = o == Py_True;
  return true;
}

/*! An exact str of at most \p max_chars characters, without NUL, valid UTF-8 when encoded. */
inline bool Text(PyObject* o, std::string* out, Py_ssize_t max_chars = kMaxNameChars) {
  if (!PyUnicode_CheckExact(o)) return false;
  const Py_ssize_t chars = PyUnicode_GetLength(o);
  if (chars < 0 || chars > max_chars) {
    PyErr_Clear();
    return false;
  }
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(o, &size);
  if (data == nullptr) {  // lone surrogates: the checked path decides what they are
    PyErr_Clear();
    return false;
  }
  if (std::memchr(data, '\0', static_cast<size_t>(size)) != nullptr) return false;
  out->assign(data, static_cast<size_t>(size));
  return true;
}

/*! None (as "") or Text(). */
inline bool OptionalText(PyObject* o, std::string* out, Py_ssize_t max_chars = kMaxNameChars) {
  if (o == Py_None) {
    out->clear();
    return true;
  }
  return Text(o, out, max_chars);
}

/*! An exact float (ints and NumPy floats take the checked path). */
inline bool Float(PyObject* o, double* out) {
  if (!PyFloat_CheckExact(o)) return false;
  *out = PyFloat_AS_DOUBLE(o);
  return true;
}

/*! Runs \p body (which returns a new reference, or nullptr for "take the checked path"),
 *  mapping a core exception to the Python one through the module's translators, as pybind11
 *  does for its own functions. */
template <typename Body>
PyObject* Guarded(Body&& body) {
  try {
    PyObject* result = body();
    if (result == nullptr && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
  } catch (pybind11::error_already_set& e) {
    e.restore();
    return nullptr;
  } catch (...) {
    pybind11::detail::try_translate_exceptions();
    return nullptr;
  }
}

/*! Adds a METH_FASTCALL function to \p m; \p def must have static storage. */
inline void AddFunction(pybind11::module_& m, PyMethodDef* def) {
  PyObject* fn = PyCFunction_NewEx(def, nullptr, m.ptr());
  if (fn == nullptr) throw pybind11::error_already_set();
  m.add_object(def->ml_name, pybind11::reinterpret_steal<pybind11::object>(fn));
}

}  // namespace vllm_mem::bindings::fast

#endif  // VLLM_MEM_BINDINGS_FAST_CALL_H_
