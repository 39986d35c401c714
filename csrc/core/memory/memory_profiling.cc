/*!
 * \file core/memory/memory_profiling.cc
 * \brief vLLM's profiling arithmetic plus the sampler's peaks.
 */
#include "vllm_mem/memory/memory_profiling.h"

#include <algorithm>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {

const char* NonKvFormulaName(NonKvFormula formula) {
  switch (formula) {
    case NonKvFormula::kComponents: return "components";
    case NonKvFormula::kTotalConsumed: return "total_consumed";
  }
  return "unknown";
}

NonKvFormula ParseNonKvFormula(const std::string& name) {
  if (name == "components") return NonKvFormula::kComponents;
  if (name == "total_consumed") return NonKvFormula::kTotalConsumed;
  throw InvalidArgument("non_kv_formula", "expected 'components' or 'total_consumed', got " + EchoValue(name));
}

MemoryProfilingFigures ComputeMemoryProfiling(const MemorySnapshotRecord& before_create,
                                              const MemorySnapshotRecord& before_profile,
                                              const MemorySnapshotRecord& after_profile,
                                              int64_t weights_memory,
                                              const SamplerPeaks* peaks,
                                              NonKvFormula formula) {
  RequireNonNegative(weights_memory, "weights_memory");
  const MemorySnapshotRecord diff_profile = SubtractSnapshots(after_profile, before_profile);
  const MemorySnapshotRecord diff_from_create = SubtractSnapshots(after_profile, before_create);

  MemoryProfilingFigures out;
  out.weights_memory = weights_memory;
  out.torch_peak_increase = diff_profile.torch_peak;
  // From the init snapshot, not from before_profile: NCCL and the CUDA context created after
  // the baseline count as this instance's non-torch memory.
  out.non_torch_increase = diff_from_create.non_torch_memory;
  out.profile_time = diff_profile.timestamp;
  out.non_kv_cache_memory_components =
      CheckedAdd(CheckedAdd(out.non_torch_increase, out.torch_peak_increase, "non_kv_cache_memory"),
                 out.weights_memory, "non_kv_cache_memory");

  out.total_consumed = CheckedSub(before_create.free_memory, after_profile.free_memory,
                                  "total_consumed");
  out.transient_peak_headroom = CheckedSub(after_profile.torch_peak, after_profile.torch_allocated,
                                           "transient_peak_headroom");
  // The later formula: what the instance took from the device (weights, persistent torch and
  // non-torch memory alike) plus the torch peak above what stays allocated. It does not trust
  // weights_memory or torch's reserved figure, so it differs under sleep mode (cumem), with an
  // inexact weights_memory, or when other processes change memory in between.
  out.non_kv_cache_memory_total_consumed =
      CheckedAdd(out.total_consumed, out.transient_peak_headroom, "non_kv_cache_memory");
  out.formula = formula;
  out.non_kv_cache_memory = formula == NonKvFormula::kTotalConsumed ? out.non_kv_cache_memory_total_consumed
                                                                    : out.non_kv_cache_memory_components;

  // The two instants vLLM measures are samples too; the sampler adds everything in between.
  int64_t peak_non_torch = std::max(before_profile.non_torch_memory, after_profile.non_torch_memory);
  int64_t peak_cuda = std::max(before_profile.cuda_memory, after_profile.cuda_memory);
  if (peaks != nullptr && peaks->num_samples > 0) {
    peak_non_torch = std::max(peak_non_torch, peaks->peak_non_torch_memory);
    peak_cuda = std::max(peak_cuda, peaks->peak_cuda_memory);
  }
  out.non_torch_peak_increase =
      CheckedSub(peak_non_torch, before_create.non_torch_memory, "non_torch_peak_increase");
  out.peak_cuda_memory = peak_cuda;
  return out;
}

std::string MemoryProfilingRepr(const MemoryProfilingFigures& f) {
  // The third term is what the release's formula adds besides the torch peak.
  const std::string third =
      f.formula == NonKvFormula::kTotalConsumed
          ? "GiB; total consumed (from mem_get_info): " + FormatGib(f.total_consumed)
          : "GiB; non-torch forward increase memory: " + FormatGib(f.non_torch_increase);
  return "Memory profiling takes " + FormatFixed(f.profile_time, 2) +
         " seconds. Total non KV cache memory: " + FormatGib(f.non_kv_cache_memory) +
         "GiB; torch peak memory increase: " + FormatGib(f.torch_peak_increase) + third +
         "GiB; weights memory: " + FormatGib(f.weights_memory) + "GiB.";
}

int64_t CurrentTorchMemoryUsage(DeviceReader& reader, int device) {
  reader.CheckDevice(device);
  reader.EmptyCache();
  reader.ResetPeak(device);
  // After the reset the peak equals what is allocated now; vLLM reads max_memory_allocated.
  return reader.TorchStats(device).allocated_peak_bytes;
}

int64_t ReleaseDeviceMemoryUnderPressure(DeviceReader& reader, int device) {
  reader.CheckDevice(device);
  if (!reader.IsIntegrated(device)) return 0;
  const AllocatorStats stats = reader.TorchStats(device);
  if (!stats.available()) return 0;
  const int64_t releasable =
      CheckedSub(stats.reserved_bytes, stats.allocated_bytes, "releasable bytes");
  if (releasable < kUmaMinReleaseBytes) return 0;
  // cudaMemGetInfo under-reports free memory on UMA, so the pressure is read from the host.
  const HostMemory host = reader.HostMemoryInfo();
  if (static_cast<double>(host.available_bytes) >
      (1.0 - kUmaPressureThreshold) * static_cast<double>(host.total_bytes)) {
    return 0;
  }
  reader.Synchronize(device);
  reader.EmptyCache();
  return releasable;
}

}  // namespace vllm_mem
