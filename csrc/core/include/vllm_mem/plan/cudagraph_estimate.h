/*!
 * \file vllm_mem/plan/cudagraph_estimate.h
 * \brief CUDA-graph pool memory for vLLM's capture sizes, mirroring how vLLM's
 *        profile_cudagraph_memory() extrapolates it: the first (largest) capture of each mode,
 *        shared by the modes, plus a per-graph increment for every further graph.
 */
#ifndef VLLM_MEM_PLAN_CUDAGRAPH_ESTIMATE_H_
#define VLLM_MEM_PLAN_CUDAGRAPH_ESTIMATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/plan/activation_estimate.h"
#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief vLLM's compilation_config.cudagraph_mode. */
enum class CudagraphMode { kNone, kPiecewise, kFull, kFullDecodeOnly, kFullAndPiecewise };

/*! \brief Parses "NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE" (any
 *  case). InvalidArgument (field cudagraph_mode) otherwise. */
CudagraphMode ParseCudagraphMode(const std::string& name);
std::string CudagraphModeName(CudagraphMode mode);

/*! \brief Calibrated constants (docs/planner.md, docs/approximations.md). */
struct CudagraphConstants {
  /*! Workspaces of the first (largest) capture on top of its forward working set: attention
   *  metadata buffers of FULL graphs, cuBLAS / inductor scratch. Calibrated on the 25 v0.19
   *  start-ups (tests/data/vllm_startup_logs.calibration.jsonl) together with
   *  bytes_per_graph_node (median |error| 0.06 GiB). */
  int64_t first_capture_fixed_bytes = 268435456;  // 256 MiB
  /*! Device memory each further captured graph keeps per kernel node: vLLM measures the
   *  increase of one more capture, which is the instantiated graph (node parameters, the
   *  piecewise outputs the pool keeps), so it grows with the kernels launched per layer on this
   *  rank (GraphNodesPerRank), not with the hidden size. Calibrated on the same 25 start-ups;
   *  the held-out start-ups (tests/data/heldout_startups.jsonl) print 11-19 KiB per node. */
  double bytes_per_graph_node = 16384.0;
  /*! Optional extra per-graph term proportional to layers on the rank x hidden size (static
   *  per-layer output buffers). 0: the held-out 70B and MoE start-ups show per-graph memory does
   *  not follow the hidden size; kept for callers that model heavier graphs. */
  double per_graph_bytes_per_layer_hidden = 0.0;
  int64_t per_graph_floor_bytes = int64_t{1} << 20;  //!< vLLM's 1 MiB floor per extra graph

  bool operator==(const CudagraphConstants&) const = default;
};

struct CudagraphOptions {
  bool enforce_eager = false;
  CudagraphMode mode = CudagraphMode::kFullAndPiecewise;  //!< vLLM's default on CUDA
  std::vector<int64_t> capture_sizes;        //!< empty: vLLM's defaults
  int64_t max_cudagraph_capture_size = 0;    //!< 0: min(2 * max_num_seqs, 512, max_num_batched_tokens)
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;
  int64_t tensor_parallel_size = 1;
  int64_t pipeline_parallel_size = 1;
  int64_t pp_rank = 0;
  /*! 1 + num_speculative_tokens: FULL decode graphs serve batches of
   *  [q, max_num_seqs * q] tokens (cudagraph_dispatcher.py initialize_cudagraph_keys). */
  int64_t uniform_decode_query_len = 1;
  std::string dtype = "auto";
  CudagraphConstants constants;
  ActivationConstants activation_constants;

  bool operator==(const CudagraphOptions&) const = default;
};

struct CudagraphEstimate {
  std::vector<int64_t> capture_sizes;  //!< the sizes captured (ascending)
  int64_t num_full_graphs = 0;
  int64_t num_piecewise_graphs = 0;
  int64_t largest_full = 0;
  int64_t largest_piecewise = 0;
  int64_t first_capture_bytes = 0;    //!< max over modes of the first capture
  int64_t graph_nodes_per_rank = 0;   //!< kernel nodes one graph holds on this rank (GraphNodesPerRank)
  int64_t per_graph_bytes = 0;        //!< per further graph (after the 1 MiB floor)
  int64_t total_bytes = 0;            //!< 0 with enforce_eager or mode NONE
};

/*! \brief vLLM's "Profiling CUDA graph memory: FULL=n (largest=s), PIECEWISE=..." line for
 *  \p estimate, formatted when asked (a plan in a loop reads none); empty when no graph is
 *  captured. */
std::string CudagraphCaptureCountsLine(const CudagraphEstimate& estimate);

/*! \brief vLLM's default capture sizes up to \p max_size: 1, 2, 4, then every 8 below 256,
 *  then every 16 up to max_size. */
std::vector<int64_t> DefaultCaptureSizes(int64_t max_size);

/*! \brief vLLM's default max_cudagraph_capture_size: min(2 * max_num_seqs, 512), capped at
 *  max_num_batched_tokens. */
int64_t DefaultMaxCaptureSize(int64_t max_num_seqs, int64_t max_num_batched_tokens);

/*! \brief Kernel nodes one captured forward holds for the decoder layers [first_layer,
 *  end_layer) on one tensor-parallel rank of \p tensor_parallel_size, counted from the kernels
 *  vLLM v0.19's compiled decoder layer launches: attention block 6 (fused add+RMSNorm, qkv GEMM,
 *  rotary, KV-cache write, attention, o_proj; MLA 10), dense MLP 4 (norm, gate_up, activation,
 *  down; 3 for an ungated or parallel block), fused MoE 9 (norm, router GEMM, top-k softmax,
 *  moe_align_block_size 2, GEMM1, activation, GEMM2, moe_sum) plus 3 for shared experts (+1 for
 *  the Qwen-MoE shared-expert gate), and 2 all-reduces per layer when tensor_parallel_size > 1. */
int64_t GraphNodesPerRank(const ModelSpec& spec, int64_t tensor_parallel_size, int64_t first_layer,
                          int64_t end_layer);

/*! \brief The graph-pool estimate for one GPU of \p options.pp_rank. */
CudagraphEstimate EstimateCudagraphMemory(const ModelSpec& spec, const CudagraphOptions& options);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_CUDAGRAPH_ESTIMATE_H_
