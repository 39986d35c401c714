/*!
 * \file core/memory/device_reader.cc
 * \brief Shared helpers of the device interface: status names and index validation.
 */
#include "vllm_mem/memory/device_reader.h"

#include "vllm_mem/base/error.h"

namespace vllm_mem {

const char* AllocatorStatusName(AllocatorStatus status) {
  switch (status) {
    case AllocatorStatus::kAvailable: return "available";
    case AllocatorStatus::kNoTorch: return "no_torch";
    case AllocatorStatus::kNoCudaAllocator: return "no_cuda_allocator";
    case AllocatorStatus::kNotInitialized: return "not_initialized";
    case AllocatorStatus::kNoStats: return "no_stats";
    case AllocatorStatus::kError: return "error";
    case AllocatorStatus::kNoProvider: return "no_provider";
  }
  return "unknown";
}

AllocatorStatus ParseAllocatorStatus(const std::string& name) {
  for (int code = 0; code <= static_cast<int>(AllocatorStatus::kNoProvider); ++code) {
    const auto status = static_cast<AllocatorStatus>(code);
    if (name == AllocatorStatusName(status)) return status;
  }
  throw InvalidArgument("torch_status", "unknown allocator status " + EchoValue(name));
}

void DeviceReader::CheckDevice(int device) {
  const int count = DeviceCount();
  if (device < 0 || device >= count) {
    throw InvalidArgument("device", "unknown CUDA device index " + std::to_string(device) + " (" +
                                        std::to_string(count) + " visible on '" + Name() + "')");
  }
}

std::vector<std::pair<std::string, int64_t>> DeviceReader::TorchStatsAll(int device) {
  const AllocatorStats s = TorchStats(device);
  if (!s.available()) return {};
  return {{"allocated_bytes.all.current", s.allocated_bytes},
          {"allocated_bytes.all.peak", s.allocated_peak_bytes},
          {"reserved_bytes.all.current", s.reserved_bytes},
          {"reserved_bytes.all.peak", s.reserved_peak_bytes}};
}

}  // namespace vllm_mem
