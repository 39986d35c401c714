/*!
 * \file core/stages/rank_layout.cc
 * \brief Per-worker budgets under TP x PP and vLLM's min-over-workers KV sizing.
 */
#include "vllm_mem/stages/rank_layout.h"

#include <algorithm>
#include <string>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/memory/memory_budget.h"
#include "core/model/parallelism.h"
#include "vllm_mem/stages/stage_config.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

/*! \brief Entry \p index of a list that is either one value for all or one per item. */
int64_t PerItem(const std::vector<int64_t>& values, int64_t index, int64_t count, const char* field,
                int64_t fallback) {
  if (values.empty()) return fallback;
  if (values.size() == 1) return values.front();
  if (static_cast<int64_t>(values.size()) != count) {
    throw InvalidArgument(field, "needs one value for all or " + std::to_string(count) + " values, got " +
                                     std::to_string(values.size()));
  }
  return values[static_cast<size_t>(index)];
}

}  // namespace

RankLayout ComputeRankLayout(const ModelSpec& spec, const RankLayoutInputs& inputs) {
  const int64_t tp = inputs.weights.tensor_parallel_size;
  const int64_t pp = inputs.weights.pipeline_parallel_size;
  ValidateParallelism(spec.num_layers, tp, pp);
  ValidateUtilization(inputs.gpu_memory_utilization);
  if (inputs.total_memory_bytes_per_worker.empty()) {
    throw InvalidArgument("total_memory_bytes_per_worker", "needs the GPUs' total memory (one for all, or tp * pp)");
  }
  const int64_t world = CheckedMul(tp, pp, "tensor_parallel_size * pipeline_parallel_size");

  const WeightBreakdown weights = ComputeWeights(spec, inputs.weights);
  RankLayout layout;
  std::vector<int64_t> available;
  for (int64_t rank = 0; rank < world; ++rank) {
    WorkerLayout w;
    w.rank = rank;
    w.pp_rank = rank / tp;
    w.tp_rank = rank % tp;
    const RankWeights& rw = weights.per_pp_rank.at(static_cast<size_t>(w.pp_rank));
    w.first_layer = rw.first_layer;
    w.end_layer = rw.end_layer;
    w.holds_embedding = w.pp_rank == 0;
    w.holds_lm_head = w.pp_rank == pp - 1;
    w.total_bytes = PerItem(inputs.total_memory_bytes_per_worker, rank, world, "total_memory_bytes_per_worker", 0);
    RequirePositive(w.total_bytes, "total_memory_bytes_per_worker");
    w.budget_bytes = RequestedMemoryBytes(w.total_bytes, inputs.gpu_memory_utilization);
    w.free_bytes = PerItem(inputs.free_memory_bytes_per_worker, rank, world, "free_memory_bytes_per_worker", -1);
    w.fails_startup = w.free_bytes >= 0 && w.free_bytes < w.budget_bytes;
    w.weights_bytes = rw.total_bytes;
    w.overhead_bytes = PerItem(inputs.overhead_bytes_per_pp_rank, w.pp_rank, pp, "overhead_bytes_per_pp_rank", 0);
    RequireNonNegative(w.overhead_bytes, "overhead_bytes_per_pp_rank");
    w.available_kv_bytes = CheckedSub(CheckedSub(w.budget_bytes, w.weights_bytes, "available_kv_bytes"),
                                      w.overhead_bytes, "available_kv_bytes");
    available.push_back(w.available_kv_bytes);
    layout.workers.push_back(w);
  }

  for (const auto& w : layout.workers) {
    if (w.fails_startup) {
      layout.failure_message = "rank " + std::to_string(w.rank) + ": Free memory on device cuda:" +
                               std::to_string(w.rank) + " (" + FormatGib(w.free_bytes) + "/" +
                               FormatGib(w.total_bytes) +
                               " GiB) on startup is less than desired GPU memory utilization (" +
                               FormatUtilization(inputs.gpu_memory_utilization) + ", " + FormatGib(w.budget_bytes) +
                               " GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.";
      return layout;
    }
  }

  KvCacheOptions kv = inputs.kv;
  kv.tensor_parallel_size = tp;
  kv.pipeline_parallel_size = pp;
  try {
    layout.kv_cache = ComputeKvCacheCapacity(spec, available, kv);
  } catch (const InsufficientMemory& e) {
    layout.failure_message = e.what();
    const auto tight = std::min_element(available.begin(), available.end()) - available.begin();
    layout.tightest_rank = tight;
    layout.tightest_reason = "least KV budget: " + FormatGib(available[static_cast<size_t>(tight)]) + " GiB";
    return layout;
  }
  layout.fits = true;
  const auto& blocks = layout.kv_cache.num_blocks_per_worker;
  for (size_t i = 0; i < layout.workers.size() && i < blocks.size(); ++i) {
    WorkerLayout& w = layout.workers[i];
    w.num_blocks = blocks[i];
    w.extra_blocks = w.num_blocks - layout.kv_cache.num_blocks;  // what the min leaves unused here
  }
  layout.tightest_rank = std::min_element(blocks.begin(), blocks.end()) - blocks.begin();
  const WorkerLayout& t = layout.workers[static_cast<size_t>(layout.tightest_rank)];
  std::string role = t.holds_embedding && t.holds_lm_head ? "embedding and LM head"
                     : t.holds_embedding                  ? "the input embedding"
                     : t.holds_lm_head                    ? "the LM head and sampler"
                                                          : "middle layers only";
  layout.tightest_reason = "fewest KV blocks (" + std::to_string(t.num_blocks) + "): weights " +
                           FormatGib(t.weights_bytes) + " GiB with " + role + ", layers " +
                           std::to_string(t.first_layer) + "-" + std::to_string(t.end_layer - 1) + ", budget " +
                           FormatGib(t.budget_bytes) + " GiB";
  return layout;
}

}  // namespace vllm_mem
