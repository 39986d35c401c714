/*!
 * \file device/simulated_device.cc
 * \brief The simulated device's bookkeeping.
 */
#include "device/simulated_device.h"

#include <algorithm>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {

int64_t SimulatedDeviceState::free_bytes() const {
  int64_t used = CheckedAdd(other_process_bytes, non_torch_bytes, "simulated used bytes");
  used = CheckedAdd(used, torch_reserved_bytes, "simulated used bytes");
  return CheckedSub(total_bytes, used, "simulated free bytes");
}

SimulatedDevice::SimulatedDevice(const SimulatedDeviceConfig& config)
    : max_shared_memory_per_block_(config.max_shared_memory_per_block),
      torch_status_(config.torch_status) {
  if (config.num_devices < 1 || config.num_devices > 1024) {
    throw InvalidArgument("num_devices", "must be in [1, 1024], got " +
                                             std::to_string(config.num_devices));
  }
  RequirePositive(config.total_bytes, "total_memory");
  RequirePositive(config.host_total_bytes, "host_total_memory");
  RequireNonNegative(config.host_available_bytes, "host_available_memory");
  if (config.host_available_bytes > config.host_total_bytes) {
    throw InvalidArgument("host_available_memory", "cannot exceed host_total_memory");
  }
  RequireNonNegative(config.max_shared_memory_per_block, "max_shared_memory_bytes");
  SimulatedDeviceState state;
  state.total_bytes = config.total_bytes;
  state.integrated = config.integrated;
  devices_.assign(static_cast<size_t>(config.num_devices), state);
  host_.total_bytes = config.host_total_bytes;
  host_.available_bytes = config.host_available_bytes;
}

SimulatedDeviceState& SimulatedDevice::At(int device) {
  if (device < 0 || device >= static_cast<int>(devices_.size())) {
    throw InvalidArgument("device", "unknown CUDA device index " + std::to_string(device) + " (" +
                                        std::to_string(devices_.size()) +
                                        " visible on 'simulated')");
  }
  return devices_[static_cast<size_t>(device)];
}

void SimulatedDevice::ThrowIfFailed() const {
  if (!failure_.empty()) throw DeviceError(failure_);
}

void SimulatedDevice::ChangeUsed(int device, int64_t delta_bytes) {
  SimulatedDeviceState& d = At(device);
  if (delta_bytes > d.free_bytes()) {
    throw DeviceError("simulated CUDA out of memory on cuda:" + std::to_string(device) +
                      ": tried to allocate " + FormatGib(delta_bytes) + " GiB with " +
                      FormatGib(d.free_bytes()) + " GiB free");
  }
  // On a unified-memory device every device byte is a host byte too.
  if (d.integrated) {
    host_.available_bytes = std::clamp<int64_t>(
        CheckedSub(host_.available_bytes, delta_bytes, "host available bytes"), 0,
        host_.total_bytes);
  }
}

int SimulatedDevice::DeviceCount() {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(devices_.size());
}

int SimulatedDevice::CurrentDevice() {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_device_;
}

DeviceMemInfo SimulatedDevice::MemInfo(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  ThrowIfFailed();
  const SimulatedDeviceState& d = At(device);
  if (pending_alloc_bytes_ > 0 && pending_alloc_device_ == device) {
    const int64_t bytes = pending_alloc_bytes_;
    pending_alloc_bytes_ = 0;
    AllocateLocked(device, bytes);
  }
  ++mem_info_calls_;
  return {d.free_bytes(), d.total_bytes};
}

bool SimulatedDevice::IsIntegrated(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  ThrowIfFailed();
  return At(device).integrated;
}

int64_t SimulatedDevice::MaxSharedMemoryPerBlock(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  ThrowIfFailed();
  At(device);
  return max_shared_memory_per_block_;
}

AllocatorStats SimulatedDevice::TorchStats(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  ThrowIfFailed();
  const SimulatedDeviceState& d = At(device);
  AllocatorStats out;
  out.status = torch_status_;
  if (torch_status_ != AllocatorStatus::kAvailable) {
    out.detail = std::string("simulated: ") + AllocatorStatusName(torch_status_);
    return out;
  }
  out.allocated_bytes = d.torch_allocated_bytes;
  out.allocated_peak_bytes = d.torch_allocated_peak_bytes;
  out.reserved_bytes = d.torch_reserved_bytes;
  out.reserved_peak_bytes = d.torch_reserved_peak_bytes;
  return out;
}

void SimulatedDevice::EmptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  ThrowIfFailed();
  ++empty_cache_calls_;
  if (torch_status_ != AllocatorStatus::kAvailable) return;  // torch's no-op when uninitialised
  EmptyCacheLocked();
}

void SimulatedDevice::EmptyCacheLocked() {
  for (size_t i = 0; i < devices_.size(); ++i) {
    SimulatedDeviceState& d = devices_[i];
    const int64_t released = d.torch_reserved_bytes - d.torch_allocated_bytes;
    ChangeUsed(static_cast<int>(i), -released);
    d.torch_reserved_bytes = d.torch_allocated_bytes;
  }
}

void SimulatedDevice::ResetPeak(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  ThrowIfFailed();
  ++reset_peak_calls_;
  SimulatedDeviceState& d = At(device);
  if (torch_status_ != AllocatorStatus::kAvailable) return;
  d.torch_allocated_peak_bytes = d.torch_allocated_bytes;
  d.torch_reserved_peak_bytes = d.torch_reserved_bytes;
}

void SimulatedDevice::Synchronize(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  ThrowIfFailed();
  At(device);
}

HostMemory SimulatedDevice::HostMemoryInfo() {
  std::lock_guard<std::mutex> lock(mutex_);
  ThrowIfFailed();
  return host_;
}

void SimulatedDevice::AddOtherProcessBytes(int device, int64_t delta_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  SimulatedDeviceState& d = At(device);
  if (d.other_process_bytes + delta_bytes < 0) {
    throw InvalidArgument("other_process_bytes", "cannot free more than other processes hold");
  }
  ChangeUsed(device, delta_bytes);
  d.other_process_bytes += delta_bytes;
}

void SimulatedDevice::AddNonTorchBytes(int device, int64_t delta_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  SimulatedDeviceState& d = At(device);
  if (d.non_torch_bytes + delta_bytes < 0) {
    throw InvalidArgument("non_torch_bytes", "cannot free more non-torch memory than is held");
  }
  ChangeUsed(device, delta_bytes);
  d.non_torch_bytes += delta_bytes;
}

void SimulatedDevice::TorchAllocate(int device, int64_t bytes) {
  RequireNonNegative(bytes, "bytes");
  std::lock_guard<std::mutex> lock(mutex_);
  AllocateLocked(device, bytes);
}

void SimulatedDevice::TorchAllocateAtNextRead(int device, int64_t bytes) {
  RequireNonNegative(bytes, "bytes");
  std::lock_guard<std::mutex> lock(mutex_);
  At(device);
  pending_alloc_device_ = device;
  pending_alloc_bytes_ = bytes;
}

void SimulatedDevice::TorchEmptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  EmptyCacheLocked();
}

void SimulatedDevice::TorchResetPeak(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  SimulatedDeviceState& d = At(device);
  d.torch_allocated_peak_bytes = d.torch_allocated_bytes;
  d.torch_reserved_peak_bytes = d.torch_reserved_bytes;
}

void SimulatedDevice::AllocateLocked(int device, int64_t bytes) {
  SimulatedDeviceState& d = At(device);
  const int64_t allocated = CheckedAdd(d.torch_allocated_bytes, bytes, "torch_allocated");
  if (allocated > d.torch_reserved_bytes) {
    ChangeUsed(device, allocated - d.torch_reserved_bytes);
    d.torch_reserved_bytes = allocated;
  }
  d.torch_allocated_bytes = allocated;
  d.torch_allocated_peak_bytes = std::max(d.torch_allocated_peak_bytes, allocated);
  d.torch_reserved_peak_bytes = std::max(d.torch_reserved_peak_bytes, d.torch_reserved_bytes);
}

void SimulatedDevice::TorchFree(int device, int64_t bytes) {
  RequireNonNegative(bytes, "bytes");
  std::lock_guard<std::mutex> lock(mutex_);
  SimulatedDeviceState& d = At(device);
  if (bytes > d.torch_allocated_bytes) {
    throw InvalidArgument("bytes", "cannot free more torch memory than is allocated");
  }
  d.torch_allocated_bytes -= bytes;
}

void SimulatedDevice::SetCurrentDevice(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  At(device);
  current_device_ = device;
}

void SimulatedDevice::SetIntegrated(int device, bool integrated) {
  std::lock_guard<std::mutex> lock(mutex_);
  At(device).integrated = integrated;
}

void SimulatedDevice::SetHostMemory(int64_t total_bytes, int64_t available_bytes) {
  RequirePositive(total_bytes, "host_total_memory");
  RequireNonNegative(available_bytes, "host_available_memory");
  if (available_bytes > total_bytes) {
    throw InvalidArgument("host_available_memory", "cannot exceed host_total_memory");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  host_ = {total_bytes, available_bytes};
}

void SimulatedDevice::SetTorchStatus(AllocatorStatus status) {
  std::lock_guard<std::mutex> lock(mutex_);
  torch_status_ = status;
}

void SimulatedDevice::SetFailure(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  failure_ = message;
}

SimulatedDeviceState SimulatedDevice::State(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  return At(device);
}

int64_t SimulatedDevice::empty_cache_calls() {
  std::lock_guard<std::mutex> lock(mutex_);
  return empty_cache_calls_;
}

int64_t SimulatedDevice::reset_peak_calls() {
  std::lock_guard<std::mutex> lock(mutex_);
  return reset_peak_calls_;
}

int64_t SimulatedDevice::mem_info_calls() {
  std::lock_guard<std::mutex> lock(mutex_);
  return mem_info_calls_;
}

}  // namespace vllm_mem
