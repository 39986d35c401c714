/*!
 * \file core/kv_cache/kv_cache_capacity.cc
 * \brief From per-worker bytes to engine-wide blocks, tokens and concurrency: vLLM's
 *        get_kv_cache_configs (per-worker check and block count, then the min over workers,
 *        vllm/v1/core/kv_cache_utils.py) on top of the specs and groups of this core.
 */
#include "vllm_mem/kv_cache/kv_cache_capacity.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <utility>

#include "core/base/binary_search.h"
#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/kv_cache/kv_cache_groups.h"
#include "vllm_mem/kv_cache/kv_cache_layout.h"
#include "vllm_mem/kv_cache/kv_cache_query.h"
#include "vllm_mem/kv_cache/kv_cache_spec.h"
#include "core/model/parallelism.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
/*! What a layout and the options' request shape fix, whatever the budgets (kv_cache_query.h):
 *  each pipeline rank's need and per-request bytes, the block ids a request takes and the
 *  capacity's budget-free fields. A query computes them once for every question it is asked. */
struct KvQueryFigures {
  /*! A figure computed ahead of its use, or the error computing it raised, rethrown where the
   *  figure is read: a query raises what the one-shot call raises, at the same point. */
  template <typename T>
  class Ahead {
   public:
    template <typename Compute>
    explicit Ahead(Compute&& compute) {
      try {
        value_ = compute();
      } catch (...) {
        error_ = std::current_exception();
      }
    }
    const T& get() const {
      if (error_) std::rethrow_exception(error_);
      return value_;
    }

   private:
    T value_{};
    std::exception_ptr error_;
  };

  KvRequestShape shape;
  Ahead<std::vector<int64_t>> needed_per_rank;         //!< LayerSumBytes of each rank
  std::vector<Ahead<int64_t>> request_bytes_per_rank;  //!< MaxMemoryUsageBytesFromGroups of each rank
  Ahead<int64_t> blocks_per_request;                   //!< BlocksPerRequest over the layout's groups
  Ahead<KvCacheCapacity> described;                    //!< DescribedCapacity
};

namespace {

constexpr int64_t kDefaultMaxNumBatchedTokens = 8192;

const char* const kNoMemoryMessage =
    "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the "
    "engine (this flag also controls CPU memory reservation on the CPU backend, despite its name). See "
    "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.";

/*! One distinct worker: a pipeline rank with a budget. Workers of the same rank and budget are
 *  the same computation, so they are kept once (a worker per TP rank made TP 2^20 cost 17 s
 *  and 6.7 GB before the bound of vllm_mem/base/limits.h, and is still repeated work). */
struct Worker {
  int64_t available_bytes = 0;
  const KvRankLayout* rank = nullptr;  //!< into KvPlan::layout->ranks
  int64_t needed_bytes = 0;            //!< LayerSumBytes of its rank at the plan's shape
  bool holds_layers() const { return rank->num_layers > 0; }
  const std::vector<KvCacheGroupSpec>& groups() const { return rank->groups; }
};

/*! Everything the entry points share: the model's layout (built once per layout settings, see
 *  kv_cache_layout.h) and what this call's budgets and shape add to it. */
struct KvPlan {
  std::shared_ptr<const KvCacheLayout> layout;
  KvRequestShape shape;
  const KvQueryFigures* figures = nullptr;  //!< a query's figures at this shape; null: computed per call
  std::vector<Worker> workers;         //!< distinct workers, in first-seen worker order
  std::vector<size_t> worker_of;       //!< for each of the tp * pp workers, its entry in workers
};

int64_t LayerSumBytes(const KvRankLayout& rank, const KvRequestShape& shape);

/*! The shape of one max_model_len request under \p o (what bounds its KV need). */
KvRequestShape ShapeOf(const KvCacheOptions& o) {
  KvRequestShape shape;
  shape.max_model_len = o.max_model_len;
  shape.max_num_batched_tokens = o.max_num_batched_tokens > 0 ? o.max_num_batched_tokens : kDefaultMaxNumBatchedTokens;
  shape.max_concurrent_batches = o.max_concurrent_batches;
  shape.cap_sliding_window_at_full = o.cap_sliding_window_at_full;
  shape.context_parallel_size = o.decode_context_parallel_size;
  return shape;
}

/*! What one request needs on each pipeline rank's workers. */
std::vector<int64_t> NeededPerRank(const KvCacheLayout& layout, const KvRequestShape& shape) {
  std::vector<int64_t> needed;
  needed.reserve(layout.ranks.size());
  for (const KvRankLayout& rank : layout.ranks) needed.push_back(LayerSumBytes(rank, shape));
  return needed;
}

/*! The per-call settings, checked in the order vLLM's config checks them. */
void ValidateCallOptions(const KvCacheOptions& o) {
  RequirePositiveAtMost(o.max_model_len, kMaxModelLenTokens, "max_model_len", "vllm_mem/base/limits.h");
  ValidateBlockSize(o.block_size, "block_size");
  RequireNonNegative(o.max_num_batched_tokens, "max_num_batched_tokens");
  RequireAtMost(o.max_num_batched_tokens, kMaxNumBatchedTokens, "max_num_batched_tokens", "vllm_mem/base/limits.h");
  // Bounded like pipeline_parallel_size (one batch per stage): plan_request.h's row, whose
  // table Python and the plan check first; this guards the kv_cache area's C++ callers.
  RequirePositiveAtMost(o.max_concurrent_batches, kMaxPipelineParallelSize, "max_concurrent_batches",
                        "batches in flight: one per pipeline stage");
  RequireNonNegative(o.num_gpu_blocks_override, "num_gpu_blocks_override");
}

/*! Decode context parallelism, with vLLM's own checks and messages: ParallelConfig (DCP reuses
 *  the GPUs of a TP group, so it must divide TP) and ModelConfig.verify_with_parallel_config
 *  (GQA / MQA models: only KV heads that TP duplicates can be sharded along tokens). MLA models
 *  (one latent KV head) may use up to TP. */
void ValidateDecodeContextParallel(const ModelSpec& spec, const KvCacheOptions& o) {
  const int64_t dcp = o.decode_context_parallel_size;
  RequirePositiveAtMost(dcp, kMaxTensorParallelSize, "decode_context_parallel_size", "vllm_mem/base/limits.h");
  const int64_t tp = o.tensor_parallel_size;
  if (tp % dcp != 0) {
    // vLLM's message, its missing space included.
    throw InvalidArgument("decode_context_parallel_size", "tp_size=" + std::to_string(tp) +
                                                              " must be divisible bydcp_size=" + std::to_string(dcp) + ".");
  }
  if (dcp == 1 || spec.UsesMla()) return;
  const int64_t kv = spec.num_kv_heads;
  if (kv <= 0) return;  // attention-free: nothing to shard, nothing vLLM checks
  if (tp <= kv) {
    throw InvalidArgument("decode_context_parallel_size",
                          "tensor parallel size " + std::to_string(tp) + " must be greater than total num kv heads " +
                              std::to_string(kv) + " when enable decode context parallel for GQA/MQA");
  }
  const int64_t max_dcp = tp / kv;
  if (dcp > max_dcp) {
    throw InvalidArgument("decode_context_parallel_size",
                          "decode context parallel size must less than or equal to (tensor parallel size " +
                              std::to_string(tp) + " // total num kv heads " + std::to_string(kv) + ") = " +
                              std::to_string(max_dcp) + ", but got " + std::to_string(dcp));
  }
  const int64_t q_per_kv = spec.num_attention_heads / kv;
  if (q_per_kv % dcp != 0) {
    throw InvalidArgument("decode_context_parallel_size",
                          "Total number of q per kv attn heads (" + std::to_string(q_per_kv) +
                              ") must be divisible by dcp world size when enable decode context parallel for GQA (" +
                              std::to_string(dcp) + ").");
  }
}

void AddWorkers(KvPlan& plan, const std::vector<int64_t>& available, const KvCacheOptions& o);

/*! \p cache: the model's cached layouts, or null to build the layout for this call only. */
void MakePlan(KvPlan& plan, const ModelSpec& spec, const std::vector<int64_t>& available,
              const KvCacheOptions& o, const KvCacheLayoutCache* cache) {
  ValidateCallOptions(o);
  ValidateDecodeContextParallel(spec, o);
  plan.layout = cache != nullptr ? cache->Get(o, available.size()) : BuildKvCacheLayout(spec, o, available.size());
  plan.shape = ShapeOf(o);
  AddWorkers(plan, available, o);
}

/*! The call's distinct workers, on plan.layout at plan.shape. */
void AddWorkers(KvPlan& plan, const std::vector<int64_t>& available, const KvCacheOptions& o) {
  const int64_t tp = o.tensor_parallel_size;
  const int64_t pp = o.pipeline_parallel_size;
  const int64_t world = tp * pp;  // bounded by BuildKvCacheLayout's checks
  const int64_t n = static_cast<int64_t>(available.size());

  std::vector<int64_t> computed;
  if (plan.figures == nullptr) computed = NeededPerRank(*plan.layout, plan.shape);
  const std::vector<int64_t>& needed = plan.figures != nullptr ? plan.figures->needed_per_rank.get() : computed;
  // Workers are rank-major by pp; identical (rank, budget) pairs share one entry.
  auto add_worker = [&](int64_t pp_rank, int64_t bytes) {
    plan.workers.push_back(Worker{bytes, &plan.layout->ranks[static_cast<size_t>(pp_rank)],
                                  needed[static_cast<size_t>(pp_rank)]});
  };
  plan.worker_of.reserve(static_cast<size_t>(world));
  if (n == 1 || n == pp) {
    // One budget per rank: the distinct workers are the ranks, in rank order.
    for (int64_t r = 0; r < pp; ++r) add_worker(r, available[static_cast<size_t>(n == 1 ? 0 : r)]);
    for (int64_t w = 0; w < world; ++w) plan.worker_of.push_back(static_cast<size_t>(w / tp));
    return;
  }
  std::map<std::pair<int64_t, int64_t>, size_t> seen;
  for (int64_t w = 0; w < world; ++w) {
    const int64_t pp_rank = w / tp;
    const int64_t bytes = available[static_cast<size_t>(w)];
    auto [it, inserted] = seen.try_emplace({pp_rank, bytes}, plan.workers.size());
    if (inserted) add_worker(pp_rank, bytes);
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
int64_t LayerSumBytesInOrder(const std::vector<LayerKvSpec>& layers, const KvRequestShape& shape) {
  int64_t sum = 0;
  for (const LayerKvSpec& l : layers) sum = CheckedAdd(sum, MaxMemoryUsageBytes(l.spec, shape), "kv_cache_bytes");
  return sum;
}

/*! The same sum over the rank's distinct specs (count x bytes each): O(distinct specs), not
 *  O(layers). When a term would overflow or throw, the layer-by-layer sum runs instead, so the
 *  error is the one it raises, operands included. */
int64_t LayerSumBytes(const KvRankLayout& rank, const KvRequestShape& shape) {
  __int128 sum = 0;
  bool exact = true;
  try {
    for (const auto& [spec, count] : rank.layer_specs) {
      sum += static_cast<__int128>(MaxMemoryUsageBytes(spec, shape)) * count;
      if (sum > std::numeric_limits<int64_t>::max()) {
        exact = false;
        break;
      }
    }
  } catch (const std::exception&) {
    exact = false;
  }
  return exact ? static_cast<int64_t>(sum) : LayerSumBytesInOrder(rank.layers, shape);
}

/*! The binary search of estimate_max_model_len: the largest L in [1, upper] with fits(L), 0 when none. */
template <typename Fits>
int64_t LargestFitting(int64_t upper, Fits&& fits) {
  return LargestHolding(1, upper, fits).value_or(0);
}

int64_t EstimateForWorker(const Worker& w, int64_t available_bytes, const KvRequestShape& shape) {
  const auto fits = [&](int64_t len) {
    KvRequestShape s = shape;
    s.max_model_len = len;
    return LayerSumBytes(*w.rank, s) <= available_bytes;
  };
  // The common answer, the whole range (a plan's search up to the model's limit on a roomy
  // GPU), in one evaluation instead of log2(max_model_len): the need grows with the length,
  // so the search would return the upper end too.
  if (shape.max_model_len >= 1 && fits(shape.max_model_len)) return shape.max_model_len;
  return LargestFitting(shape.max_model_len, fits);
}

/*! Per pipeline rank, its worker with the smallest planned budget: a max_model_len that fits
 *  it fits every worker of the rank (the estimates are monotone in the budget), so the
 *  searches run once per rank, not once per worker. */
std::vector<std::pair<const Worker*, int64_t>> TightestWorkerPerRank(const KvPlan& plan, const KvCacheOptions& o) {
  std::map<const KvRankLayout*, std::pair<const Worker*, int64_t>> by_rank;
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
  if (!w.holds_layers()) return "";  // attention-free worker: nothing to hold
  const int64_t available = PlannedBytes(w, o);
  if (available <= 0) return kNoMemoryMessage;
  const int64_t needed = w.needed_bytes;
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

/*! The layout's description of group \p index with the shape-dependent figures added. */
KvCacheGroupInfo DescribeGroup(const KvCacheLayout& layout, const KvRequestShape& shape, size_t index) {
  const KvCacheGroupSpec& g = layout.grouping.groups[index];
  KvCacheGroupInfo info = layout.group_infos[index];
  info.max_memory_per_request_bytes = MaxMemoryUsageBytes(g.spec, shape);
  info.blocks_per_request = CeilDiv(GroupMaxMemoryUsageBytes(g, shape), GroupPageSizeBytes(g));
  return info;
}

/*! The hybrid-model figures (mamba_state.h). */
void AddHybridFigures(KvCacheCapacity& cap, const KvCacheLayout& layout) {
  cap.mamba_state_bytes = layout.mamba_state_bytes;
  if (layout.hybrid_alignment) {
    cap.mamba_page_size_padded_bytes = layout.hybrid_alignment->mamba_page_size_padded_bytes;
    cap.mamba_padding_percent = layout.hybrid_alignment->mamba_padding_percent;
    cap.attention_block_size = layout.hybrid_alignment->attention_block_size_tokens;
    cap.hybrid_log_lines = layout.hybrid_alignment->log_lines;
  }
}

/*! The token count of releases that printed num_blocks // len(groups) * min block size
 *  (KvCacheOptions::kv_tokens_from_concurrency). */
void UseGroupedTokenCount(KvCacheCapacity& cap, const KvCacheOptions& options) {
  if (!options.kv_tokens_from_concurrency && !cap.groups.empty()) {
    cap.num_tokens = CheckedMul(cap.num_blocks / static_cast<int64_t>(cap.groups.size()), cap.block_size, "num_tokens");
    // "Multiplying the GPU KV cache size by the dcp_world_size N." (the concurrency-based count
    // of later releases already has it: each spec's per-request need is divided by DCP).
    if (options.decode_context_parallel_size > 1) {
      cap.num_tokens = CheckedMul(cap.num_tokens, options.decode_context_parallel_size, "num_tokens");
    }
  }
}

/*! The smallest block size over the groups (a Mamba group in mode "none" has vLLM's
 *  mamba_block_size = max_model_len), and the groups described at \p shape. */
int64_t DescribeGroups(const KvCacheLayout& layout, const KvRequestShape& shape, const KvCacheOptions& options,
                       std::vector<KvCacheGroupInfo>& groups) {
  int64_t block_size =
      layout.grouping.groups.empty() ? layout.default_block_size : std::numeric_limits<int64_t>::max();
  groups.reserve(layout.grouping.groups.size());
  for (size_t i = 0; i < layout.grouping.groups.size(); ++i) {
    groups.push_back(DescribeGroup(layout, shape, i));
    if (groups.back().block_size == 0) groups.back().block_size = options.max_model_len;
    block_size = std::min(block_size, groups.back().block_size);
  }
  return block_size;
}

/*! The capacity's fields no budget changes: what the layout resolved and the groups at \p shape. */
KvCacheCapacity DescribedCapacity(const KvCacheLayout& layout, const KvRequestShape& shape,
                                  const KvCacheOptions& options) {
  KvCacheCapacity cap;
  cap.max_model_len = options.max_model_len;
  cap.kv_cache_dtype = layout.dtype.name;
  cap.num_padding_layers = layout.grouping.num_padding_layers;
  cap.block_size = DescribeGroups(layout, shape, options, cap.groups);
  AddHybridFigures(cap, layout);
  return cap;
}

KvCacheGeometry GeometryOf(const KvPlan& plan, const KvCacheOptions& options) {
  KvCacheGeometry g;
  if (plan.figures != nullptr) {
    const KvCacheCapacity& described = plan.figures->described.get();
    g.block_size = described.block_size;
    g.groups = described.groups;
  } else {
    g.block_size = DescribeGroups(*plan.layout, plan.shape, options, g.groups);
  }
  for (const KvCacheGroupInfo& info : g.groups) g.blocks_per_request += info.blocks_per_request;
  g.bytes_per_block.reserve(plan.layout->ranks.size());
  // What one block id costs a rank's worker; KvCacheWorkerBlocks refuses a grouped rank whose
  // blocks cost nothing, as the capacity does.
  for (const KvRankLayout& rank : plan.layout->ranks) {
    g.bytes_per_block.push_back(KvCacheWorkerBlocks(rank.groups, 0).bytes_per_block);
  }
  return g;
}

KvCacheCapacity CapacityOf(const KvPlan& plan, const KvCacheOptions& options) {
  const KvCacheLayout& layout = *plan.layout;
  const KvQueryFigures* figures = plan.figures;
  // Per worker: the admission check, then its own block count (get_kv_cache_configs). The
  // engine keeps the smallest block count of all workers (the first of equals): a min over
  // blocks, not bytes.
  std::vector<int64_t> distinct_blocks;
  distinct_blocks.reserve(plan.workers.size());
  size_t tightest = 0;
  KvCacheWorkerConfig cfg;
  for (size_t i = 0; i < plan.workers.size(); ++i) {
    const Worker& w = plan.workers[i];
    const std::string shortfall = WorkerShortfall(w, plan, options);
    if (!shortfall.empty()) throw InsufficientMemory(shortfall);
    KvCacheWorkerConfig config = KvCacheWorkerBlocks(w.groups(), w.available_bytes, options.num_gpu_blocks_override);
    distinct_blocks.push_back(config.num_blocks);
    if (i == 0 || config.num_blocks < cfg.num_blocks) {
      tightest = i;
      cfg = std::move(config);
    }
  }
  const Worker& worker = plan.workers[tightest];
  const int64_t kv_cache_bytes = CheckedMul(cfg.num_blocks, cfg.bytes_per_block, "kv_cache_bytes");
  const int64_t available_bytes = PlannedBytes(worker, options);
  const size_t rank = static_cast<size_t>(worker.rank - layout.ranks.data());
  const int64_t bytes_per_request = figures != nullptr ? figures->request_bytes_per_rank[rank].get()
                                                       : MaxMemoryUsageBytesFromGroups(worker.groups(), plan.shape);
  const double max_concurrency = MaxConcurrencyOf(
      cfg.num_blocks, figures != nullptr ? figures->blocks_per_request.get()
                                         : BlocksPerRequest(layout.grouping.groups, plan.shape));
  const int64_t num_tokens = KvCacheNumTokens(max_concurrency, options.max_model_len);

  KvCacheCapacity cap = figures != nullptr ? figures->described.get() : DescribedCapacity(layout, plan.shape, options);
  cap.num_blocks = cfg.num_blocks;
  cap.bytes_per_block = cfg.bytes_per_block;
  cap.kv_cache_bytes = kv_cache_bytes;
  cap.available_bytes = available_bytes;
  cap.bytes_per_request = bytes_per_request;
  cap.max_concurrency = max_concurrency;
  cap.num_tokens = num_tokens;
  cap.num_blocks_per_worker.reserve(plan.worker_of.size());
  for (size_t index : plan.worker_of) cap.num_blocks_per_worker.push_back(distinct_blocks[index]);
  UseGroupedTokenCount(cap, options);
  return cap;
}

/*! The smallest of \p per_worker(plan, worker, bytes) over the tightest worker of each pipeline
 *  rank (capped at the requested max_model_len): vLLM's answer for the engine is its worst rank. */
template <typename PerWorker>
int64_t MinOverTightestWorkers(const KvPlan& plan, const KvCacheOptions& options, PerWorker&& per_worker) {
  int64_t best = options.max_model_len;
  for (const auto& entry : TightestWorkerPerRank(plan, options)) {
    // Named copies: clang 14 cannot capture structured bindings in a lambda.
    const Worker* w = entry.first;
    const int64_t bytes = entry.second;
    if (!w->holds_layers()) continue;
    best = std::min(best, per_worker(plan, *w, bytes));
  }
  return best;
}

int64_t EstimateOf(const KvPlan& plan, const KvCacheOptions& options) {
  return MinOverTightestWorkers(plan, options, [](const KvPlan& p, const Worker& w, int64_t bytes) {
    return EstimateForWorker(w, bytes, p.shape);
  });
}

int64_t AutoFitOf(const KvPlan& plan, const KvCacheOptions& options) {
  return MinOverTightestWorkers(plan, options, [](const KvPlan& p, const Worker& w, int64_t bytes) {
    return LargestFitting(p.shape.max_model_len, [&](int64_t len) {
      KvRequestShape s = p.shape;
      s.max_model_len = len;
      return MaxMemoryUsageBytesFromGroups(w.groups(), s) <= bytes;
    });
  });
}

/*! One entry point on either a cached layout (\p cache) or one built for this call. */
template <typename Body>
auto WithPlan(const ModelSpec& spec, const KvCacheLayoutCache* cache, const std::vector<int64_t>& available,
              const KvCacheOptions& options, Body&& body) {
  KvPlan plan;
  MakePlan(plan, spec, available, options, cache);
  return body(plan);
}

}  // namespace

KvCacheCapacity ComputeKvCacheCapacity(const ModelSpec& spec, const std::vector<int64_t>& available,
                                       const KvCacheOptions& options) {
  return WithPlan(spec, nullptr, available, options, [&](const KvPlan& p) { return CapacityOf(p, options); });
}
KvCacheCapacity ComputeKvCacheCapacity(const KvCacheLayoutCache& cache, const std::vector<int64_t>& available,
                                       const KvCacheOptions& options) {
  return WithPlan(cache.spec(), &cache, available, options, [&](const KvPlan& p) { return CapacityOf(p, options); });
}

int64_t EstimateMaxModelLen(const ModelSpec& spec, const std::vector<int64_t>& available,
                            const KvCacheOptions& options) {
  return WithPlan(spec, nullptr, available, options, [&](const KvPlan& p) { return EstimateOf(p, options); });
}
int64_t EstimateMaxModelLen(const KvCacheLayoutCache& cache, const std::vector<int64_t>& available,
                            const KvCacheOptions& options) {
  return WithPlan(cache.spec(), &cache, available, options, [&](const KvPlan& p) { return EstimateOf(p, options); });
}

int64_t AutoFitMaxModelLen(const ModelSpec& spec, const std::vector<int64_t>& available,
                           const KvCacheOptions& options) {
  return WithPlan(spec, nullptr, available, options, [&](const KvPlan& p) { return AutoFitOf(p, options); });
}
int64_t AutoFitMaxModelLen(const KvCacheLayoutCache& cache, const std::vector<int64_t>& available,
                           const KvCacheOptions& options) {
  return WithPlan(cache.spec(), &cache, available, options, [&](const KvPlan& p) { return AutoFitOf(p, options); });
}

std::string KvCacheMemoryShortfall(const ModelSpec& spec, const std::vector<int64_t>& available,
                                   const KvCacheOptions& options) {
  return WithPlan(spec, nullptr, available, options, [&](const KvPlan& p) { return PlanShortfall(p, options); });
}
std::string KvCacheMemoryShortfall(const KvCacheLayoutCache& cache, const std::vector<int64_t>& available,
                                   const KvCacheOptions& options) {
  return WithPlan(cache.spec(), &cache, available, options,
                  [&](const KvPlan& p) { return PlanShortfall(p, options); });
}

KvCacheGeometry ComputeKvCacheGeometry(const KvCacheLayoutCache& cache, const KvCacheOptions& options) {
  return KvCacheQuery(cache, options, static_cast<size_t>(std::max<int64_t>(1, options.pipeline_parallel_size)))
      .Geometry();
}

KvCacheQuery::KvCacheQuery(const KvCacheLayoutCache& cache, const KvCacheOptions& options, size_t num_available)
    : options_(options) {
  ValidateCallOptions(options_);
  ValidateDecodeContextParallel(cache.spec(), options_);
  layout_ = cache.Get(options_, num_available);
  figures_ = FiguresOf(*layout_, options_);
}

std::shared_ptr<const KvQueryFigures> KvCacheQuery::FiguresOf(const KvCacheLayout& layout,
                                                               const KvCacheOptions& options) {
  const KvRequestShape shape = ShapeOf(options);
  using Ahead = KvQueryFigures::Ahead<int64_t>;
  std::vector<Ahead> request_bytes;
  request_bytes.reserve(layout.ranks.size());
  for (const KvRankLayout& rank : layout.ranks) {
    request_bytes.emplace_back([&] { return MaxMemoryUsageBytesFromGroups(rank.groups, shape); });
  }
  return std::make_shared<const KvQueryFigures>(KvQueryFigures{
      shape,
      KvQueryFigures::Ahead<std::vector<int64_t>>([&] { return NeededPerRank(layout, shape); }),
      std::move(request_bytes),
      Ahead([&] { return BlocksPerRequest(layout.grouping.groups, shape); }),
      KvQueryFigures::Ahead<KvCacheCapacity>([&] { return DescribedCapacity(layout, shape, options); }),
  });
}

namespace {

/*! The query's layout with \p available's workers (their count checked, as Get checks it), at
 *  the query's shape (\p figures) or at \p o's (null figures). */
KvPlan QueryPlan(const std::shared_ptr<const KvCacheLayout>& layout, const std::vector<int64_t>& available,
                 const KvCacheOptions& o, const KvQueryFigures* figures) {
  CheckAvailableCount(available.size(), o.tensor_parallel_size, o.pipeline_parallel_size);
  KvPlan plan;
  plan.layout = layout;
  plan.figures = figures;
  plan.shape = figures != nullptr ? figures->shape : ShapeOf(o);
  AddWorkers(plan, available, o);
  return plan;
}

}  // namespace

KvCacheGeometry KvCacheQuery::Geometry() const {
  // A budget per pipeline rank: the geometry looks at none of them.
  const std::vector<int64_t> no_budget(layout_->ranks.size(), 0);
  return GeometryOf(QueryPlan(layout_, no_budget, options_, figures_.get()), options_);
}

std::string KvCacheQuery::Shortfall(const std::vector<int64_t>& available) const {
  return PlanShortfall(QueryPlan(layout_, available, options_, figures_.get()), options_);
}

KvCacheCapacity KvCacheQuery::Capacity(const std::vector<int64_t>& available) const {
  return CapacityOf(QueryPlan(layout_, available, options_, figures_.get()), options_);
}

int64_t KvCacheQuery::EstimateMaxModelLen(const std::vector<int64_t>& available, int64_t max_model_len) const {
  KvCacheOptions at = options_;
  at.max_model_len = max_model_len;
  ValidateCallOptions(at);  // the new length's bound; the other settings passed in the constructor
  // Another length, another shape: the query's figures do not apply.
  return EstimateOf(QueryPlan(layout_, available, at, nullptr), at);
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

std::vector<std::string> KvCacheLogLinesFor(const KvCacheCapacity& capacity, KvLogFormat format,
                                         int64_t cpu_swap_bytes) {
  const int64_t len = capacity.max_model_len;
  const auto concurrency_line = [&](const std::string& len_text, double concurrency) {
    return "Maximum concurrency for " + len_text + " tokens per request: " + FormatFixed(concurrency, 2) + "x";
  };
  // Older releases counted tokens from blocks; concurrency followed from those tokens.
  const int64_t block_tokens = CheckedMul(capacity.num_blocks, capacity.block_size, "num_tokens");
  const double block_concurrency = len > 0 ? static_cast<double>(block_tokens) / static_cast<double>(len) : 0.0;
  switch (format) {
    case KvLogFormat::kV0Blocks: {
      const int64_t cpu_blocks = capacity.bytes_per_block > 0 ? cpu_swap_bytes / capacity.bytes_per_block : 0;
      return {"# GPU blocks: " + std::to_string(capacity.num_blocks) + ", # CPU blocks: " + std::to_string(cpu_blocks),
              concurrency_line(std::to_string(len), block_concurrency)};
    }
    case KvLogFormat::kBlockTokens:
      return {"GPU KV cache size: " + FormatThousands(block_tokens) + " tokens",
              concurrency_line(FormatThousands(len), block_concurrency)};
    case KvLogFormat::kGroupedTokens: {
      const int64_t groups = std::max<int64_t>(1, static_cast<int64_t>(capacity.groups.size()));
      const int64_t tokens = CheckedMul(capacity.num_blocks / groups, capacity.block_size, "num_tokens");
      return {"GPU KV cache size: " + FormatThousands(tokens) + " tokens",
              concurrency_line(FormatThousands(len), capacity.max_concurrency)};
    }
    case KvLogFormat::kCombinedLine:
      return {"GPU KV cache size: " + FormatThousands(capacity.num_tokens) + " tokens, " +
              concurrency_line(FormatThousands(len), capacity.max_concurrency)};
    case KvLogFormat::kConcurrencyTokens:
      return {"GPU KV cache size: " + FormatThousands(capacity.num_tokens) + " tokens",
              concurrency_line(FormatThousands(len), capacity.max_concurrency)};
  }
  return {};
}

}  // namespace vllm_mem
