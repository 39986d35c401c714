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

namespace {

// Kernels one compiled decoder layer launches under vLLM v0.19 (vllm/model_executor/models/
// llama.py LlamaDecoderLayer, qwen2_moe.py, gpt_oss.py, deepseek_v2.py; the attention split
// ops unified_kv_cache_update / unified_attention are listed in compilation_config.splitting_ops
// of every held-out log). Inductor fuses the residual add into the following RMSNorm, so a norm
// counts once per sub-block whatever norms_per_layer says (Gemma's extra post-norms fuse into
// the same kernels); qk-norm fuses with the rotary kernel.
constexpr int64_t kAttentionNodes = 6;      // add+RMSNorm, qkv GEMM, rotary, KV write, attention, o_proj
constexpr int64_t kMlaAttentionNodes = 10;  // + q_a/kv_a projections and norm, q_b/kv_b (absorbed) GEMMs
constexpr int64_t kGatedMlpNodes = 4;       // add+RMSNorm, gate_up GEMM, SiluAndMul, down GEMM
constexpr int64_t kUngatedMlpNodes = 3;     // fc1, activation, fc2 (Phi's parallel block has no 2nd norm)
// fused_moe.py TritonExperts.apply: router GEMM, topk_softmax, moe_align_block_size (align +
// sort), invoke_fused_moe_kernel (w13), activation, invoke_fused_moe_kernel (w2), moe_sum; and
// the add+RMSNorm before it.
constexpr int64_t kMoeNodes = 9;
constexpr int64_t kSharedExpertNodes = 3;   // shared expert gate_up, activation, down
constexpr int64_t kAllReduceNodes = 2;      // RowParallelLinear o_proj and down/experts reduce

}  // namespace

int64_t GraphNodesPerRank(const ModelSpec& spec, int64_t tensor_parallel_size, int64_t first_layer,
                          int64_t end_layer) {
  RequirePositive(tensor_parallel_size, "tensor_parallel_size");
  if (first_layer < 0 || end_layer < first_layer || end_layer > spec.num_layers) {
    throw InvalidArgument("layers", "must be a range inside [0, num_layers=" + std::to_string(spec.num_layers) +
                                        "], got [" + std::to_string(first_layer) + ", " + std::to_string(end_layer) +
                                        ")");
  }
  const int64_t attention = spec.mla ? kMlaAttentionNodes : kAttentionNodes;
  const int64_t dense = spec.traits.gated_mlp && !spec.traits.parallel_block ? kGatedMlpNodes : kUngatedMlpNodes;
  int64_t moe = kMoeNodes;
  if (spec.moe) {
    if (spec.moe->num_shared_experts > 0 || spec.moe->shared_expert_intermediate_size > 0) moe += kSharedExpertNodes;
    if (spec.moe->shared_expert_gate) moe += 1;
  }
  const int64_t all_reduce = tensor_parallel_size > 1 ? kAllReduceNodes : 0;
  int64_t nodes = 0;
  for (int64_t i = first_layer; i < end_layer; ++i) {
    // spec.layers is num_layers long for every family with rules; a generic spec without a
    // layer list is sized as dense layers.
    const bool is_moe = spec.moe && i < static_cast<int64_t>(spec.layers.size()) && spec.layers[i].moe;
    nodes = CheckedAdd(nodes, attention + (is_moe ? moe : dense) + all_reduce, "cudagraph");
  }
  return nodes;
}

namespace {

/*! The capture sizes asked for (sorted, distinct, each bounded), or vLLM's defaults. */
std::vector<int64_t> CaptureSizes(const CudagraphOptions& o) {
  if (o.capture_sizes.empty()) {
    const int64_t max_size = o.max_cudagraph_capture_size > 0
                                 ? o.max_cudagraph_capture_size
                                 : DefaultMaxCaptureSize(o.max_num_seqs, o.max_num_batched_tokens);
    return DefaultCaptureSizes(max_size);
  }
  for (int64_t s : o.capture_sizes) {
    RequirePositiveAtMost(s, kMaxCudagraphCaptureSize, "cudagraph_capture_sizes",
                          "vllm_mem/base/limits.h: vLLM's default largest is 512");
  }
  std::vector<int64_t> sizes = o.capture_sizes;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

}  // namespace

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

  e.capture_sizes = CaptureSizes(o);
  if (e.capture_sizes.empty()) return e;

  // FULL graphs serve uniform decode batches (one token per request): sizes <= max_num_seqs.
  std::vector<int64_t> decode_sizes;
  RequirePositiveAtMost(o.uniform_decode_query_len, kMaxNumSpeculativeTokens + 1, "uniform_decode_query_len",
                        "1 + num_speculative_tokens; vllm_mem/base/limits.h");
  const int64_t q = o.uniform_decode_query_len;
  for (int64_t s : e.capture_sizes) {
    if (s <= CheckedMul(o.max_num_seqs, q, "max_num_seqs") && s >= q) decode_sizes.push_back(s);
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
  // Each further graph costs what vLLM's profile measures between two captures: the
  // instantiated graph of this rank's kernels (GraphNodesPerRank; tensor-parallel all-reduces
  // and MoE kernels add nodes), not a hidden-size-proportional buffer. vLLM floors it at 1 MiB.
  if (!(o.constants.bytes_per_graph_node >= 0.0) || !(o.constants.per_graph_bytes_per_layer_hidden >= 0.0)) {
    throw InvalidArgument("cudagraph_constants", "per-graph constants must be finite and >= 0");
  }
  const auto [first_layer, end_layer] = PipelineLayerRange(spec.num_layers, o.pp_rank, o.pipeline_parallel_size);
  e.graph_nodes_per_rank = GraphNodesPerRank(spec, o.tensor_parallel_size, first_layer, end_layer);
  const double per_graph =
      o.constants.bytes_per_graph_node * static_cast<double>(e.graph_nodes_per_rank) +
      o.constants.per_graph_bytes_per_layer_hidden * static_cast<double>(end_layer - first_layer) *
          static_cast<double>(spec.hidden_size);
  e.per_graph_bytes = std::max<int64_t>(o.constants.per_graph_floor_bytes,
                                        CheckedDoubleToInt64(std::round(per_graph), "cudagraph"));
  int64_t further = 0;
  if (e.num_full_graphs > 0) further += e.num_full_graphs - 1;
  if (e.num_piecewise_graphs > 0) further += e.num_piecewise_graphs - 1;
  e.total_bytes = CheckedAdd(e.first_capture_bytes, CheckedMul(e.per_graph_bytes, further, "cudagraph"), "cudagraph");

  return e;
}

std::string CudagraphCaptureCountsLine(const CudagraphEstimate& e) {
  if (e.capture_sizes.empty()) return "";  // eager, mode NONE or nothing to capture: vLLM profiles no graph
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
  return line;
}

}  // namespace vllm_mem
