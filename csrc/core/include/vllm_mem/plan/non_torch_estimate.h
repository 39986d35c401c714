/*!
 * \file vllm_mem/plan/non_torch_estimate.h
 * \brief vLLM's "non-torch forward increase memory": device memory this instance gains outside
 *        PyTorch's allocator between the init snapshot and the end of the profile run.
 *
 * What grows there: kernel images the CUDA driver loads lazily on first launch (cuBLAS,
 * FlashAttention, Triton / inductor kernels compiled for the profile run) and cuBLAS / cuBLASLt
 * workspaces, plus, under tensor parallelism, NCCL's lazily connected communication buffers
 * (on NVSwitch systems including the NVLink-SHARP buffers) and the custom all-reduce buffers.
 * The init snapshot is taken after the distributed environment is set up, so a multi-process
 * start (TP or PP) has most kernels loaded before it. None of this follows from the model:
 * the figures are calibrated constants of one platform (H100 SXM, NVSwitch, CUDA 12,
 * vLLM v0.19), documented in docs/planner.md.
 */
#ifndef VLLM_MEM_PLAN_NON_TORCH_ESTIMATE_H_
#define VLLM_MEM_PLAN_NON_TORCH_ESTIMATE_H_

#include <cstdint>
#include <string>

namespace vllm_mem {

/*! \brief Calibrated constants (bytes). */
struct NonTorchConstants {
  int64_t single_process_bytes = 263066746;    //!< 0.245 GiB: lazy kernels + cuBLAS workspaces, one GPU
  int64_t multi_process_bytes = 75161927;      //!< 0.07 GiB: the same when NCCL set-up preloaded most kernels
  int64_t tensor_parallel_nccl_bytes = 2115271393;  //!< 1.97 GiB: NCCL (NVLS) + custom all-reduce, TP > 1
  int64_t per_tensor_parallel_peer_bytes = 32212254;  //!< 0.03 GiB per extra TP peer (p2p channels)
};

/*! \brief The estimate, by source (bytes on one GPU). */
struct NonTorchBreakdown {
  int64_t cuda_runtime_bytes = 0;  //!< kernel images and cuBLAS workspaces
  int64_t nccl_bytes = 0;          //!< communication buffers (TP > 1)
  int64_t total_bytes = 0;
};

/*! \brief Estimated non-torch increase for a tp x pp deployment. InvalidArgument for sizes < 1. */
NonTorchBreakdown EstimateNonTorchIncrease(int64_t tensor_parallel_size, int64_t pipeline_parallel_size,
                                           const NonTorchConstants& constants = {});

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_NON_TORCH_ESTIMATE_H_
