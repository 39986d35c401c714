/*!
 * \file bindings/bind.h
 * \brief One Bind* function per area; module.cc calls them all. Binding code only: no logic
 *        lives here, only conversions between Python and the core's types.
 */
#ifndef VLLM_MEM_BINDINGS_BIND_H_
#define VLLM_MEM_BINDINGS_BIND_H_

#include <memory>
#include <type_traits>

#include <pybind11/pybind11.h>

namespace vllm_mem::bindings {

void BindUnits(pybind11::module_& m);      // bind_units.cc
void BindModelSpec(pybind11::module_& m);  // bind_model_spec.cc
void BindKvCache(pybind11::module_& m);    // bind_kv_cache.cc
void BindWeights(pybind11::module_& m);    // bind_weights.cc
void BindDevice(pybind11::module_& m);     // bind_device.cc
void BindSettings(pybind11::module_& m);   // bind_settings.cc
void BindPlan(pybind11::module_& m);       // bind_plan.cc
void BindStages(pybind11::module_& m);     // bind_stages.cc

/*! What \p evaluate returns, built where Python will own it: the returned prvalue initializes
 *  the heap object itself (C++17's guaranteed elision), so pybind11 takes the pointer instead of
 *  moving a large result (a StartupPlan is 3.5 KB with its strings: a tenth of a plan() call)
 *  into a new object. */
template <typename Evaluate>
std::unique_ptr<std::invoke_result_t<Evaluate&>> OnHeap(Evaluate&& evaluate) {
  using Result = std::invoke_result_t<Evaluate&>;
  return std::unique_ptr<Result>(new Result(evaluate()));
}

}  // namespace vllm_mem::bindings

#endif  // VLLM_MEM_BINDINGS_BIND_H_
