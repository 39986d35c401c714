/*!
 * \file device/torch_provider_abi.h
 * \brief The plain C interface between _C and the optional torch provider (_torch_provider.so,
 *        built from csrc/torch). _C never links torch: it dlopens the provider only once torch
 *        is loaded in the process, and calls it through these symbols. Statistics travel as a
 *        flat int64 array whose order is fixed here, so no torch type crosses the boundary.
 */
#ifndef VLLM_MEM_DEVICE_TORCH_PROVIDER_ABI_H_
#define VLLM_MEM_DEVICE_TORCH_PROVIDER_ABI_H_

#include <cstdint>

namespace vllm_mem::torch_abi {

/*! Bumped whenever a signature or the stat order changes; _C refuses other versions. */
inline constexpr int kAbiVersion = 2;

/*! The StatArray members of c10's DeviceStats, in this order, each with 3 pools x 4 fields. */
inline constexpr const char* kStatArrays[] = {
    "allocation", "segment", "active", "inactive_split", "allocated_bytes",
    "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes"};
inline constexpr int kNumStatArrays = 9;
inline constexpr const char* kPools[] = {"all", "small_pool", "large_pool"};
inline constexpr int kNumPools = 3;
inline constexpr const char* kFields[] = {"current", "peak", "allocated", "freed"};
inline constexpr int kNumFields = 4;
/*! Then two single Stats (4 fields each), then plain counters. */
inline constexpr const char* kStats[] = {"oversize_allocations", "oversize_segments"};
inline constexpr int kNumStats = 2;
inline constexpr const char* kCounters[] = {"num_alloc_retries", "num_ooms", "num_sync_all_streams",
                                            "num_device_alloc", "num_device_free",
                                            "max_split_size"};
inline constexpr int kNumCounters = 6;

inline constexpr int kNumValues =
    kNumStatArrays * kNumPools * kNumFields + kNumStats * kNumFields + kNumCounters;

/*! Index of StatArray \p array, pool \p pool, field \p field in the flat array. */
constexpr int StatIndex(int array, int pool, int field) {
  return (array * kNumPools + pool) * kNumFields + field;
}
constexpr int SingleStatIndex(int stat, int field) {
  return kNumStatArrays * kNumPools * kNumFields + stat * kNumFields + field;
}
constexpr int CounterIndex(int counter) {
  return kNumStatArrays * kNumPools * kNumFields + kNumStats * kNumFields + counter;
}
inline constexpr int kAllocatedBytes = 4;  // index into kStatArrays
inline constexpr int kReservedBytes = 5;

/*! Provider status codes: the values of vllm_mem::AllocatorStatus. */

// Symbol names and signatures exported by the provider (extern "C"). Each returns an
// AllocatorStatus code and, when not available, writes a NUL-terminated reason into msg.
inline constexpr const char* kAbiVersionSymbol = "vllm_mem_torch_provider_abi";
using AbiVersionFn = int (*)();
inline constexpr const char* kStatsSymbol = "vllm_mem_torch_stats";
using StatsFn = int (*)(int device, int64_t* values, int num_values, char* msg, int msg_len);
inline constexpr const char* kResetPeakSymbol = "vllm_mem_torch_reset_peak";
using ResetPeakFn = int (*)(int device, char* msg, int msg_len);
inline constexpr const char* kEmptyCacheSymbol = "vllm_mem_torch_empty_cache";
using EmptyCacheFn = int (*)(char* msg, int msg_len);
/*! The torch the provider was compiled against: its version ("2.11.0+cu130") and its libc10's
 *  directory. c10's DeviceStats layout is only promised within one release, so _C refuses a
 *  provider whose torch is not the one loaded in the process (see torch_allocator.cc). */
inline constexpr const char* kBuiltTorchVersionSymbol = "vllm_mem_torch_built_version";
inline constexpr const char* kBuiltTorchLibDirSymbol = "vllm_mem_torch_built_lib_dir";
using BuiltStringFn = const char* (*)();
/*! The provider embeds its version behind this tag, so tests can patch a copy of the provider
 *  to claim another torch and check the refusal on a CPU machine. */
inline constexpr const char* kBuiltTorchVersionTag = "vllm_mem_built_against_torch=";

}  // namespace vllm_mem::torch_abi

#endif  // VLLM_MEM_DEVICE_TORCH_PROVIDER_ABI_H_
