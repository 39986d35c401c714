/*!
 * \file device/cuda_device.h
 * \brief The real device: the CUDA driver (free/total, attributes), the torch provider
 *        (allocator statistics) and /proc/meminfo (host memory), behind DeviceReader.
 */
#ifndef VLLM_MEM_DEVICE_CUDA_DEVICE_H_
#define VLLM_MEM_DEVICE_CUDA_DEVICE_H_

#include <string>

#include "vllm_mem/memory/device_reader.h"

namespace vllm_mem {

class CudaDevice final : public DeviceReader {
 public:
  std::string Name() const override { return "cuda"; }
  int DeviceCount() override;
  int CurrentDevice() override;
  DeviceMemInfo MemInfo(int device) override;
  bool IsIntegrated(int device) override;
  int64_t MaxSharedMemoryPerBlock(int device) override;
  AllocatorStats TorchStats(int device) override;
  std::vector<std::pair<std::string, int64_t>> TorchStatsAll(int device) override;
  void EmptyCache() override;
  void ResetPeak(int device) override;
  void Synchronize(int device) override;
  HostMemory HostMemoryInfo() override;
  /*! No driver is a DeviceError naming the reason, not an "unknown index". */
  void CheckDevice(int device) override;
};

}  // namespace vllm_mem

#endif  // VLLM_MEM_DEVICE_CUDA_DEVICE_H_
