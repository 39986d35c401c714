/*!
 * \file vllm_mem/plan/plan_sweep.h
 * \brief Start-up plans over the cross product of settings, evaluated in C++ into columns.
 *
 * Everything that does not depend on the GPU or the utilization (weights, KV geometry per
 * rank, the profile-run estimates) is computed once per combination of the other axes; each
 * row then costs a handful of integer operations. For models whose KV cache is one uniform
 * group (full attention or MLA, the common case) the rows equal EvaluatePlan's exactly (the
 * tests check it); other models fall back to EvaluatePlan per row.
 */
#ifndef VLLM_MEM_PLAN_PLAN_SWEEP_H_
#define VLLM_MEM_PLAN_PLAN_SWEEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/startup_plan.h"

namespace vllm_mem {

/*! \brief The axes; an empty axis takes the value of \p base. */
struct SweepAxes {
  PlanInputs base;                            //!< every other setting
  std::vector<int64_t> total_memory_bytes;    //!< one per GPU
  std::vector<std::string> gpu_names;         //!< parallel to total_memory_bytes (may be empty)
  std::vector<double> gpu_memory_utilization;
  std::vector<int64_t> max_model_len;
  std::vector<int64_t> tensor_parallel_size;
  std::vector<int64_t> pipeline_parallel_size;
  std::vector<int64_t> max_num_seqs;
  std::vector<int64_t> max_num_batched_tokens;
  std::vector<std::string> dtype;
  std::vector<std::string> kv_cache_dtype;
  std::vector<std::string> quantization;
  std::vector<int64_t> block_size;
  std::vector<int64_t> enforce_eager;         //!< 0 / 1
};

/*! \brief Failure-phase codes of the columns: FailurePhase's order, and -1 for a combination
 *  that is invalid input (e.g. a TP that does not divide the heads). */
inline constexpr int8_t kSweepInvalid = -1;

/*! \brief One row per combination; inputs and results side by side. */
struct SweepColumns {
  // inputs
  std::vector<int32_t> gpu_index;
  std::vector<int64_t> total_memory_bytes;
  std::vector<double> gpu_memory_utilization;
  std::vector<int64_t> max_model_len, tensor_parallel_size, pipeline_parallel_size, max_num_seqs,
      max_num_batched_tokens, block_size;
  std::vector<int32_t> dtype_index, kv_cache_dtype_index, quantization_index;
  std::vector<uint8_t> enforce_eager;
  // results (the tightest rank's figures, as StartupPlan's headline)
  std::vector<int64_t> requested_bytes, weights_bytes, activation_peak_bytes, non_torch_bytes, cudagraph_bytes,
      available_kv_cache_bytes, num_blocks, num_tokens, max_model_len_that_fits;
  std::vector<double> max_concurrency;
  //! The six byte figures above (requested ... available_kv_cache) in GiB and as fractions of the
  //! row's total_memory_bytes: the sweep's *_gib and *_fraction columns, made here so the
  //! caller allocates (and page-faults in) no array of its own for them.
  std::vector<double> requested_gib, requested_fraction, weights_gib, weights_fraction, activation_peak_gib,
      activation_peak_fraction, non_torch_gib, non_torch_fraction, cudagraph_gib, cudagraph_fraction,
      available_kv_cache_gib, available_kv_cache_fraction;
  std::vector<uint8_t> fits;
  std::vector<int8_t> failure_phase;
  //! Why an invalid row is refused: an index into invalid_reasons ("field: message", the error
  //! plan() raises for the row), -1 for every other row.
  std::vector<int32_t> invalid_reason_index;
  std::vector<std::string> dtype_values, kv_cache_dtype_values, quantization_values, gpu_names;  //!< index tables
  std::vector<std::string> invalid_reasons;  //!< each distinct refusal once
  int64_t num_rows = 0;
  int64_t num_fast_rows = 0;  //!< rows evaluated on the cached fast path
};

/*! \brief Calls \p f(name, column) for each column of \p c, in the struct's order (the names
 *  are the Python sweep's keys). */
template <typename F>
void ForEachColumn(SweepColumns& c, F&& f) {
  f("gpu_index", c.gpu_index);
  f("total_memory_bytes", c.total_memory_bytes);
  f("gpu_memory_utilization", c.gpu_memory_utilization);
  f("max_model_len", c.max_model_len);
  f("tensor_parallel_size", c.tensor_parallel_size);
  f("pipeline_parallel_size", c.pipeline_parallel_size);
  f("max_num_seqs", c.max_num_seqs);
  f("max_num_batched_tokens", c.max_num_batched_tokens);
  f("block_size", c.block_size);
  f("dtype_index", c.dtype_index);
  f("kv_cache_dtype_index", c.kv_cache_dtype_index);
  f("quantization_index", c.quantization_index);
  f("enforce_eager", c.enforce_eager);
  f("requested_bytes", c.requested_bytes);
  f("weights_bytes", c.weights_bytes);
  f("activation_peak_bytes", c.activation_peak_bytes);
  f("non_torch_bytes", c.non_torch_bytes);
  f("cudagraph_bytes", c.cudagraph_bytes);
  f("available_kv_cache_bytes", c.available_kv_cache_bytes);
  f("num_blocks", c.num_blocks);
  f("num_tokens", c.num_tokens);
  f("max_model_len_that_fits", c.max_model_len_that_fits);
  f("max_concurrency", c.max_concurrency);
  f("requested_gib", c.requested_gib);
  f("requested_fraction", c.requested_fraction);
  f("weights_gib", c.weights_gib);
  f("weights_fraction", c.weights_fraction);
  f("activation_peak_gib", c.activation_peak_gib);
  f("activation_peak_fraction", c.activation_peak_fraction);
  f("non_torch_gib", c.non_torch_gib);
  f("non_torch_fraction", c.non_torch_fraction);
  f("cudagraph_gib", c.cudagraph_gib);
  f("cudagraph_fraction", c.cudagraph_fraction);
  f("available_kv_cache_gib", c.available_kv_cache_gib);
  f("available_kv_cache_fraction", c.available_kv_cache_fraction);
  f("fits", c.fits);
  f("failure_phase", c.failure_phase);
  f("invalid_reason_index", c.invalid_reason_index);
}

/*! \brief Evaluates the cross product. InvalidArgument for an empty GPU axis (and no base
 *  total) or a malformed axis value that would be invalid in every row (e.g. utilization 1.5).
 *  \p storage: columns a finished sweep handed back; their contents are dropped and their
 *  memory written again, so a caller sweeping in a loop writes into pages already mapped
 *  instead of fresh ones (a page fault per 4 KiB was a quarter of a sweep's time). */
SweepColumns RunSweep(const ModelSpec& spec, const SweepAxes& axes, SweepColumns storage = {});

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_PLAN_SWEEP_H_
