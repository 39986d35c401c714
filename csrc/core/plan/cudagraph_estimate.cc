/*!
 * \file core/plan/cudagraph_estimate.cc
 * \brief CUDA-graph capture sizes and pool estimate.
 */
#include "vllm_mem/plan/cudagraph_estimate.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "core/model/parallelism.h"

namespace vllm_mem {

CudagraphMode ParseCudagraphMode(const std::string& name) {
  std::string upper;
  for (char ch : name) upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(ch))));
  if (upper == "NONE") return CudagraphMode::kNone;
  if (upper == "PIECEWISE") return CudagraphMode::kPiecewise;
  if (upper == "FULL") return CudagraphMode::kFull;
  if (upper == "FULL_DECODE_ONLY") return CudagraphMode::kFullDecodeOnly;
  if (upper == "FULL_AND_PIECEWISE") return CudagraphMode::kFullAndPiecewise;
  throw InvalidArgument("cudagraph_mode", "must be one of NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, "
                                          "FULL_AND_PIECEWISE; got " + EchoValue(name));
}

std::string CudagraphModeName(CudagraphMode mode) {
  switch (mode) {
    case CudagraphMode::kNone: return "NONE";
    case CudagraphMode::kPiecewise: return "PIECEWISE";
    case CudagraphMode::kFull: return "FULL";
    case CudagraphMode::kFullDecodeOnly: return "FULL_DECODE_ONLY";
    case CudagraphMode::kFullAndPiecewise: return "FULL_AND_PIECEWISE";
  }
  return "NONE";
}

std::vector<int64_t> DefaultCaptureSizes(int64_t max_size) {
  // Bounded first: the list grows linearly with max_size, and max_size + 1 below overflowed
  // for INT64_MAX (fuzzing found both).
  RequireAtMost(max_size, kMaxCudagraphCaptureSize, "max_cudagraph_capture_size",
                "vllm_mem/base/limits.h: vLLM's default is 512");
  std::vector<int64_t> sizes;
  for (int64_t s : {1, 2, 4}) {
    if (s <= max_size) sizes.push_back(s);
  }
  for (int64_t s = 8; s < std::min<int64_t>(max_size + 1, 256); s += 8) sizes.push_back(s);
  for (int64_t s = 256; s <= max_size; s += 16) sizes.push_back(s);
  return sizes;
}

int64_t DefaultMaxCaptureSize(int64_t max_num_seqs, int64_t max_num_batched_tokens) {
  return std::min({CheckedMul(max_num_seqs, 2, "max_num_seqs"), int64_t{512}, max_num_batched_tokens});
}

CudagraphEstimate EstimateCudagraphMemory(const ModelSpec& spec, const CudagraphOptions& o) {
  RequirePositiveAtMost(o.max_num_seqs, kMaxNumSeqs, "max_num_seqs", "vllm_mem/base/limits.h");
  RequirePositiveAtMost(o.max_num_batched_tokens, kMaxNumBatchedTokens, "max_num_batched_tokens",
                        "vllm_mem/base/limits.h");
  RequireNonNegative(o.max_cudagraph_capture_size, "max_cudagraph_capture_size");
  RequireAtMost(o.max_cudagraph_capture_size, kMaxCudagraphCaptureSize, "max_cudagraph_capture_size",
                "vllm_mem/base/limits.h: vLLM's default is 512");
  RequireAtMost(static_cast<int64_t>(o.capture_sizes.size()), kMaxCudagraphCaptureSizes,
                "cudagraph_capture_sizes", "entries; vllm_mem/base/limits.h");
  ValidateParallelism(spec.num_layers, o.tensor_parallel_size, o.pipeline_parallel_size);
  CudagraphEstimate e;
  if (o.enforce_eager || o.mode == CudagraphMode::kNone) return e;

  if (!o.capture_sizes.empty()) {
    for (int64_t s : o.capture_sizes) {
      RequirePositiveAtMost(s, kMaxCudagraphCaptureSize, "cudagraph_capture_sizes",
                            "vllm_mem/base/limits.h: vLLM's default largest is 512");
    }
    e.capture_sizes = o.capture_sizes;
    std::sort(e.capture_sizes.begin(), e.capture_sizes.end());
    e.capture_sizes.erase(std::unique(e.capture_sizes.begin(), e.capture_sizes.end()), e.capture_sizes.end());
  } else {
    const int64_t max_size = o.max_cudagraph_capture_size > 0
                                 ? o.max_cudagraph_capture_size
                                 : DefaultMaxCaptureSize(o.max_num_seqs, o.max_num_batched_tokens);
    e.capture_sizes = DefaultCaptureSizes(max_size);
  }
  if (e.capture_sizes.empty()) return e;

  // FULL graphs serve uniform decode batches (one token per request): sizes <= max_num_seqs.
  std::vector<int64_t> decode_sizes;
  for (int64_t s : e.capture_sizes) {
    if (s <= o.max_num_seqs) decode_sizes.push_back(s);
  }
  const bool piecewise = o.mode == CudagraphMode::kPiecewise || o.mode == CudagraphMode::kFullAndPiecewise;
  const bool full_all = o.mode == CudagraphMode::kFull;
  const bool full_decode = o.mode == CudagraphMode::kFullDecodeOnly || o.mode == CudagraphMode::kFullAndPiecewise;
  if (piecewise) {
    e.num_piecewise_graphs = static_cast<int64_t>(e.capture_sizes.size());
    e.largest_piecewise = e.capture_sizes.back();
  }
  if (full_all) {
    e.num_full_graphs = static_cast<int64_t>(e.capture_sizes.size());
    e.largest_full = e.capture_sizes.back();
  } else if (full_decode && !decode_sizes.empty()) {
    e.num_full_graphs = static_cast<int64_t>(decode_sizes.size());
    e.largest_full = decode_sizes.back();
  }

  // First capture of a mode: the forward working set of its largest batch, plus workspaces.
  // FULL and PIECEWISE share one pool and never replay together, so vLLM takes the max.
  const int64_t largest = std::max(e.largest_full, e.largest_piecewise);
  e.first_capture_bytes = CheckedAdd(ForwardActivationBytes(spec, largest, o.tensor_parallel_size, o.dtype,
                                                            o.activation_constants),
                                     o.constants.first_capture_fixed_bytes, "cudagraph");
  // Each further graph keeps its static buffers and graph nodes: proportional to the layers
  // on this rank and the hidden size, with vLLM's 1 MiB floor.
  const auto [first_layer, end_layer] = PipelineLayerRange(spec.num_layers, o.pp_rank, o.pipeline_parallel_size);
  const double per_graph = o.constants.per_graph_bytes_per_layer_hidden * static_cast<double>(end_layer - first_layer) *
                           static_cast<double>(spec.hidden_size);
  e.per_graph_bytes = std::max<int64_t>(o.constants.per_graph_floor_bytes,
                                        CheckedDoubleToInt64(std::round(per_graph), "cudagraph"));
  int64_t further = 0;
  if (e.num_full_graphs > 0) further += e.num_full_graphs - 1;
  if (e.num_piecewise_graphs > 0) further += e.num_piecewise_graphs - 1;
  e.total_bytes = CheckedAdd(e.first_capture_bytes, CheckedMul(e.per_graph_bytes, further, "cudagraph"), "cudagraph");

  auto part = [](const char* name, int64_t n, int64_t largest_size) {
    return std::string(name) + "=" + std::to_string(n) + " (largest=" + std::to_string(largest_size) + ")";
  };
  std::string line = "Profiling CUDA graph memory: ";
  bool first = true;
  if (e.num_full_graphs > 0) {
    line += part("FULL", e.num_full_graphs, e.largest_full);
    first = false;
  }
  if (e.num_piecewise_graphs > 0) line += (first ? "" : ", ") + part("PIECEWISE", e.num_piecewise_graphs, e.largest_piecewise);
  e.profiling_line = line;
  return e;
}

}  // namespace vllm_mem
