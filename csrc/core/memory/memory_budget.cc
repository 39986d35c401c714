/*!
 * \file core/memory/memory_budget.cc
 * \brief gpu_memory_utilization arithmetic.
 */
#include "vllm_mem/memory/memory_budget.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {

void ValidateUtilization(double utilization, const char* field) {
  if (!(utilization > 0.0 && utilization <= 1.0)) {  // also false for NaN
    throw InvalidArgument(field, "must be in (0, 1], a fraction of the device's total memory; got " +
                                     FormatRounded(utilization, 6));
  }
}

int64_t RequestedMemoryBytes(int64_t total_memory_bytes, double utilization) {
  ValidateUtilization(utilization);
  RequireNonNegative(total_memory_bytes, "total_memory_bytes");
  // Bounded first: ceil(double(2^63 - 1) * 1.0) is 2^63, which no int64 holds (fuzzing found
  // the conversion's undefined behaviour here).
  RequireAtMost(total_memory_bytes, kMaxDeviceBytes, "total_memory_bytes",
                "1 PiB, vllm_mem/base/limits.h: no GPU is near it");
  // Python: math.ceil(int * float) multiplies in double precision, then rounds up.
  return CheckedDoubleToInt64(std::ceil(static_cast<double>(total_memory_bytes) * utilization),
                              "requested_memory_bytes");
}

int64_t LargestUtilizationFittingPpm(int64_t total_memory_bytes, int64_t free_memory_bytes, int64_t step_ppm) {
  constexpr int64_t kPpm = 1'000'000;
  RequirePositive(step_ppm, "step_ppm");
  if (free_memory_bytes <= 0 || total_memory_bytes <= 0) return 0;
  // Start from the exact ratio, rounded down to a step, and step down while ceil() overshoots.
  const __int128 ratio_ppm = static_cast<__int128>(free_memory_bytes) * kPpm / total_memory_bytes;
  int64_t u = std::min<int64_t>(static_cast<int64_t>(std::min<__int128>(ratio_ppm, kPpm)), kPpm);
  u -= u % step_ppm;
  while (u > 0 &&
         RequestedMemoryBytes(total_memory_bytes, static_cast<double>(u) / static_cast<double>(kPpm)) >
             free_memory_bytes) {
    u -= step_ppm;
  }
  return u;
}

int64_t UtilizationToPpm(double utilization) {
  // NaN, infinities and huge values have no ppm (llround of them is unspecified); sums of
  // utilizations above 1.0 are fine.
  if (!(std::fabs(utilization) <= 1e6)) {
    throw InvalidArgument("gpu_memory_utilization", "must be a finite fraction, got " + FormatRounded(utilization, 6));
  }
  return static_cast<int64_t>(std::llround(utilization * 1'000'000.0));
}

}  // namespace vllm_mem
