/*!
 * \file core/plan/mxfp4_backend.cc
 * \brief vLLM 0.19's choice of MXFP4 MoE kernel per GPU (vllm/model_executor/layers/fused_moe/
 *        oracle/mxfp4.py select_mxfp4_moe_backend: the first backend of _get_priority_backends
 *        whose experts class supports the device).
 */
#include "core/plan/mxfp4_backend.h"

#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/plan/gpu_catalog.h"

namespace vllm_mem {
namespace {

/*! Mxfp4Config.get_min_capability(): 80 (quantization/mxfp4.py). */
constexpr int kMinCapability = 80;

/*! AMD's CDNA4 parts (gfx950), where _swizzle_mxfp4 converts the scales to CDNA4MXScaleLayout
 *  (quantization/utils/mxfp4_utils.py on_gfx950); the other catalog AMD GPUs keep strided scales. */
bool IsGfx950(const GpuInfo& gpu) { return gpu.name == "MI350X" || gpu.name == "MI355X"; }

std::string NvidiaBackend(const GpuInfo& gpu) {
  const int capability = CapabilityInt(gpu.compute_capability);
  if (capability < kMinCapability) {
    // vllm/config/vllm.py _get_quantization_config.
    throw InvalidArgument("quantization",
                          "The quantization method mxfp4 is not supported for the current GPU. "
                          "Minimum capability: 80. Current capability: " +
                              std::to_string(capability) + ". (" + gpu.name + ")");
  }
  // FLASHINFER_TRTLLM_MXFP4_BF16: TrtLlmMxfp4Experts on the SM100 family with FlashInfer (a
  // dependency of vLLM's CUDA wheels).
  if (capability >= 100 && capability < 110) return "flashinfer_trtllm";
  // TRITON: OAITritonExperts for 9.0 <= capability < 11.0 with the vendored triton_kernels.
  if (capability >= 90 && capability < 110) return "triton";
  // FLASHINFER_CUTLASS_MXFP4_BF16 takes mxfp4 weights with bf16 activations on 9.0 only, so
  // Ampere, Ada and SM120 (RTX 50xx, RTX PRO 6000) fall through to MARLIN (capability >= 7.5).
  return "marlin";
}

}  // namespace

int CapabilityInt(const std::string& cc) {
  const size_t dot = cc.find('.');
  return std::stoi(cc.substr(0, dot)) * 10 + (dot == std::string::npos ? 0 : std::stoi(cc.substr(dot + 1)));
}

std::string Mxfp4BackendForGpu(const std::string& gpu_name) {
  const GpuInfo* gpu = FindCatalogGpu(gpu_name);
  if (gpu == nullptr) return "";  // not a catalog GPU: its capability is unknown
  if (gpu->vendor == GpuVendor::kAmd) {
    // ROCm: CK needs AITER (off by default); TRITON's device check passes on CDNA (gfx9xx).
    return IsGfx950(*gpu) ? "triton_rocm_gfx950" : "triton_rocm";
  }
  return NvidiaBackend(*gpu);
}

}  // namespace vllm_mem
