/*!
 * \file tests/cpp/test_memory_profiling.cc
 * \brief memory_profiling()'s accounting on hand-made snapshots: vLLM's docstring example,
 *        later vLLM's total_consumed / transient_peak_headroom, the sampler's peaks, the repr
 *        text, DeviceMemoryProfiler's reading and the UMA pressure release.
 */
#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/memory/memory_profiling.h"
#include "vllm_mem/base/units.h"
#include "fake_device_reader.h"

namespace vllm_mem {
namespace {

using testing::FakeReader;

MemorySnapshotRecord Snap(int64_t torch_peak, int64_t free, int64_t torch_reserved,
                          int64_t torch_allocated, double t, int64_t total = 80 * kGiB) {
  MemorySnapshotRecord s;
  s.torch_peak = torch_peak;
  s.free_memory = free;
  s.total_memory = total;
  s.cuda_memory = total - free;
  s.torch_memory = torch_reserved;
  s.non_torch_memory = s.cuda_memory - torch_reserved;
  s.torch_allocated = torch_allocated;
  s.timestamp = t;
  return s;
}

// vLLM's docstring: others 1 GiB; weights 2 GiB + NCCL 0.5 GiB before profiling; peak
// activations 2 GiB; non-torch 1 GiB after. Non-KV = 2 + 2 + 1 = 5 GiB.
TEST(MemoryProfiling, VllmDocstringExample) {
  const int64_t total = 80 * kGiB;
  const auto before_create = Snap(0, total - 1 * kGiB, 0, 0, 100.0);
  const auto before_profile = Snap(2 * kGiB, total - 1 * kGiB - 2 * kGiB - kGiB / 2, 2 * kGiB,
                                   2 * kGiB, 101.0);
  // After: torch holds 3 GiB reserved (activations cached then emptied down to 3 GiB),
  // peak allocated 4 GiB; non-torch 1 GiB.
  const auto after_profile = Snap(4 * kGiB, total - 1 * kGiB - 3 * kGiB - 1 * kGiB, 3 * kGiB,
                                  2 * kGiB, 103.5);
  const MemoryProfilingFigures f =
      ComputeMemoryProfiling(before_create, before_profile, after_profile, 2 * kGiB, nullptr);
  EXPECT_EQ(f.torch_peak_increase, 2 * kGiB);
  EXPECT_EQ(f.non_torch_increase, 1 * kGiB);  // from before_create, not before_profile
  EXPECT_EQ(f.non_kv_cache_memory, 5 * kGiB);
  EXPECT_DOUBLE_EQ(f.profile_time, 2.5);
  EXPECT_EQ(f.total_consumed, 4 * kGiB);
  EXPECT_EQ(f.transient_peak_headroom, 2 * kGiB);
  // No sampler: the peaks are those of the two measured instants.
  EXPECT_EQ(f.non_torch_peak_increase, 1 * kGiB);
  EXPECT_EQ(f.peak_cuda_memory, 5 * kGiB);
}

TEST(MemoryProfiling, SamplerPeakRaisesNonTorchPeakOnly) {
  const auto before_create = Snap(0, 79 * kGiB, 0, 0, 0.0);
  const auto before_profile = Snap(0, 79 * kGiB, 0, 0, 1.0);
  const auto after_profile = Snap(0, 79 * kGiB, 0, 0, 2.0);
  SamplerPeaks peaks;
  peaks.num_samples = 10;
  peaks.peak_non_torch_memory = 1 * kGiB + 3 * kGiB;  // a 3 GiB workspace came and went
  peaks.peak_cuda_memory = 4 * kGiB;
  const auto f = ComputeMemoryProfiling(before_create, before_profile, after_profile, 0, &peaks);
  EXPECT_EQ(f.non_torch_increase, 0);       // vLLM's two readings see nothing
  EXPECT_EQ(f.non_kv_cache_memory, 0);      // and vLLM's figure stays vLLM's
  EXPECT_EQ(f.non_torch_peak_increase, 3 * kGiB);
  EXPECT_EQ(f.peak_cuda_memory, 4 * kGiB);
}

TEST(MemoryProfiling, EmptySamplerIsIgnored) {
  const auto s = Snap(0, 79 * kGiB, 0, 0, 0.0);
  SamplerPeaks peaks;  // num_samples == 0: its zeros are not readings
  peaks.peak_non_torch_memory = 50 * kGiB;
  const auto f = ComputeMemoryProfiling(s, s, s, 0, &peaks);
  EXPECT_EQ(f.non_torch_peak_increase, 0);
}

TEST(MemoryProfiling, RejectsNegativeWeightsAndMixedDevices) {
  auto a = Snap(0, 79 * kGiB, 0, 0, 0.0);
  EXPECT_THROW(ComputeMemoryProfiling(a, a, a, -1, nullptr), InvalidArgument);
  auto b = a;
  b.device = 1;
  EXPECT_THROW(ComputeMemoryProfiling(b, a, a, 0, nullptr), InvalidArgument);
}

TEST(MemoryProfiling, ReprIsVllmText) {
  MemoryProfilingFigures f;
  f.profile_time = 2.345;
  f.non_kv_cache_memory = 3 * kGiB / 2;
  f.torch_peak_increase = kGiB;
  f.non_torch_increase = kGiB / 4;
  f.weights_memory = kGiB / 2;
  EXPECT_EQ(MemoryProfilingRepr(f),
            "Memory profiling takes 2.35 seconds. Total non KV cache memory: 1.5GiB; torch peak "
            "memory increase: 1.0GiB; non-torch forward increase memory: 0.25GiB; weights "
            "memory: 0.5GiB.");
}

// vLLM's test_memory_profiling scenario (tests/utils_/test_mem_utils.py): 512 MiB of another
// process before the baseline, 512 MiB of torch weights, a 1 GiB torch spike freed in the
// block, 256 MiB of non-torch memory (NCCL) kept; weights_memory given as 0. The older formula
// counts 256 + 1024 + 0 = 1280 MiB; the later one 768 (free-memory drop: weights + NCCL) +
// 1024 (peak above what stays allocated) = 1792 MiB, and prints "total consumed".
TEST(MemoryProfiling, BothFormulasOnVllmScenario) {
  const int64_t total = 80 * kGiB, mib = kMiB;
  const auto before_create = Snap(0, total - 512 * mib, 0, 0, 10.0);
  const auto before_profile = Snap(512 * mib, total - 1024 * mib, 512 * mib, 512 * mib, 11.0);
  const auto after_profile =
      Snap(1536 * mib, total - 1024 * mib - 256 * mib, 512 * mib, 512 * mib, 12.0);
  const auto old_f = ComputeMemoryProfiling(before_create, before_profile, after_profile, 0,
                                            nullptr, NonKvFormula::kComponents);
  const auto new_f = ComputeMemoryProfiling(before_create, before_profile, after_profile, 0,
                                            nullptr, NonKvFormula::kTotalConsumed);
  EXPECT_EQ(old_f.non_kv_cache_memory, 1280 * mib);
  EXPECT_EQ(new_f.non_kv_cache_memory, 1792 * mib);
  EXPECT_EQ(new_f.total_consumed, 768 * mib);
  EXPECT_EQ(new_f.transient_peak_headroom, 1024 * mib);
  for (const auto* f : {&old_f, &new_f}) {  // both values are kept, whichever is chosen
    EXPECT_EQ(f->non_kv_cache_memory_components, 1280 * mib);
    EXPECT_EQ(f->non_kv_cache_memory_total_consumed, 1792 * mib);
  }
  EXPECT_EQ(MemoryProfilingRepr(old_f),
            "Memory profiling takes 1.00 seconds. Total non KV cache memory: 1.25GiB; torch peak "
            "memory increase: 1.0GiB; non-torch forward increase memory: 0.25GiB; weights "
            "memory: 0.0GiB.");
  EXPECT_EQ(MemoryProfilingRepr(new_f),
            "Memory profiling takes 1.00 seconds. Total non KV cache memory: 1.75GiB; torch peak "
            "memory increase: 1.0GiB; total consumed (from mem_get_info): 0.75GiB; weights "
            "memory: 0.0GiB.");
  EXPECT_EQ(ParseNonKvFormula(NonKvFormulaName(NonKvFormula::kTotalConsumed)), NonKvFormula::kTotalConsumed);
  EXPECT_THROW(ParseNonKvFormula("newest"), InvalidArgument);
}

TEST(DeviceMemoryProfiler, ReadsAllocatedAfterEmptyAndReset) {
  FakeReader r;
  r.torch = {AllocatorStatus::kAvailable, "", 7 * kGiB, 9 * kGiB, 8 * kGiB, 9 * kGiB};
  EXPECT_EQ(CurrentTorchMemoryUsage(r, 0), 7 * kGiB);
  EXPECT_EQ(r.empty_cache_calls, 1);
  EXPECT_EQ(r.reset_peak_calls, 1);
}

TEST(ReleaseUnderPressure, OnlyIntegratedWithEnoughCacheAndPressure) {
  FakeReader r;
  r.torch = {AllocatorStatus::kAvailable, "", 1 * kGiB, 1 * kGiB, 2 * kGiB, 2 * kGiB};
  r.host = {100 * kGiB, 10 * kGiB};  // 90% used
  EXPECT_EQ(ReleaseDeviceMemoryUnderPressure(r, 0), 0);  // discrete
  r.integrated = true;
  EXPECT_EQ(ReleaseDeviceMemoryUnderPressure(r, 0), 1 * kGiB);
  EXPECT_EQ(r.synchronize_calls, 1);
  EXPECT_EQ(r.empty_cache_calls, 1);
  r.host = {100 * kGiB, 30 * kGiB};  // 70% used: no pressure
  EXPECT_EQ(ReleaseDeviceMemoryUnderPressure(r, 0), 0);
  r.host = {100 * kGiB, 10 * kGiB};
  r.torch.reserved_bytes = r.torch.allocated_bytes + kUmaMinReleaseBytes - 1;  // too little
  EXPECT_EQ(ReleaseDeviceMemoryUnderPressure(r, 0), 0);
  r.torch.reserved_bytes = r.torch.allocated_bytes + kUmaMinReleaseBytes;  // exactly enough
  EXPECT_EQ(ReleaseDeviceMemoryUnderPressure(r, 0), kUmaMinReleaseBytes);
  r.torch.status = AllocatorStatus::kNoTorch;
  EXPECT_EQ(ReleaseDeviceMemoryUnderPressure(r, 0), 0);
}

}  // namespace
}  // namespace vllm_mem
