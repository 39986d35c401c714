/*!
 * \file torch/torch_provider.cc
 * \brief The only translation unit that includes torch headers. Reads PyTorch's caching
 *        allocator through c10's device-generic interface (c10::DeviceAllocator), which lives in
 *        libc10.so: no CUDA headers, no libtorch_cuda. Exported through the plain C ABI of
 *        device/torch_provider_abi.h; _C dlopens this library only once torch is loaded.
 */
#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceType.h>
#include <c10/util/Exception.h>

#include <cstdio>
#include <cstring>
#include <exception>

#include "vllm_mem/memory/device_reader.h"
#include "device/torch_provider_abi.h"

namespace {

namespace abi = vllm_mem::torch_abi;
using vllm_mem::AllocatorStatus;

int Fail(AllocatorStatus status, const char* why, char* msg, int msg_len) {
  if (msg != nullptr && msg_len > 0) std::snprintf(msg, static_cast<size_t>(msg_len), "%s", why);
  return static_cast<int>(status);
}

/*! The CUDA allocator as a DeviceAllocator, or a status saying why there is none. We do not
 *  call c10::getDeviceAllocator: on a CPU wheel nothing is registered for CUDA and it would
 *  throw; GetAllocator returns null instead (its check is debug-only). */
AllocatorStatus FindAllocator(c10::DeviceAllocator** out, const char** why) {
  c10::Allocator* base = c10::GetAllocator(c10::DeviceType::CUDA);
  if (base == nullptr) {
    *why = "torch has no CUDA allocator (CPU-only build of torch)";
    return AllocatorStatus::kNoCudaAllocator;
  }
  auto* device_allocator = dynamic_cast<c10::DeviceAllocator*>(base);
  if (device_allocator == nullptr) {
    *why = "torch's CUDA allocator is not a c10::DeviceAllocator (no statistics)";
    return AllocatorStatus::kNoStats;
  }
  // False until torch initialises CUDA, and under a pluggable allocator, whose swap leaves the
  // registered native allocator uninitialised; either way there is nothing true to report.
  if (!device_allocator->initialized()) {
    *why = "torch's CUDA caching allocator is not initialised (CUDA not initialised by torch, "
           "or a pluggable allocator without statistics is in use)";
    return AllocatorStatus::kNotInitialized;
  }
  *out = device_allocator;
  return AllocatorStatus::kAvailable;
}

void PutStat(int64_t* values, int index, const c10::CachingDeviceAllocator::Stat& s) {
  values[index + 0] = s.current;
  values[index + 1] = s.peak;
  values[index + 2] = s.allocated;
  values[index + 3] = s.freed;
}

template <typename Fn>
int Guarded(char* msg, int msg_len, Fn&& fn) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    return Fail(AllocatorStatus::kError, e.what_without_backtrace(), msg, msg_len);
  } catch (const std::exception& e) {
    return Fail(AllocatorStatus::kError, e.what(), msg, msg_len);
  }
}

}  // namespace

// Tag + version in one string literal, so the version sits at a findable place in the binary.
#ifndef VLLM_MEM_TORCH_BUILT_VERSION
#error "cmake/torch.cmake defines VLLM_MEM_TORCH_BUILT_VERSION and VLLM_MEM_TORCH_BUILT_LIB_DIR"
#endif
constexpr char kBuiltVersionTagged[] = "vllm_mem_built_against_torch=" VLLM_MEM_TORCH_BUILT_VERSION;

extern "C" {

__attribute__((visibility("default"))) int vllm_mem_torch_provider_abi() {
  return abi::kAbiVersion;
}

__attribute__((visibility("default"))) const char* vllm_mem_torch_built_version() {
  return kBuiltVersionTagged + std::strlen(abi::kBuiltTorchVersionTag);
}

__attribute__((visibility("default"))) const char* vllm_mem_torch_built_lib_dir() {
  return VLLM_MEM_TORCH_BUILT_LIB_DIR;
}

__attribute__((visibility("default"))) int vllm_mem_torch_stats(int device, int64_t* values,
                                                                int num_values, char* msg,
                                                                int msg_len) {
  return Guarded(msg, msg_len, [&] {
    if (num_values != abi::kNumValues) {
      return Fail(AllocatorStatus::kError, "stat array size mismatch", msg, msg_len);
    }
    c10::DeviceAllocator* allocator = nullptr;
    const char* why = "";
    const AllocatorStatus status = FindAllocator(&allocator, &why);
    if (status != AllocatorStatus::kAvailable) return Fail(status, why, msg, msg_len);
    const auto stats = allocator->getDeviceStats(static_cast<c10::DeviceIndex>(device));
    const c10::CachingDeviceAllocator::StatArray* arrays[abi::kNumStatArrays] = {
        &stats.allocation,     &stats.segment,      &stats.active,
        &stats.inactive_split, &stats.allocated_bytes, &stats.reserved_bytes,
        &stats.active_bytes,   &stats.inactive_split_bytes, &stats.requested_bytes};
    for (int a = 0; a < abi::kNumStatArrays; ++a) {
      for (int p = 0; p < abi::kNumPools; ++p) PutStat(values, abi::StatIndex(a, p, 0), (*arrays[a])[p]);
    }
    PutStat(values, abi::SingleStatIndex(0, 0), stats.oversize_allocations);
    PutStat(values, abi::SingleStatIndex(1, 0), stats.oversize_segments);
    values[abi::CounterIndex(0)] = stats.num_alloc_retries;
    values[abi::CounterIndex(1)] = stats.num_ooms;
    values[abi::CounterIndex(2)] = stats.num_sync_all_streams;
    values[abi::CounterIndex(3)] = stats.num_device_alloc;
    values[abi::CounterIndex(4)] = stats.num_device_free;
    values[abi::CounterIndex(5)] = stats.max_split_size;
    return static_cast<int>(AllocatorStatus::kAvailable);
  });
}

__attribute__((visibility("default"))) int vllm_mem_torch_reset_peak(int device, char* msg,
                                                                     int msg_len) {
  return Guarded(msg, msg_len, [&] {
    c10::DeviceAllocator* allocator = nullptr;
    const char* why = "";
    const AllocatorStatus status = FindAllocator(&allocator, &why);
    if (status != AllocatorStatus::kAvailable) return Fail(status, why, msg, msg_len);
    allocator->resetPeakStats(static_cast<c10::DeviceIndex>(device));
    return static_cast<int>(AllocatorStatus::kAvailable);
  });
}

__attribute__((visibility("default"))) int vllm_mem_torch_empty_cache(char* msg, int msg_len) {
  return Guarded(msg, msg_len, [&] {
    c10::DeviceAllocator* allocator = nullptr;
    const char* why = "";
    const AllocatorStatus status = FindAllocator(&allocator, &why);
    if (status != AllocatorStatus::kAvailable) return Fail(status, why, msg, msg_len);
    allocator->emptyCache();
    return static_cast<int>(AllocatorStatus::kAvailable);
  });
}

}  // extern "C"
