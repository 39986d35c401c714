/*!
 * \file vllm_mem/memory/memory_budget.h
 * \brief The per-instance budget vLLM derives from gpu_memory_utilization. One definition for
 *        the worker flow, the offline planner and the multi-stage checks.
 */
#ifndef VLLM_MEM_MEMORY_MEMORY_BUDGET_H_
#define VLLM_MEM_MEMORY_MEMORY_BUDGET_H_

#include <cstdint>

namespace vllm_mem {

/*! \brief Throws InvalidArgument (field gpu_memory_utilization) unless 0 < utilization <= 1,
 *  the range vLLM's config validation allows. NaN is rejected too. */
void ValidateUtilization(double utilization, const char* field = "gpu_memory_utilization");

/*! \brief vLLM's request_memory: math.ceil(total_memory * gpu_memory_utilization), computed in
 *  double precision exactly as Python does, so the byte count matches vLLM's. */
int64_t RequestedMemoryBytes(int64_t total_memory_bytes, double utilization);

/*! \brief The largest utilization, a multiple of \p step_ppm parts per million, whose request
 *  (RequestedMemoryBytes) still fits in \p free_memory_bytes; 0 when not even one step fits.
 *  Checked against the exact ceil(total * u), not a floating-point ratio. */
int64_t LargestUtilizationFittingPpm(int64_t total_memory_bytes, int64_t free_memory_bytes, int64_t step_ppm);

/*! \brief Utilization as integer parts per million, rounded to nearest: sums of the values
 *  users write (0.6 + 0.3) stay exact (900000), unlike binary floating point. */
int64_t UtilizationToPpm(double utilization);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MEMORY_MEMORY_BUDGET_H_
