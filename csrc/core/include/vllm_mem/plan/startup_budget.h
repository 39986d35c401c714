/*!
 * \file vllm_mem/plan/startup_budget.h
 * \brief vLLM's worker start-up arithmetic, in vLLM's order (gpu_worker.py, v0.19 / main):
 *        the requested budget and its free-memory check, the available KV-cache memory after
 *        profiling (or the kv_cache_memory_bytes short-cut), and the `--kv-cache-memory`
 *        suggestion, each with the text vLLM prints, byte for byte.
 *
 * Used by the measured worker flow (python/vllm_mem/worker_flow.py, with real or simulated
 * snapshots) and by the offline planner (vllm_mem/plan/startup_plan.h, with estimates): one definition.
 */
#ifndef VLLM_MEM_PLAN_STARTUP_BUDGET_H_
#define VLLM_MEM_PLAN_STARTUP_BUDGET_H_

#include <cstdint>
#include <optional>
#include <string>

namespace vllm_mem {

/*! \brief vLLM's redundancy_buffer_memory in the suggestion (gpu_worker.py): 150 MiB. */
inline constexpr int64_t kKvSuggestionBufferBytes = int64_t{150} << 20;

/*! \brief Python's repr() of a float ("0.95", "0.9", "1.0", "1e-05"): how vLLM's f-strings
 *  print gpu_memory_utilization. */
std::string PythonFloatRepr(double value);

/*! \brief The result of vLLM's request_memory. */
struct RequestedMemory {
  int64_t requested_bytes = 0;  //!< ceil(total * utilization)
  bool fits = true;             //!< free >= requested
  std::string error_message;    //!< vLLM's ValueError text when !fits, else empty
  /*! The largest utilization, in thousandths as ppm, that free memory admits now (when !fits). */
  int64_t largest_fitting_utilization_ppm = 0;
};

/*! \brief vLLM's request_memory without raising: the budget and, when free memory is short,
 *  the exact "Free memory on device ..." message. InvalidArgument for a utilization outside
 *  (0, 1] or negative sizes. \p device is how torch prints it ("cuda:0"). */
RequestedMemory CheckRequestMemory(int64_t total_memory_bytes, int64_t free_memory_bytes,
                                   double gpu_memory_utilization, const std::string& device = "cuda:0");

/*! \brief vLLM's request_memory: the budget, or InsufficientMemory with vLLM's exact text. */
int64_t RequestMemory(int64_t total_memory_bytes, int64_t free_memory_bytes, double gpu_memory_utilization,
                      const std::string& device = "cuda:0");

/*! \brief What vLLM's memory_profiling measured (bytes, per worker). */
struct ProfileMeasurements {
  int64_t weights_bytes = 0;              //!< model_memory_usage ("Model loading took")
  int64_t torch_peak_increase_bytes = 0;  //!< peak activation of the profile run
  int64_t non_torch_increase_bytes = 0;   //!< CUDA context / NCCL / cuBLAS growth since init
  int64_t cudagraph_estimate_bytes = 0;   //!< profile_cudagraph_memory(); 0 when eager
  //! memory_profiling's non_kv_cache_memory where its release no longer sums the three terms above
  //! (rule `non_kv_cache_memory` "total_consumed", vLLM >= 0.27: the free-memory drop since the init
  //! snapshot plus the transient peak headroom, which determine_available_memory subtracts as is);
  //! unset: weights + torch peak increase + non-torch increase, as determine_available_memory
  //! recomputes it up to 0.26.
  std::optional<int64_t> non_kv_cache_bytes;
};

/*! \brief determine_available_memory()'s inputs beyond the profile. */
struct AvailableKvOptions {
  int64_t total_memory_bytes = 0;         //!< init snapshot total
  double gpu_memory_utilization = 0.92;
  int64_t kv_cache_memory_bytes = 0;      //!< --kv-cache-memory-bytes; 0: profile as usual
  int64_t init_free_memory_bytes = 0;     //!< init snapshot free (for the short-cut's log line)
  bool estimate_cudagraphs = true;        //!< VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (default 1)
};

/*! \brief determine_available_memory()'s result and log lines. */
struct AvailableKvMemory {
  int64_t requested_bytes = 0;
  int64_t non_kv_cache_bytes = 0;           //!< ProfileMeasurements::non_kv_cache_bytes, else the three terms' sum
  int64_t cudagraph_applied_bytes = 0;      //!< the estimate when estimate_cudagraphs, else 0
  int64_t available_kv_cache_bytes = 0;     //!< may be <= 0: vLLM rejects that later
  bool from_kv_cache_memory_bytes = false;  //!< the short-cut path was taken
  std::string available_line;               //!< "Available KV cache memory: X GiB" (empty on the short-cut)
  std::string cudagraph_line;               //!< the CUDA-graph INFO (or WARNING) line; empty when no estimate
  std::string kv_cache_memory_bytes_line;   //!< the short-cut's INFO line; empty otherwise
};

/*! \brief vLLM's determine_available_memory arithmetic:
 *  requested - (weights + torch peak increase + non-torch increase) - applied CUDA-graph
 *  estimate, or kv_cache_memory_bytes verbatim when set (no profiling subtraction). */
AvailableKvMemory DetermineAvailableKvCacheMemory(int64_t requested_bytes, const ProfileMeasurements& profile,
                                                  const AvailableKvOptions& options);

/*! \brief The figures of DetermineAvailableKvCacheMemory without its log lines (left empty):
 *  the plan prints its lines once, for the tightest rank, not per rank. */
AvailableKvMemory AvailableKvCacheFigures(int64_t requested_bytes, const ProfileMeasurements& profile,
                                          const AvailableKvOptions& options);

/*! \brief vLLM's CUDA-graph INFO line ("CUDA graph memory profiling is enabled ...") or, with
 *  the estimate disabled, its WARNING line. Empty when the estimate is 0. */
std::string CudagraphProfilingLine(int64_t cudagraph_estimate_bytes, int64_t total_memory_bytes,
                                   double gpu_memory_utilization, bool estimate_cudagraphs = true);

/*! \brief The two `--kv-cache-memory` values of vLLM's suggestion and the line itself. */
struct KvCacheMemorySuggestion {
  int64_t to_requested_limit_bytes = 0;  //!< "to fit into requested memory"
  int64_t to_gpu_limit_bytes = 0;        //!< "to fully utilize gpu memory"
  std::string line;
};

/*! \brief vLLM's suggestion after graph capture: non_kv = weights + peak activation +
 *  non-torch + CUDA graph (actual); to_gpu = init free - non_kv - 150 MiB; to_requested =
 *  requested - non_kv - 150 MiB. */
KvCacheMemorySuggestion SuggestKvCacheMemoryBytes(int64_t init_free_memory_bytes, int64_t total_memory_bytes,
                                                  double gpu_memory_utilization, int64_t requested_bytes,
                                                  int64_t weights_bytes, int64_t peak_activation_bytes,
                                                  int64_t non_torch_bytes, int64_t cudagraph_bytes,
                                                  int64_t kv_cache_in_use_bytes);

/*! \brief The two values of SuggestKvCacheMemoryBytes without its line (left empty): a plan
 *  needs the values for its verdict and formats the line only when a report reads it. */
KvCacheMemorySuggestion KvCacheMemorySuggestionFigures(int64_t init_free_memory_bytes, int64_t requested_bytes,
                                                       int64_t weights_bytes, int64_t peak_activation_bytes,
                                                       int64_t non_torch_bytes, int64_t cudagraph_bytes);

/*! \brief vLLM's "Estimated CUDA graph memory: %.2f GiB total" line. */
std::string EstimatedCudagraphLine(int64_t cudagraph_estimate_bytes);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_STARTUP_BUDGET_H_
