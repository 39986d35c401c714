/*!
 * \file core/model/parallelism.cc
 * \brief Tensor- and pipeline-parallel splits.
 */
#include "core/model/parallelism.h"

#include <string>
#include <vector>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"

namespace vllm_mem {

void ValidateParallelism(int64_t num_layers, int64_t tensor_parallel_size, int64_t pipeline_parallel_size) {
  if (tensor_parallel_size < 1) {
    throw InvalidArgument("tensor_parallel_size",
                          "must be an integer >= 1, got " + std::to_string(tensor_parallel_size));
  }
  if (pipeline_parallel_size < 1) {
    throw InvalidArgument("pipeline_parallel_size",
                          "must be an integer >= 1, got " + std::to_string(pipeline_parallel_size));
  }
  // Bounded before any per-rank or per-worker work (fuzzing: TP 2^20 made the KV sizing build
  // a million workers, 17 s and 6.7 GB).
  RequireAtMost(tensor_parallel_size, kMaxTensorParallelSize, "tensor_parallel_size",
                "vllm_mem/base/limits.h: 100x beyond real deployments");
  RequireAtMost(pipeline_parallel_size, kMaxPipelineParallelSize, "pipeline_parallel_size",
                "vllm_mem/base/limits.h: 100x beyond real deployments");
  RequireAtMost(tensor_parallel_size * pipeline_parallel_size, kMaxWorldSize,
                "tensor_parallel_size", "times pipeline_parallel_size: vllm_mem/base/limits.h");
  if (pipeline_parallel_size > num_layers) {
    throw InvalidArgument("pipeline_parallel_size",
                          "must not exceed num_hidden_layers (" + std::to_string(num_layers) +
                              "), got " + std::to_string(pipeline_parallel_size));
  }
}

std::pair<int64_t, int64_t> PipelineLayerRange(int64_t num_layers, int64_t pp_rank, int64_t pp_size) {
  ValidateParallelism(num_layers, 1, pp_size);
  if (pp_rank < 0 || pp_rank >= pp_size) {
    throw InvalidArgument("pp_rank", "must be in [0, " + std::to_string(pp_size) + "), got " +
                                         std::to_string(pp_rank));
  }
  std::vector<int64_t> partitions(static_cast<size_t>(pp_size), num_layers / pp_size);
  const int64_t remaining = num_layers % pp_size;
  for (int64_t i = 2; i < remaining + 2; ++i) partitions[static_cast<size_t>(pp_size - i)] += 1;
  int64_t start = 0;
  for (int64_t r = 0; r < pp_rank; ++r) start += partitions[static_cast<size_t>(r)];
  return {start, start + partitions[static_cast<size_t>(pp_rank)]};
}

int64_t KvHeadsPerRank(int64_t total_kv_heads, int64_t tensor_parallel_size) {
  if (tensor_parallel_size < 1) {
    throw InvalidArgument("tensor_parallel_size",
                          "must be an integer >= 1, got " + std::to_string(tensor_parallel_size));
  }
  // Attention-free models (Mamba: model_families.json attention_free) have no KV head to place.
  if (total_kv_heads == 0) return 0;
  if (total_kv_heads >= tensor_parallel_size) {
    if (total_kv_heads % tensor_parallel_size != 0) {
      throw InvalidArgument("tensor_parallel_size",
                            "the " + std::to_string(total_kv_heads) +
                                " KV heads are not divisible by tensor_parallel_size " +
                                std::to_string(tensor_parallel_size) +
                                "; use a tensor_parallel_size that divides the KV-head count");
    }
    return total_kv_heads / tensor_parallel_size;
  }
  if (tensor_parallel_size % total_kv_heads != 0) {
    throw InvalidArgument("tensor_parallel_size",
                          "tensor_parallel_size " + std::to_string(tensor_parallel_size) +
                              " is not a multiple of the " + std::to_string(total_kv_heads) +
                              " KV heads, so they cannot be replicated evenly");
  }
  return 1;  // replicated: every rank keeps one head
}

int64_t AttentionHeadsPerRank(int64_t num_attention_heads, int64_t tensor_parallel_size) {
  if (tensor_parallel_size < 1) {
    throw InvalidArgument("tensor_parallel_size",
                          "must be an integer >= 1, got " + std::to_string(tensor_parallel_size));
  }
  if (num_attention_heads % tensor_parallel_size != 0) {
    // vLLM's own words (ModelConfig.verify_with_parallel_config, vllm/config/model.py).
    throw InvalidArgument("tensor_parallel_size",
                          "Total number of attention heads (" + std::to_string(num_attention_heads) +
                              ") must be divisible by tensor parallel size (" +
                              std::to_string(tensor_parallel_size) + ").");
  }
  return num_attention_heads / tensor_parallel_size;
}

}  // namespace vllm_mem
