/*!
 * \file core/plan/startup_budget.cc
 * \brief vLLM's worker start-up arithmetic and its log / error texts.
 */
#include "vllm_mem/plan/startup_budget.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {

std::string PythonFloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits (what Python's repr uses), then Python's layout rule: fixed
  // notation for decimal exponents in [-4, 16), scientific otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (!sci.empty() && sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t epos = sci.find('e');
  std::string mantissa = sci.substr(0, epos);
  int exponent = std::atoi(sci.c_str() + epos + 1);
  std::string digits;
  for (char ch : mantissa) {
    if (ch != '.') digits.push_back(ch);
  }
  // Built by appending: GCC 12 at -O3 raises a false -Wrestrict on chained operator+ here.
  std::string out = sign;
  if (exponent < -4 || exponent >= 16) {
    out.append(digits, 0, 1);
    if (digits.size() > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out.append(exp_buf);
    return out;
  }
  if (exponent < 0) {
    out.append("0.");
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out.append(digits);
    return out;
  }
  const size_t int_len = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_len) {
    out.append(digits);
    out.append(int_len - digits.size(), '0');
    out.append(".0");
    return out;
  }
  out.append(digits, 0, int_len);
  out.push_back('.');
  out.append(digits, int_len, std::string::npos);
  return out;
}

RequestedMemory CheckRequestMemory(int64_t total_memory_bytes, int64_t free_memory_bytes,
                                   double gpu_memory_utilization, const std::string& device) {
  RequireNonNegative(free_memory_bytes, "free_memory_bytes");
  RequestedMemory out;
  out.requested_bytes = RequestedMemoryBytes(total_memory_bytes, gpu_memory_utilization);
  out.fits = free_memory_bytes >= out.requested_bytes;
  if (!out.fits) {
    // vLLM's f-string in vllm/v1/worker/utils.py request_memory, verbatim.
    out.error_message = "Free memory on device " + device + " (" + FormatGib(free_memory_bytes) + "/" +
                        FormatGib(total_memory_bytes) +
                        " GiB) on startup is less than desired GPU memory utilization (" +
                        PythonFloatRepr(gpu_memory_utilization) + ", " + FormatGib(out.requested_bytes) +
                        " GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.";
    out.largest_fitting_utilization_ppm = LargestUtilizationFittingPpm(total_memory_bytes, free_memory_bytes, 1000);
  }
  return out;
}

int64_t RequestMemory(int64_t total_memory_bytes, int64_t free_memory_bytes, double gpu_memory_utilization,
                      const std::string& device) {
  RequestedMemory r = CheckRequestMemory(total_memory_bytes, free_memory_bytes, gpu_memory_utilization, device);
  if (!r.fits) throw InsufficientMemory(r.error_message);
  return r.requested_bytes;
}

std::string CudagraphProfilingLine(int64_t cudagraph_estimate_bytes, int64_t total_memory_bytes,
                                   double gpu_memory_utilization, bool estimate_cudagraphs) {
  if (cudagraph_estimate_bytes <= 0 || total_memory_bytes <= 0) return "";
  const double delta = static_cast<double>(cudagraph_estimate_bytes) / static_cast<double>(total_memory_bytes);
  const double util = gpu_memory_utilization;
  // Python: round(x, 4) then "%.4f"; both round the exact binary value, so one "%.4f" does.
  const std::string current = FormatFixed(util, 4);
  const std::string higher_raw = FormatFixed(util + delta, 4);
  const std::string higher = std::strtod(higher_raw.c_str(), nullptr) > 1.0 ? FormatFixed(1.0, 4) : higher_raw;
  if (estimate_cudagraphs) {
    return "CUDA graph memory profiling is enabled (default since v0.21.0). The current "
           "--gpu-memory-utilization=" + current + " is equivalent to --gpu-memory-utilization=" +
           FormatFixed(util - delta, 4) +
           " without CUDA graph memory profiling. To maintain the same effective KV cache size as "
           "before, increase --gpu-memory-utilization to " + higher +
           ". To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.";
  }
  return "CUDA graph memory profiling is disabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). Without it, "
         "CUDA graph memory is not accounted for during KV cache allocation, which may require lowering "
         "--gpu-memory-utilization to avoid OOM. Consider re-enabling it (the default as of v0.21.0) and "
         "increasing --gpu-memory-utilization from " + current + " to " + higher + ".";
}

AvailableKvMemory AvailableKvCacheFigures(int64_t requested_bytes, const ProfileMeasurements& profile,
                                          const AvailableKvOptions& options) {
  RequireNonNegative(requested_bytes, "requested_bytes");
  RequireNonNegative(profile.weights_bytes, "weights_bytes");
  RequireNonNegative(profile.torch_peak_increase_bytes, "torch_peak_increase_bytes");
  RequireNonNegative(profile.cudagraph_estimate_bytes, "cudagraph_estimate_bytes");
  RequireNonNegative(options.kv_cache_memory_bytes, "kv_cache_memory_bytes");
  // non_torch_increase may be negative in vLLM (a co-tenant freed memory): not validated.
  AvailableKvMemory out;
  out.requested_bytes = requested_bytes;
  if (options.kv_cache_memory_bytes > 0) {
    // vLLM still runs profile_run() but subtracts nothing and takes no graph estimate.
    out.from_kv_cache_memory_bytes = true;
    out.available_kv_cache_bytes = options.kv_cache_memory_bytes;
    return out;
  }
  int64_t non_kv = 0;
  if (profile.non_kv_cache_bytes) {
    non_kv = *profile.non_kv_cache_bytes;
  } else {
    non_kv = CheckedAdd(profile.weights_bytes, profile.torch_peak_increase_bytes, "non_kv_cache_memory");
    non_kv = CheckedAdd(non_kv, profile.non_torch_increase_bytes, "non_kv_cache_memory");
  }
  out.non_kv_cache_bytes = non_kv;
  out.cudagraph_applied_bytes = options.estimate_cudagraphs ? profile.cudagraph_estimate_bytes : 0;
  out.available_kv_cache_bytes =
      CheckedSub(CheckedSub(requested_bytes, non_kv, "available_kv_cache_memory"), out.cudagraph_applied_bytes,
                 "available_kv_cache_memory");
  return out;
}

AvailableKvMemory DetermineAvailableKvCacheMemory(int64_t requested_bytes, const ProfileMeasurements& profile,
                                                  const AvailableKvOptions& options) {
  AvailableKvMemory out = AvailableKvCacheFigures(requested_bytes, profile, options);
  if (out.from_kv_cache_memory_bytes) {
    out.kv_cache_memory_bytes_line =
        "Initial free memory " + FormatGib(options.init_free_memory_bytes) + " GiB, reserved " +
        FormatGib(options.kv_cache_memory_bytes) +
        " GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. "
        "This does not respect the gpu_memory_utilization config. Only use kv_cache_memory_bytes config when "
        "you want manual control of KV cache memory size. If OOM'ed, check the difference of initial free "
        "memory between the current run and the previous run where kv_cache_memory_bytes is suggested and "
        "update it correspondingly.";
    return out;
  }
  out.available_line = "Available KV cache memory: " + FormatGib(out.available_kv_cache_bytes) + " GiB";
  out.cudagraph_line = CudagraphProfilingLine(profile.cudagraph_estimate_bytes, options.total_memory_bytes,
                                              options.gpu_memory_utilization, options.estimate_cudagraphs);
  return out;
}

KvCacheMemorySuggestion KvCacheMemorySuggestionFigures(int64_t init_free_memory_bytes, int64_t requested_bytes,
                                                       int64_t weights_bytes, int64_t peak_activation_bytes,
                                                       int64_t non_torch_bytes, int64_t cudagraph_bytes) {
  int64_t non_kv = CheckedAdd(weights_bytes, peak_activation_bytes, "non_kv_cache_memory");
  non_kv = CheckedAdd(non_kv, non_torch_bytes, "non_kv_cache_memory");
  non_kv = CheckedAdd(non_kv, cudagraph_bytes, "non_kv_cache_memory");
  KvCacheMemorySuggestion out;
  out.to_gpu_limit_bytes = CheckedSub(CheckedSub(init_free_memory_bytes, non_kv, "kv_cache_memory_bytes"),
                                      kKvSuggestionBufferBytes, "kv_cache_memory_bytes");
  out.to_requested_limit_bytes = CheckedSub(CheckedSub(requested_bytes, non_kv, "kv_cache_memory_bytes"),
                                            kKvSuggestionBufferBytes, "kv_cache_memory_bytes");
  return out;
}

KvCacheMemorySuggestion SuggestKvCacheMemoryBytes(int64_t init_free_memory_bytes, int64_t total_memory_bytes,
                                                  double gpu_memory_utilization, int64_t requested_bytes,
                                                  int64_t weights_bytes, int64_t peak_activation_bytes,
                                                  int64_t non_torch_bytes, int64_t cudagraph_bytes,
                                                  int64_t kv_cache_in_use_bytes) {
  KvCacheMemorySuggestion out = KvCacheMemorySuggestionFigures(init_free_memory_bytes, requested_bytes, weights_bytes,
                                                               peak_activation_bytes, non_torch_bytes, cudagraph_bytes);
  // vLLM's f-string in gpu_worker.compile_or_warm_up_model, verbatim.
  out.line = "Free memory on device (" + FormatGib(init_free_memory_bytes) + "/" + FormatGib(total_memory_bytes) +
             " GiB) on startup. Desired GPU memory utilization is (" + PythonFloatRepr(gpu_memory_utilization) +
             ", " + FormatGib(requested_bytes) + " GiB). Actual usage is " + FormatGib(weights_bytes) +
             " GiB for weight, " + FormatGib(peak_activation_bytes) + " GiB for peak activation, " +
             FormatGib(non_torch_bytes) + " GiB for non-torch memory, and " + FormatGib(cudagraph_bytes) +
             " GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=" +
             std::to_string(out.to_requested_limit_bytes) + "` (" + FormatGib(out.to_requested_limit_bytes) +
             " GiB) to fit into requested memory, or `--kv-cache-memory=" + std::to_string(out.to_gpu_limit_bytes) +
             "` (" + FormatGib(out.to_gpu_limit_bytes) +
             " GiB) to fully utilize gpu memory. Current kv cache memory in use is " +
             FormatGib(kv_cache_in_use_bytes) + " GiB.";
  return out;
}

std::string EstimatedCudagraphLine(int64_t cudagraph_estimate_bytes) {
  return "Estimated CUDA graph memory: " +
         FormatFixed(static_cast<double>(cudagraph_estimate_bytes) / static_cast<double>(kGiB), 2) + " GiB total";
}

}  // namespace vllm_mem
