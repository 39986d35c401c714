/*!
 * \file core/plan/non_torch_estimate.cc
 * \brief Non-torch memory growth during vLLM's start-up profile.
 */
#include "vllm_mem/plan/non_torch_estimate.h"

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"

namespace vllm_mem {

NonTorchBreakdown EstimateNonTorchIncrease(int64_t tensor_parallel_size, int64_t pipeline_parallel_size,
                                           const NonTorchConstants& c) {
  if (tensor_parallel_size < 1) {
    throw InvalidArgument("tensor_parallel_size", "must be an integer >= 1, got " + std::to_string(tensor_parallel_size));
  }
  if (pipeline_parallel_size < 1) {
    throw InvalidArgument("pipeline_parallel_size",
                          "must be an integer >= 1, got " + std::to_string(pipeline_parallel_size));
  }
  NonTorchBreakdown b;
  const bool multi_process = tensor_parallel_size * pipeline_parallel_size > 1;
  b.cuda_runtime_bytes = multi_process ? c.multi_process_bytes : c.single_process_bytes;
  if (tensor_parallel_size > 1) {
    // Pipeline send/recv buffers are connected at set-up (before the snapshot); tensor-parallel
    // all-reduce buffers are connected on the first collective, inside the profile run.
    b.nccl_bytes = CheckedAdd(c.tensor_parallel_nccl_bytes,
                              CheckedMul(c.per_tensor_parallel_peer_bytes, tensor_parallel_size - 1, "non_torch"),
                              "non_torch");
  }
  b.total_bytes = CheckedAdd(b.cuda_runtime_bytes, b.nccl_bytes, "non_torch");
  return b;
}

}  // namespace vllm_mem
