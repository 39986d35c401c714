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

/*! \brief Calibrated constants (docs/planner.md). */
struct CudagraphConstants {
  int64_t first_capture_fixed_bytes = 194025147;  //!< 0.18 GiB: workspaces of the first capture
  double per_graph_bytes_per_layer_hidden = 45.1;  //!< static buffers / nodes per graph, per layer * hidden unit
  int64_t per_graph_floor_bytes = int64_t{1} << 20;  //!< vLLM's 1 MiB floor per extra graph
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
  std::string dtype = "auto";
  CudagraphConstants constants;
  ActivationConstants activation_constants;
};

struct CudagraphEstimate {
  std::vector<int64_t> capture_sizes;  //!< the sizes captured (ascending)
  int64_t num_full_graphs = 0;
  int64_t num_piecewise_graphs = 0;
  int64_t largest_full = 0;
  int64_t largest_piecewise = 0;
  int64_t first_capture_bytes = 0;    //!< max over modes of the first capture
  int64_t per_graph_bytes = 0;        //!< per further graph (after the 1 MiB floor)
  int64_t total_bytes = 0;            //!< 0 with enforce_eager or mode NONE
  std::string profiling_line;         //!< vLLM's "Profiling CUDA graph memory: FULL=... " (empty if none)
};

/*! \brief vLLM's default capture sizes up to \p max_size: 1, 2, 4, then every 8 below 256,
 *  then every 16 up to max_size. */
std::vector<int64_t> DefaultCaptureSizes(int64_t max_size);

/*! \brief vLLM's default max_cudagraph_capture_size: min(2 * max_num_seqs, 512), capped at
 *  max_num_batched_tokens. */
int64_t DefaultMaxCaptureSize(int64_t max_num_seqs, int64_t max_num_batched_tokens);

/*! \brief The graph-pool estimate for one GPU of \p options.pp_rank. */
CudagraphEstimate EstimateCudagraphMemory(const ModelSpec& spec, const CudagraphOptions& options);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_CUDAGRAPH_ESTIMATE_H_
