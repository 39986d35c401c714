/*!
 * \file core/plan/mxfp4_backend.h
 * \brief The MXFP4 MoE kernel vLLM picks on a GPU, which decides what an MXFP4 checkpoint's
 *        experts hold after loading (WeightOptions::mxfp4_backend). Internal to the plan area.
 */
#ifndef VLLM_MEM_CORE_PLAN_MXFP4_BACKEND_H_
#define VLLM_MEM_CORE_PLAN_MXFP4_BACKEND_H_

#include <string>

namespace vllm_mem {

/*! \brief The backend vLLM 0.19 selects on the catalog GPU \p gpu_name with no override
 *  (environment variables, --moe-backend, LoRA): "" when the name is not a catalog GPU (the
 *  caller keeps WeightOptions' default). Below compute capability 8.0, vLLM's refusal of
 *  mxfp4 as InvalidArgument (field "quantization"). */
std::string Mxfp4BackendForGpu(const std::string& gpu_name);

/*! \brief "9.0" -> 90, as vLLM's DeviceCapability.to_int() (also plan/mp_linear_kernel.cc's). */
int CapabilityInt(const std::string& cc);

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_PLAN_MXFP4_BACKEND_H_
