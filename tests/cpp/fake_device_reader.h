/*!
 * \file tests/cpp/fake_device_reader.h
 * \brief A minimal DeviceReader whose figures the tests set directly, to test the core's
 *        accounting apart from the simulated device's bookkeeping.
 */
#ifndef VLLM_MEM_TESTS_FAKE_DEVICE_READER_H_
#define VLLM_MEM_TESTS_FAKE_DEVICE_READER_H_

#include <atomic>
#include <mutex>
#include <string>

#include "vllm_mem/memory/device_reader.h"
#include "vllm_mem/base/error.h"

namespace vllm_mem::testing {

class FakeReader : public DeviceReader {
 public:
  std::string Name() const override { return "fake"; }
  int DeviceCount() override { return devices; }
  int CurrentDevice() override { return 0; }
  DeviceMemInfo MemInfo(int) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (fail_reads) throw DeviceError("fake driver gone");
    ++mem_info_calls;
    return {free_bytes, total_bytes};
  }
  bool IsIntegrated(int) override { return integrated; }
  int64_t MaxSharedMemoryPerBlock(int) override { return 49152; }
  AllocatorStats TorchStats(int) override {
    std::lock_guard<std::mutex> lock(mutex);
    return torch;
  }
  void EmptyCache() override { ++empty_cache_calls; }
  void ResetPeak(int) override {
    std::lock_guard<std::mutex> lock(mutex);
    ++reset_peak_calls;
    torch.allocated_peak_bytes = torch.allocated_bytes;
  }
  void Synchronize(int) override { ++synchronize_calls; }
  HostMemory HostMemoryInfo() override { return host; }

  void Set(int64_t free, int64_t reserved) {
    std::lock_guard<std::mutex> lock(mutex);
    free_bytes = free;
    torch.reserved_bytes = reserved;
  }

  std::mutex mutex;
  int devices = 2;
  int64_t free_bytes = 70;
  int64_t total_bytes = 100;
  bool integrated = false;
  bool fail_reads = false;
  AllocatorStats torch{AllocatorStatus::kAvailable, "", 0, 0, 0, 0};
  HostMemory host{1000, 600};
  std::atomic<int> mem_info_calls{0};
  std::atomic<int> empty_cache_calls{0};
  std::atomic<int> reset_peak_calls{0};
  std::atomic<int> synchronize_calls{0};
};

}  // namespace vllm_mem::testing

#endif  // VLLM_MEM_TESTS_FAKE_DEVICE_READER_H_
