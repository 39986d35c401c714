/*!
 * \file core/plan/mp_linear_kernel.cc
 * \brief vLLM's choice of mixed-precision linear kernel per GPU (choose_mp_linear_kernel in
 *        vllm/model_executor/layers/quantization/kernels/mixed_precision/__init__.py, later
 *        vllm/model_executor/kernels/linear/__init__.py: the first kernel of _POSSIBLE_KERNELS
 *        whose get_min_capability() the device meets and whose can_implement() accepts the layer).
 */
#include "core/plan/mp_linear_kernel.h"

#include <string>

#include "core/plan/mxfp4_backend.h"
#include "vllm_mem/model/weights.h"
#include "vllm_mem/plan/gpu_catalog.h"

namespace vllm_mem {

std::string MpLinearKernelForGpu(const std::string& gpu_name, const QuantizationSpec& quant,
                                 bool awq_mp_linear_kernel) {
  const GpuInfo* gpu = FindCatalogGpu(gpu_name);
  // AMD: Conch / Triton / ExLlama kernels, and below 8.0 (Turing) vLLM's awq / gptq methods, keep
  // the checkpoint's tensors as loaded.
  if (gpu == nullptr || gpu->vendor == GpuVendor::kAmd || !HasWna16Linears(quant)) return "";
  const int capability = CapabilityInt(gpu->compute_capability);
  if (capability < 80) return "";
  // CutlassW4A8LinearKernel (listed before Machete in later releases) takes fp8 activations
  // only; MacheteLinearKernel: is_device_capability(90); then AllSpark (8-bit weights only)
  // and MarlinLinearKernel from 8.0. Before the release's AWQ rule, awq_marlin repacks for
  // Marlin without asking.
  const bool awq = quant.method.rfind("awq", 0) == 0;
  if (capability == 90 && (!awq || awq_mp_linear_kernel)) return "machete";
  return "marlin";
}

}  // namespace vllm_mem
