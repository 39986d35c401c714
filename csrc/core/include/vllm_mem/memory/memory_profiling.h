/*!
 * \file vllm_mem/memory/memory_profiling.h
 * \brief vLLM's memory_profiling() accounting (MemoryProfilingResult) from three snapshots and,
 *        optionally, the peaks a MemorySampler saw in between; DeviceMemoryProfiler's reading;
 *        release_device_memory_under_pressure's decision on integrated GPUs.
 */
#ifndef VLLM_MEM_MEMORY_MEMORY_PROFILING_H_
#define VLLM_MEM_MEMORY_MEMORY_PROFILING_H_

#include <cstdint>
#include <string>

#include "vllm_mem/memory/device_reader.h"
#include "vllm_mem/memory/memory_sampler.h"
#include "vllm_mem/memory/memory_snapshot.h"

namespace vllm_mem {

/*! \brief How a vLLM release forms non_kv_cache_memory. Which release uses which is data: the
 *  rule "non_kv_cache_memory" of plan/vllm_versions.json (docs/vllm_versions.md). */
enum class NonKvFormula : int {
  //! weights_memory + torch_peak_increase + non_torch_increase (the older releases)
  kComponents = 0,
  //! total_consumed + transient_peak_headroom (vLLM commit 58b2012aa2, PR #49208): the free-memory
  //! drop since the baseline covers weights, persistent torch and non-torch memory at once
  kTotalConsumed = 1,
};
/*! \brief "components" / "total_consumed" (the rule's values in vllm_versions.json). */
const char* NonKvFormulaName(NonKvFormula formula);
/*! \brief NonKvFormulaName's inverse; InvalidArgument (field "non_kv_formula") otherwise. */
NonKvFormula ParseNonKvFormula(const std::string& name);

/*! \brief MemoryProfilingResult's numbers, in bytes (profile_time in seconds). */
struct MemoryProfilingFigures {
  // The formula's value: non_kv_cache_memory_components or non_kv_cache_memory_total_consumed.
  int64_t non_kv_cache_memory = 0;
  int64_t torch_peak_increase = 0;   //!< after_profile.torch_peak - before_profile.torch_peak
  int64_t non_torch_increase = 0;    //!< after_profile.non_torch - before_create.non_torch
  int64_t weights_memory = 0;
  double profile_time = 0.0;         //!< after_profile.timestamp - before_profile.timestamp
  // Later vLLM (0.28): what the instance took from the device, and the torch peak above what
  // is still allocated.
  int64_t total_consumed = 0;            //!< before_create.free - after_profile.free
  int64_t transient_peak_headroom = 0;   //!< after_profile.torch_peak - torch_allocated
  // Ours: the sampler's view. Without a sampler these fall back to the two measured instants.
  int64_t non_torch_peak_increase = 0;   //!< max sampled non_torch - before_create.non_torch
  int64_t peak_cuda_memory = 0;          //!< max sampled total - free
  // Both formulas' values, whichever the release uses, and which one non_kv_cache_memory is.
  NonKvFormula formula = NonKvFormula::kComponents;
  int64_t non_kv_cache_memory_components = 0;      //!< non_torch + torch_peak + weights
  int64_t non_kv_cache_memory_total_consumed = 0;  //!< total_consumed + transient_peak_headroom
};

/*! \brief The accounting of memory_profiling(). \p peaks is null when no sampler ran; \p formula
 *  picks which value non_kv_cache_memory takes (both are always computed).
 *  InvalidArgument when weights_memory < 0 or the snapshots are of different devices. */
MemoryProfilingFigures ComputeMemoryProfiling(const MemorySnapshotRecord& before_create,
                                              const MemorySnapshotRecord& before_profile,
                                              const MemorySnapshotRecord& after_profile,
                                              int64_t weights_memory,
                                              const SamplerPeaks* peaks,
                                              NonKvFormula formula = NonKvFormula::kComponents);

/*! \brief MemoryProfilingResult.__repr__, byte for byte as the release of figures.formula prints
 *  it: "non-torch forward increase memory" (components) or "total consumed (from mem_get_info)". */
std::string MemoryProfilingRepr(const MemoryProfilingFigures& figures);

/*! \brief DeviceMemoryProfiler.current_memory_usage() on CUDA (vLLM's CudaPlatform): empty the
 *  cache, reset the peak, read allocated_bytes.all.peak, i.e. the torch bytes allocated now. */
int64_t CurrentTorchMemoryUsage(DeviceReader& reader, int device);

/*! vLLM's _UMA_PRESSURE_THRESHOLD: act when more than 80% of host RAM is in use. */
inline constexpr double kUmaPressureThreshold = 0.8;
/*! vLLM's _UMA_MIN_RELEASE_BYTES: not worth a synchronize below 512 MiB of cached memory. */
inline constexpr int64_t kUmaMinReleaseBytes = int64_t{512} << 20;

/*! \brief release_device_memory_under_pressure: on an integrated GPU whose allocator caches at
 *  least 512 MiB unused while host RAM is more than 80% used, synchronize and empty the cache.
 *  Returns the bytes released (reserved - allocated before), 0 when it did nothing. */
int64_t ReleaseDeviceMemoryUnderPressure(DeviceReader& reader, int device);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MEMORY_MEMORY_PROFILING_H_
