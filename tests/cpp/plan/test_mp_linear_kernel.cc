// The mixed-precision linear kernel vLLM picks per GPU and release (plan/mp_linear_kernel.cc), from
// vLLM's choose_mp_linear_kernel (kernels/mixed_precision/__init__.py: the first of
// _POSSIBLE_KERNELS whose minimum capability the device meets and that can implement the layer:
// MacheteLinearKernel on 9.0 only, MarlinLinearKernel from 8.0) and awq_marlin's history
// (vllm_versions.json awq_mp_linear_kernel).
#include <gtest/gtest.h>

#include "core/plan/mp_linear_kernel.h"
#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {
namespace {

TEST(MpLinearKernel, ChosenPerCapabilityAndRelease) {
  QuantizationSpec awq;
  awq.method = "awq";
  awq.weight_bits = 4;
  awq.group_size = 128;
  awq.zero_point = true;
  QuantizationSpec gptq = awq;
  gptq.method = "gptq";
  EXPECT_EQ(MpLinearKernelForGpu("H100", gptq, false), "machete");  // GPTQ chooses in every profile
  EXPECT_EQ(MpLinearKernelForGpu("H200", awq, true), "machete");
  EXPECT_EQ(MpLinearKernelForGpu("H200", awq, false), "marlin");  // awq_marlin repacked for Marlin
  EXPECT_EQ(MpLinearKernelForGpu("A100-80GB", gptq, true), "marlin");
  EXPECT_EQ(MpLinearKernelForGpu("B200", awq, true), "marlin");  // Machete: is_device_capability(90) only
  EXPECT_EQ(MpLinearKernelForGpu("T4", awq, true), "");          // below Marlin's 8.0
  EXPECT_EQ(MpLinearKernelForGpu("MI300X", awq, true), "");      // ROCm's kernels
  EXPECT_EQ(MpLinearKernelForGpu("not-a-gpu", awq, true), "");
  QuantizationSpec fp8;
  fp8.method = "fp8";
  fp8.weight_bits = 8;
  EXPECT_EQ(MpLinearKernelForGpu("H100", fp8, true), "");
}

}  // namespace
}  // namespace vllm_mem
