/*!
 * \file core/kv_cache/kv_cache_capacity.cc
 * \brief From per-worker bytes to engine-wide blocks, tokens and concurrency: vLLM's
 *        get_kv_cache_configs (per-worker check and block count, then the min over workers,
 *        vllm/v1/core/kv_cache_utils.py) on top of the specs and groups of this core.
 */
#include "vllm_mem/kv_cache/kv_cache_capacity.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <utility>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/kv_cache/kv_cache_groups.h"
#include "vllm_mem/kv_cache/kv_cache_spec.h"
#include "core/model/parallelism.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

constexpr int64_t kDefaultBlockSizeTokens = 16;     // vLLM's DEFAULT_BLOCK_SIZE
constexpr int64_t kDefaultMlaBlockSizeTokens = 64;  // FlashMLA's page (Hopper's MLA backend)
constexpr int64_t kDefaultMaxNumBatchedTokens = 8192;

const char* const kNoMemoryMessage =
    "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the "
    "engine (this flag also controls CPU memory reservation on the CPU backend, despite its name). See "
    "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.";

/*! What every worker of one pipeline rank holds (its tensor ranks are alike). */
struct RankKv {
  std::vector<LayerKvSpec> layers;         //!< its layers' own specs (what the check sums)
  std::vector<KvCacheGroupSpec> groups;    //!< the global groups projected onto it
  int64_t needed_bytes = 0;                //!< LayerSumBytes at the plan's shape
};

/*! One distinct worker: a pipeline rank with a budget. Workers of the same rank and budget are
 *  the same computation, so they are kept once (a worker per TP rank made TP 2^20 cost 17 s
 *  and 6.7 GB before the bound of vllm_mem/base/limits.h, and is still repeated work). */
struct Worker {
  int64_t available_bytes = 0;
  const RankKv* rank = nullptr;  //!< into KvPlan::ranks (never resized after MakePlan)
  const std::vector<LayerKvSpec>& layers() const { return rank->layers; }
  const std::vector<KvCacheGroupSpec>& groups() const { return rank->groups; }
};

/*! Everything the three entry points share, derived once from the inputs. */
struct KvPlan {
  KvCacheDType dtype;
  KvRequestShape shape;
  KvCacheGrouping grouping;
  std::vector<RankKv> ranks;           //!< one per pipeline rank
  std::vector<Worker> workers;         //!< distinct workers, in first-seen worker order
  std::vector<size_t> worker_of;       //!< for each of the tp * pp workers, its entry in workers
  int64_t default_block_size = 0;
  KvPlan() = default;
  KvPlan(const KvPlan&) = delete;  // workers point into ranks
  KvPlan& operator=(const KvPlan&) = delete;
};

int64_t LayerSumBytes(const std::vector<LayerKvSpec>& layers, const KvRequestShape& shape);

void MakePlan(KvPlan& plan, const ModelSpec& spec, const std::vector<int64_t>& available,
              const KvCacheOptions& o) {
  RequirePositiveAtMost(o.max_model_len, kMaxModelLenTokens, "max_model_len", "vllm_mem/base/limits.h");
  ValidateBlockSize(o.block_size, "block_size");
  RequireNonNegative(o.max_num_batched_tokens, "max_num_batched_tokens");
  RequireAtMost(o.max_num_batched_tokens, kMaxNumBatchedTokens, "max_num_batched_tokens", "vllm_mem/base/limits.h");
  RequirePositiveAtMost(o.max_concurrent_batches, kMaxNumSeqs, "max_concurrent_batches", "vllm_mem/base/limits.h");
  RequireNonNegative(o.num_gpu_blocks_override, "num_gpu_blocks_override");
  ValidateParallelism(spec.num_layers, o.tensor_parallel_size, o.pipeline_parallel_size);
  // vLLM refuses a TP size that does not divide the query heads before any sizing; without
  // this, a split of 32 heads over 3 ranks was sized as if it existed.
  AttentionHeadsPerRank(spec.num_attention_heads, o.tensor_parallel_size);
  if (static_cast<int64_t>(spec.layers.size()) != spec.num_layers) {
    throw InvalidArgument("layers", "the model spec must list num_layers layers");
  }
  const int64_t tp = o.tensor_parallel_size;
  const int64_t pp = o.pipeline_parallel_size;
  const int64_t world = CheckedMul(tp, pp, "tensor_parallel_size");
  const int64_t n = static_cast<int64_t>(available.size());
  if (n != 1 && n != pp && n != world) {
    throw InvalidArgument("available_bytes", "must hold 1 value, one per pipeline rank (" + std::to_string(pp) +
                                                 ") or one per worker (" + std::to_string(world) + "), got " +
                                                 std::to_string(n));
  }

  const DType model_dtype = ResolveModelDType(o.model_dtype, spec.dtype, "dtype");
  // A checkpoint with KV scales turns "auto" into fp8 (vLLM attention.py).
  const std::string requested =
      (o.kv_cache_dtype == "auto" && !spec.checkpoint_kv_cache_dtype.empty()) ? spec.checkpoint_kv_cache_dtype
                                                                             : o.kv_cache_dtype;
  plan.dtype = ResolveKvCacheDType(requested, model_dtype, "kv_cache_dtype");
  plan.default_block_size = spec.mla ? kDefaultMlaBlockSizeTokens : kDefaultBlockSizeTokens;
  plan.shape.max_model_len = o.max_model_len;
  plan.shape.max_num_batched_tokens = o.max_num_batched_tokens > 0 ? o.max_num_batched_tokens
                                                                   : kDefaultMaxNumBatchedTokens;
  plan.shape.max_concurrent_batches = o.max_concurrent_batches;
  plan.shape.cap_sliding_window_at_full = o.cap_sliding_window_at_full;

  KvSpecBuildOptions build;
  build.block_size_tokens = o.block_size > 0 ? o.block_size : plan.default_block_size;
  build.dtype = plan.dtype;
  build.tensor_parallel_size = tp;
  // Every tensor rank builds the same specs, so the model's layers are built once.
  const std::vector<LayerKvSpec> all = BuildLayerKvSpecs(spec, build, 0, spec.num_layers);
  const bool chunked = std::any_of(all.begin(), all.end(), [](const LayerKvSpec& l) {
    return std::holds_alternative<ChunkedLocalKvSpec>(l.spec);
  });
  const bool disable_hybrid = o.disable_hybrid_kv_cache_manager || (chunked && !o.allow_chunked_local_with_hybrid);
  plan.grouping = GetKvCacheGroups(all, disable_hybrid);

  plan.ranks.resize(static_cast<size_t>(pp));
  for (int64_t r = 0; r < pp; ++r) {
    const auto [first, last] = PipelineLayerRange(spec.num_layers, r, pp);
    RankKv& rank = plan.ranks[static_cast<size_t>(r)];
    for (const LayerKvSpec& l : all) {
      if (l.layer_index >= first && l.layer_index < last) rank.layers.push_back(l);
    }
    rank.groups = ProjectKvCacheGroupsToWorker(plan.grouping.groups, first, last);
    rank.needed_bytes = LayerSumBytes(rank.layers, plan.shape);
  }
  // Workers are rank-major by pp; identical (rank, budget) pairs share one entry.
  std::map<std::pair<int64_t, int64_t>, size_t> seen;
  plan.worker_of.reserve(static_cast<size_t>(world));
  for (int64_t w = 0; w < world; ++w) {
    const int64_t pp_rank = w / tp;
    const int64_t bytes = available[static_cast<size_t>(n == 1 ? 0 : (n == pp ? pp_rank : w))];
    auto [it, inserted] = seen.try_emplace({pp_rank, bytes}, plan.workers.size());
    if (inserted) plan.workers.push_back(Worker{bytes, &plan.ranks[static_cast<size_t>(pp_rank)]});
    plan.worker_of.push_back(it->second);
  }
}

/*! The bytes a worker plans with: num_gpu_blocks_override * bytes per block when overridden, so
 *  that the check and the auto-fit see the capacity the override gives. */
int64_t PlannedBytes(const Worker& w, const KvCacheOptions& o) {
  if (o.num_gpu_blocks_override > 0) {
    return CheckedMul(o.num_gpu_blocks_override, WorkerBytesPerBlock(w.groups()), "num_gpu_blocks_override");
  }
  return w.available_bytes;
}

/*! vLLM's max_memory_usage_bytes over a worker's layers: the plain sum, no group padding. */
int64_t LayerSumBytes(const std::vector<LayerKvSpec>& layers, const KvRequestShape& shape) {
  int64_t sum = 0;
  for (const LayerKvSpec& l : layers) sum = CheckedAdd(sum, MaxMemoryUsageBytes(l.spec, shape), "kv_cache_bytes");
  return sum;
}

/*! The binary search of estimate_max_model_len: the largest L in [1, upper] with fits(L). */
int64_t LargestFitting(int64_t upper, const std::function<bool(int64_t)>& fits) {
  if (!fits(1)) return 0;
  int64_t left = 1, right = upper, result = 1;
  while (left <= right) {
    const int64_t mid = left + (right - left) / 2;
    if (fits(mid)) {
      result = mid;
      left = mid + 1;
    } else {
      right = mid - 1;
    }
  }
  return result;
}

int64_t EstimateForWorker(const Worker& w, int64_t available_bytes, const KvRequestShape& shape) {
  return LargestFitting(shape.max_model_len, [&](int64_t len) {
    KvRequestShape s = shape;
    s.max_model_len = len;
    return LayerSumBytes(w.layers(), s) <= available_bytes;
  });
}

/*! Per pipeline rank, its worker with the smallest planned budget: a max_model_len that fits
 *  it fits every worker of the rank (the estimates are monotone in the budget), so the
 *  searches run once per rank, not once per worker. */
std::vector<std::pair<const Worker*, int64_t>> TightestWorkerPerRank(const KvPlan& plan, const KvCacheOptions& o) {
  std::map<const RankKv*, std::pair<const Worker*, int64_t>> by_rank;
  for (const Worker& w : plan.workers) {
    const int64_t bytes = PlannedBytes(w, o);
    auto [it, inserted] = by_rank.try_emplace(w.rank, &w, bytes);
    if (!inserted && bytes < it->second.second) it->second = {&w, bytes};
  }
  std::vector<std::pair<const Worker*, int64_t>> out;
  for (const auto& [rank, entry] : by_rank) out.push_back(entry);
  return out;
}

/*! _check_enough_kv_cache_memory for one worker: "" or vLLM's message. */
std::string WorkerShortfall(const Worker& w, const KvPlan& plan, const KvCacheOptions& o) {
  if (w.layers().empty()) return "";  // attention-free worker: nothing to hold
  const int64_t available = PlannedBytes(w, o);
  if (available <= 0) return kNoMemoryMessage;
  const int64_t needed = w.rank->needed_bytes;
  if (needed <= available) return "";
  const int64_t estimated = EstimateForWorker(w, available, plan.shape);
  const std::string estimated_msg =
      estimated > 0 ? "Based on the available memory, the estimated maximum model length is " +
                          std::to_string(estimated) + ". "
                    : "";
  return "To serve at least one request with the model's max seq len (" + std::to_string(plan.shape.max_model_len) +
         "), (" + FormatGib(needed) +
         " GiB KV cache is needed, which is larger than the available KV cache memory (" + FormatGib(available) +
         " GiB). " + estimated_msg +
         "Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing "
         "`max_model_len` when initializing the engine. See "
         "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.";
}

std::string PlanShortfall(const KvPlan& plan, const KvCacheOptions& o) {
  for (const Worker& w : plan.workers) {
    std::string msg = WorkerShortfall(w, plan, o);
    if (!msg.empty()) return msg;
  }
  return "";
}

KvCacheGroupInfo DescribeGroup(const KvCacheGroupSpec& g, const KvRequestShape& shape) {
  KvCacheGroupInfo info;
  info.kind = KvSpecKindName(g.spec);
  info.layer_indices = g.layer_indices;
  info.block_size = BlockSizeTokens(g.spec);
  info.page_size_bytes = PageSizeBytes(g.spec);
  info.sliding_window_tokens = SlidingWindowTokens(g.spec);
  info.max_memory_per_request_bytes = MaxMemoryUsageBytes(g.spec, shape);
  info.blocks_per_request = CeilDiv(GroupMaxMemoryUsageBytes(g, shape), GroupPageSizeBytes(g));
  info.uniform_type = g.uniform_type;
  return info;
}

}  // namespace

KvCacheCapacity ComputeKvCacheCapacity(const ModelSpec& spec, const std::vector<int64_t>& available,
                                       const KvCacheOptions& options) {
  KvPlan plan;
  MakePlan(plan, spec, available, options);
  KvCacheCapacity cap;
  cap.max_model_len = options.max_model_len;
  cap.kv_cache_dtype = plan.dtype.name;
  cap.num_padding_layers = plan.grouping.num_padding_layers;

  // Per worker: the admission check, then its own block count (get_kv_cache_configs).
  std::vector<KvCacheWorkerConfig> configs;
  std::vector<int64_t> distinct_blocks;
  for (const Worker& w : plan.workers) {
    const std::string shortfall = WorkerShortfall(w, plan, options);
    if (!shortfall.empty()) throw InsufficientMemory(shortfall);
    configs.push_back(GetKvCacheConfigFromGroups(w.groups(), w.available_bytes, options.num_gpu_blocks_override));
    distinct_blocks.push_back(configs.back().num_blocks);
  }
  cap.num_blocks_per_worker.reserve(plan.worker_of.size());
  for (size_t index : plan.worker_of) cap.num_blocks_per_worker.push_back(distinct_blocks[index]);
  // The engine keeps the smallest block count of all workers: a min over blocks, not bytes.
  const auto tightest =
      std::min_element(distinct_blocks.begin(), distinct_blocks.end()) - distinct_blocks.begin();
  const Worker& worker = plan.workers[static_cast<size_t>(tightest)];
  const KvCacheWorkerConfig& cfg = configs[static_cast<size_t>(tightest)];
  cap.num_blocks = cfg.num_blocks;
  cap.bytes_per_block = cfg.bytes_per_block;
  cap.kv_cache_bytes = CheckedMul(cap.num_blocks, cap.bytes_per_block, "kv_cache_bytes");
  cap.available_bytes = PlannedBytes(worker, options);
  cap.bytes_per_request = MaxMemoryUsageBytesFromGroups(worker.groups(), plan.shape);

  cap.max_concurrency = MaxConcurrency(cap.num_blocks, plan.grouping.groups, plan.shape);
  cap.num_tokens = KvCacheNumTokens(cap.max_concurrency, options.max_model_len);
  cap.block_size = plan.grouping.groups.empty() ? plan.default_block_size : std::numeric_limits<int64_t>::max();
  for (const KvCacheGroupSpec& g : plan.grouping.groups) {
    cap.block_size = std::min(cap.block_size, BlockSizeTokens(g.spec));
    cap.groups.push_back(DescribeGroup(g, plan.shape));
  }
  return cap;
}

namespace {

/*! The smallest of \p per_worker(plan, worker, bytes) over the tightest worker of each pipeline
 *  rank (capped at the requested max_model_len): vLLM's answer for the engine is its worst rank. */
template <typename PerWorker>
int64_t MinOverTightestWorkers(const ModelSpec& spec, const std::vector<int64_t>& available,
                               const KvCacheOptions& options, PerWorker&& per_worker) {
  KvPlan plan;
  MakePlan(plan, spec, available, options);
  int64_t best = options.max_model_len;
  for (const auto& entry : TightestWorkerPerRank(plan, options)) {
    // Named copies: clang 14 cannot capture structured bindings in a lambda.
    const Worker* w = entry.first;
    const int64_t bytes = entry.second;
    if (w->layers().empty()) continue;
    best = std::min(best, per_worker(plan, *w, bytes));
  }
  return best;
}

}  // namespace

int64_t EstimateMaxModelLen(const ModelSpec& spec, const std::vector<int64_t>& available,
                            const KvCacheOptions& options) {
  return MinOverTightestWorkers(spec, available, options,
                                [](const KvPlan& plan, const Worker& w, int64_t bytes) {
                                  return EstimateForWorker(w, bytes, plan.shape);
                                });
}

int64_t AutoFitMaxModelLen(const ModelSpec& spec, const std::vector<int64_t>& available,
                           const KvCacheOptions& options) {
  return MinOverTightestWorkers(
      spec, available, options, [](const KvPlan& plan, const Worker& w, int64_t bytes) {
        return LargestFitting(plan.shape.max_model_len, [&](int64_t len) {
          KvRequestShape s = plan.shape;
          s.max_model_len = len;
          return MaxMemoryUsageBytesFromGroups(w.groups(), s) <= bytes;
        });
      });
}

std::string KvCacheMemoryShortfall(const ModelSpec& spec, const std::vector<int64_t>& available,
                                   const KvCacheOptions& options) {
  KvPlan plan;
  MakePlan(plan, spec, available, options);
  return PlanShortfall(plan, options);
}

void CheckEnoughKvCacheMemory(const ModelSpec& spec, const std::vector<int64_t>& available,
                              const KvCacheOptions& options) {
  const std::string shortfall = KvCacheMemoryShortfall(spec, available, options);
  if (!shortfall.empty()) throw InsufficientMemory(shortfall);
}

std::vector<std::string> KvCacheLogLines(const KvCacheCapacity& capacity) {
  return {"GPU KV cache size: " + FormatThousands(capacity.num_tokens) + " tokens",
          "Maximum concurrency for " + FormatThousands(capacity.max_model_len) +
              " tokens per request: " + FormatFixed(capacity.max_concurrency, 2) + "x"};
}

}  // namespace vllm_mem
