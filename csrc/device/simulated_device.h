/*!
 * \file device/simulated_device.h
 * \brief A device that tests drive: total memory, other processes' bytes, torch's caching
 *        allocator (allocated / reserved / peak), non-torch allocations, the integrated flag and
 *        host memory. It implements DeviceReader, so the snapshot, profiling and sampler code
 *        run unchanged on the CPU. Thread-safe: the sampler thread reads while a test writes.
 */
#ifndef VLLM_MEM_DEVICE_SIMULATED_DEVICE_H_
#define VLLM_MEM_DEVICE_SIMULATED_DEVICE_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "vllm_mem/memory/device_reader.h"

namespace vllm_mem {

/*! \brief The initial state of every simulated device. */
struct SimulatedDeviceConfig {
  int num_devices = 1;
  int64_t total_bytes = int64_t{80} << 30;       //!< cudaMemGetInfo total of each device
  bool integrated = false;
  int64_t host_total_bytes = int64_t{256} << 30;
  int64_t host_available_bytes = int64_t{200} << 30;
  int64_t max_shared_memory_per_block = 232448;  //!< H100's opt-in maximum (227 KiB)
  AllocatorStatus torch_status = AllocatorStatus::kAvailable;
};

/*! \brief The state of one simulated device. free = total - other - non_torch - reserved. */
struct SimulatedDeviceState {
  int64_t total_bytes = 0;
  int64_t other_process_bytes = 0;
  int64_t non_torch_bytes = 0;
  int64_t torch_allocated_bytes = 0;
  int64_t torch_allocated_peak_bytes = 0;
  int64_t torch_reserved_bytes = 0;
  int64_t torch_reserved_peak_bytes = 0;
  bool integrated = false;
  int64_t free_bytes() const;
};

class SimulatedDevice final : public DeviceReader {
 public:
  explicit SimulatedDevice(const SimulatedDeviceConfig& config);

  // ---- DeviceReader ----
  std::string Name() const override { return "simulated"; }
  int DeviceCount() override;
  int CurrentDevice() override;
  DeviceMemInfo MemInfo(int device) override;
  bool IsIntegrated(int device) override;
  int64_t MaxSharedMemoryPerBlock(int device) override;
  AllocatorStats TorchStats(int device) override;
  void EmptyCache() override;
  void ResetPeak(int device) override;
  void Synchronize(int device) override;
  HostMemory HostMemoryInfo() override;

  // ---- driving it (tests). Every size must be >= 0; frees beyond what is held are errors. ----
  /*! Another process takes (positive) or returns (negative) device memory. */
  void AddOtherProcessBytes(int device, int64_t delta_bytes);
  /*! This process allocates / frees outside torch (NCCL, cuBLAS workspaces, cudaMalloc). */
  void AddNonTorchBytes(int device, int64_t delta_bytes);
  /*! A torch tensor is created: allocated grows; reserved grows to cover it (the caching
   *  allocator gets a new segment only when its cache is too small). */
  void TorchAllocate(int device, int64_t bytes);
  /*! A torch tensor is freed: allocated shrinks, reserved stays cached until EmptyCache. */
  void TorchFree(int device, int64_t bytes);
  /*! The next MemInfo read of \p device first runs TorchAllocate(\p device, \p bytes): a
   *  segment torch maps between a reader's torch read and its device read (the sampler race). */
  void TorchAllocateAtNextRead(int device, int64_t bytes);
  /*! torch.cuda.empty_cache() / reset_peak_memory_stats() as torch itself does them, whatever
   *  the reader's status: what a torch stand-in calls when vllm_mem has no provider. */
  void TorchEmptyCache();
  void TorchResetPeak(int device);
  void SetCurrentDevice(int device);
  void SetIntegrated(int device, bool integrated);
  void SetHostMemory(int64_t total_bytes, int64_t available_bytes);
  void SetTorchStatus(AllocatorStatus status);
  /*! Every later read throws DeviceError(\p message), as when the driver is gone; "" heals. */
  void SetFailure(const std::string& message);
  SimulatedDeviceState State(int device);
  int64_t empty_cache_calls();
  int64_t reset_peak_calls();
  /*! MemInfo reads so far: lets a test wait until the sampler thread has read the device. */
  int64_t mem_info_calls();

 private:
  SimulatedDeviceState& At(int device);  // caller holds mutex_
  void ThrowIfFailed() const;            // caller holds mutex_
  void ChangeUsed(int device, int64_t delta_bytes);  // caller holds mutex_; checks capacity
  void AllocateLocked(int device, int64_t bytes);    // caller holds mutex_
  void EmptyCacheLocked();                           // caller holds mutex_

  std::mutex mutex_;
  std::vector<SimulatedDeviceState> devices_;
  HostMemory host_;
  int64_t max_shared_memory_per_block_;
  AllocatorStatus torch_status_;
  int current_device_ = 0;
  std::string failure_;
  int64_t empty_cache_calls_ = 0;
  int64_t reset_peak_calls_ = 0;
  int64_t mem_info_calls_ = 0;
  int pending_alloc_device_ = 0;
  int64_t pending_alloc_bytes_ = 0;
};

}  // namespace vllm_mem

#endif  // VLLM_MEM_DEVICE_SIMULATED_DEVICE_H_
