/*!
 * \file tests/fuzz/fuzz_gpu_name.cc
 * \brief libFuzzer harness of the GPU catalog's name lookup (core/plan/gpu_catalog.cc): the
 *        --gpu option and stage configs' device names, plus the other short strings users type
 *        (CUDA_VISIBLE_DEVICES, the CUDA-graph mode).
 */
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "vllm_mem/plan/cudagraph_estimate.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/stages/stage_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view name(reinterpret_cast<const char*>(data), size);
  using vllm_mem::fuzz::Expect;
  Expect([&] {
    const vllm_mem::GpuInfo& info = vllm_mem::LookupGpu(name);
    // A found entry must be a real one: a positive total, and its own name finds it again.
    if (info.total_memory_bytes <= 0) __builtin_trap();
    if (&vllm_mem::LookupGpu(info.name) != &info) __builtin_trap();
  });
  Expect([&] {
    std::string normalized = vllm_mem::NormalizeGpuName(name);
    if (normalized.size() > name.size()) __builtin_trap();  // normalising only drops characters
  });
  Expect([&] {
    auto matches = vllm_mem::CloseGpuMatches(name, 5);
    if (matches.size() > 5) __builtin_trap();
  });
  Expect([&] { (void)vllm_mem::ParseCudaVisibleDevices(name); });
  Expect([&] { (void)vllm_mem::ParseCudagraphMode(std::string(name)); });
  return 0;
}
