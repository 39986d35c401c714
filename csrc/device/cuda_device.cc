/*!
 * \file device/cuda_device.cc
 * \brief The real device's DeviceReader: a thin composition of the driver, the torch provider
 *        and /proc/meminfo. The integrated flag is cached per device (it cannot change).
 */
#include "device/cuda_device.h"

#include <atomic>
#include <memory>

#include "vllm_mem/base/error.h"
#include "device/cuda_driver.h"
#include "device/proc_meminfo.h"
#include "device/torch_allocator.h"

namespace vllm_mem {

int CudaDevice::DeviceCount() { return cuda::DeviceCount(); }

int CudaDevice::CurrentDevice() { return cuda::CurrentDevice(); }

void CudaDevice::CheckDevice(int device) {
  std::string why;
  if (!cuda::DriverAvailable(&why)) throw DeviceError(why);
  DeviceReader::CheckDevice(device);
}

DeviceMemInfo CudaDevice::MemInfo(int device) { return cuda::MemGetInfo(device); }

bool CudaDevice::IsIntegrated(int device) {
  // MemorySnapshot asks on every measure; the attribute is fixed, so read it once per device.
  static constexpr int kMaxCached = 64;
  static std::atomic<int> cache[kMaxCached];  // 0 unknown, 1 discrete, 2 integrated
  if (device >= 0 && device < kMaxCached) {
    const int known = cache[device].load(std::memory_order_relaxed);
    if (known != 0) return known == 2;
  }
  const bool integrated = cuda::DeviceAttribute(device, cuda::kAttrIntegrated) != 0;
  if (device >= 0 && device < kMaxCached) cache[device].store(integrated ? 2 : 1);
  return integrated;
}

int64_t CudaDevice::MaxSharedMemoryPerBlock(int device) {
  return cuda::DeviceAttribute(device, cuda::kAttrMaxSharedMemoryPerBlockOptin);
}

AllocatorStats CudaDevice::TorchStats(int device) { return torch_allocator::Stats(device); }

std::vector<std::pair<std::string, int64_t>> CudaDevice::TorchStatsAll(int device) {
  AllocatorStats status;
  return torch_allocator::AllStats(device, &status);
}

void CudaDevice::EmptyCache() { torch_allocator::EmptyCache(); }

void CudaDevice::ResetPeak(int device) { torch_allocator::ResetPeak(device); }

void CudaDevice::Synchronize(int device) { cuda::Synchronize(device); }

HostMemory CudaDevice::HostMemoryInfo() { return ReadHostMemory(); }

}  // namespace vllm_mem
