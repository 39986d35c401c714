/*!
 * \file core/plan/mp_linear_kernel.h
 * \brief The mixed-precision linear kernel vLLM picks for an AWQ / GPTQ / compressed-tensors
 *        WNA16 checkpoint on a GPU, which decides what its linears hold after loading
 *        (WeightOptions::mp_linear_kernel). Internal to the plan area.
 */
#ifndef VLLM_MEM_CORE_PLAN_MP_LINEAR_KERNEL_H_
#define VLLM_MEM_CORE_PLAN_MP_LINEAR_KERNEL_H_

#include <string>

#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief The kernel choose_mp_linear_kernel tries first for \p quant's linears on the catalog GPU
 *  \p gpu_name with no override (VLLM_DISABLED_KERNELS): "machete" on compute capability 9.0,
 *  "marlin" on other NVIDIA GPUs from 8.0 (and for AWQ on 9.0 where the release repacks AWQ for
 *  Marlin only, \p awq_mp_linear_kernel false), "" (the checkpoint's layout) otherwise: not a
 *  catalog GPU, AMD, below 8.0 (vLLM's awq / gptq kernels), or a method without WNA16 linears. */
std::string MpLinearKernelForGpu(const std::string& gpu_name, const QuantizationSpec& quant, bool awq_mp_linear_kernel);

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_PLAN_MP_LINEAR_KERNEL_H_
