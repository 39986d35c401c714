/*!
 * \file core/plan/plan_sweep.cc
 * \brief The cross product of plan settings, with the budget-independent terms cached.
 */
#include "vllm_mem/plan/plan_sweep.h"

#include <algorithm>
#include <map>
#include <optional>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/kv_cache_groups.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/plan/vllm_version_profile.h"

namespace vllm_mem {
namespace {

template <typename T>
std::vector<T> OrBase(const std::vector<T>& axis, const T& base) {
  return axis.empty() ? std::vector<T>{base} : axis;
}

// What a row needs from an evaluated plan shape: per-rank terms that do not depend on the
// GPU's size or the utilization.
struct Shape {
  bool valid = false;
  bool fast = false;  // single uniform KV group: blocks follow from bytes per block
  std::vector<int64_t> weights, activation, non_torch, non_kv, cudagraph, cudagraph_applied, bytes_per_block,
      bytes_per_request;
  int64_t max_model_len = 0;  // resolved (0 in the inputs: the model's own)
  int64_t worst_weights = 0, worst_non_kv = 0;
  int64_t blocks_per_request = 0, block_size = 0, model_max_model_len = 0;
  int64_t baseline = 0;
};

Shape MakeShape(const ModelSpec& spec, const PlanInputs& in) {
  Shape s;
  std::optional<StartupPlan> plan;
  try {
    plan = EvaluatePlan(spec, in);
  } catch (const InvalidArgument&) {
    return s;
  } catch (const Unsupported&) {
    return s;
  }
  s.valid = true;
  s.fast = plan->kv_single_group;
  for (const auto& r : plan->ranks) {
    s.weights.push_back(r.weights_bytes);
    s.non_kv.push_back(r.non_kv_cache_bytes);
    s.activation.push_back(r.activation_peak_bytes);
    s.non_torch.push_back(r.non_torch_bytes);
    s.cudagraph.push_back(r.cudagraph_bytes);
    s.cudagraph_applied.push_back(r.cudagraph_applied_bytes);
    s.bytes_per_block.push_back(r.kv_bytes_per_block);
    s.bytes_per_request.push_back(r.kv_bytes_per_request);
    s.worst_weights = std::max(s.worst_weights, r.weights_bytes);
    s.worst_non_kv = std::max(s.worst_non_kv, r.non_kv_cache_bytes);
    if (r.kv_bytes_per_block <= 0) s.fast = false;
  }
  s.block_size = plan->kv_block_size;
  s.max_model_len = plan->inputs.max_model_len;
  s.blocks_per_request = s.block_size > 0 ? CeilDiv(plan->inputs.max_model_len, s.block_size) : 0;
  s.model_max_model_len = plan->model_max_model_len;
  s.baseline = in.tensor_parallel_size * in.pipeline_parallel_size > 1 ? in.baseline_constants.multi_process_bytes
                                                                       : in.baseline_constants.single_process_bytes;
  return s;
}

struct RowResult {
  int64_t requested = 0, weights = 0, activation = 0, non_torch = 0, cudagraph = 0, available = 0, blocks = 0,
          tokens = 0, max_len = 0;
  double concurrency = 0.0;
  bool fits = false;
  int8_t phase = 0;
};

void Push(SweepColumns& c, const RowResult& r) {
  c.requested_bytes.push_back(r.requested);
  c.weights_bytes.push_back(r.weights);
  c.activation_peak_bytes.push_back(r.activation);
  c.non_torch_bytes.push_back(r.non_torch);
  c.cudagraph_bytes.push_back(r.cudagraph);
  c.available_kv_cache_bytes.push_back(r.available);
  c.num_blocks.push_back(r.blocks);
  c.num_tokens.push_back(r.tokens);
  c.max_model_len_that_fits.push_back(r.max_len);
  c.max_concurrency.push_back(r.concurrency);
  c.fits.push_back(r.fits ? 1 : 0);
  c.failure_phase.push_back(r.phase);
}

RowResult FromPlan(const StartupPlan& p) {
  RowResult r;
  r.requested = p.requested_bytes;
  r.weights = p.weights_bytes;
  r.activation = p.activation_peak_bytes;
  r.non_torch = p.non_torch_bytes;
  r.cudagraph = p.cudagraph_bytes;
  r.available = p.available_kv_cache_bytes;
  r.max_len = p.max_model_len_that_fits;
  r.fits = p.fits;
  r.phase = static_cast<int8_t>(p.failure_phase);
  if (p.kv_cache) {
    r.blocks = p.kv_cache->num_blocks;
    r.tokens = p.kv_cache->num_tokens;
    r.concurrency = p.kv_cache->max_concurrency;
  }
  return r;
}

}  // namespace

SweepColumns RunSweep(const ModelSpec& spec, const SweepAxes& axes) {
  const PlanInputs& base = axes.base;
  std::vector<int64_t> totals = axes.total_memory_bytes;
  std::vector<std::string> names = axes.gpu_names;
  if (totals.empty()) {
    if (base.total_memory_bytes <= 0) throw InvalidArgument("gpus", "give at least one GPU or total_memory_bytes");
    totals = {base.total_memory_bytes};
    names = {base.gpu_name};
  }
  names.resize(totals.size());
  for (int64_t t : totals) RequirePositive(t, "total_memory_bytes");
  const auto utils = OrBase(axes.gpu_memory_utilization, base.gpu_memory_utilization);
  for (double u : utils) ValidateUtilization(u);
  const auto lens = OrBase(axes.max_model_len, base.max_model_len);
  const auto tps = OrBase(axes.tensor_parallel_size, base.tensor_parallel_size);
  const auto pps = OrBase(axes.pipeline_parallel_size, base.pipeline_parallel_size);
  const auto seqs = OrBase(axes.max_num_seqs, base.max_num_seqs);
  const auto tokens = OrBase(axes.max_num_batched_tokens, base.max_num_batched_tokens);
  const auto dtypes = OrBase(axes.dtype, base.dtype);
  const auto kvs = OrBase(axes.kv_cache_dtype, base.kv_cache_dtype);
  const auto quants = OrBase(axes.quantization, base.quantization);
  const auto blocks = OrBase(axes.block_size, base.block_size);
  const auto eagers = OrBase(axes.enforce_eager, static_cast<int64_t>(base.enforce_eager ? 1 : 0));

  SweepColumns c;
  c.dtype_values = dtypes;
  c.kv_cache_dtype_values = kvs;
  c.quantization_values = quants;
  c.gpu_names = names;
  int64_t rows = 1;
  for (size_t n : {totals.size(), utils.size(), lens.size(), tps.size(), pps.size(), seqs.size(), tokens.size(),
                   dtypes.size(), kvs.size(), quants.size(), blocks.size(), eagers.size()}) {
    rows = CheckedMul(rows, static_cast<int64_t>(n), "sweep size");
  }
  c.num_rows = rows;
  auto reserve = [rows](auto& v) { v.reserve(static_cast<size_t>(rows)); };
  reserve(c.gpu_index); reserve(c.total_memory_bytes); reserve(c.gpu_memory_utilization); reserve(c.max_model_len);
  reserve(c.tensor_parallel_size); reserve(c.pipeline_parallel_size); reserve(c.max_num_seqs);
  reserve(c.max_num_batched_tokens); reserve(c.block_size); reserve(c.dtype_index); reserve(c.kv_cache_dtype_index);
  reserve(c.quantization_index); reserve(c.enforce_eager); reserve(c.requested_bytes); reserve(c.weights_bytes);
  reserve(c.activation_peak_bytes); reserve(c.non_torch_bytes); reserve(c.cudagraph_bytes);
  reserve(c.available_kv_cache_bytes); reserve(c.num_blocks); reserve(c.num_tokens); reserve(c.max_model_len_that_fits);
  reserve(c.max_concurrency); reserve(c.fits); reserve(c.failure_phase);

  const bool given_free = base.free_memory_bytes >= 0;
  // The V0 engine budgets differently (no free-memory check, total x util unrounded): its rows
  // are whole plans. Bad version text is refused by the first row's plan (an invalid row).
  bool v0 = false;
  try {
    v0 = (base.vllm_engine.empty() ? LookupVllmVersion(base.vllm_version).profile->engine : base.vllm_engine) == "v0";
  } catch (const InvalidArgument&) {
    v0 = false;
  }
  for (int64_t tp : tps)
  for (int64_t pp : pps)
  for (size_t di = 0; di < dtypes.size(); ++di)
  for (size_t qi = 0; qi < quants.size(); ++qi)
  for (size_t ki = 0; ki < kvs.size(); ++ki)
  for (int64_t block : blocks)
  for (int64_t len : lens)
  for (int64_t ns : seqs)
  for (int64_t nt : tokens)
  for (int64_t eager : eagers) {
    PlanInputs in = base;
    in.tensor_parallel_size = tp;
    in.pipeline_parallel_size = pp;
    in.dtype = dtypes[di];
    in.quantization = quants[qi];
    in.kv_cache_dtype = kvs[ki];
    in.block_size = block;
    in.max_model_len = len;
    in.max_num_seqs = ns;
    in.max_num_batched_tokens = nt;
    in.enforce_eager = eager != 0;
    // The shape does not depend on the GPU or the utilization: evaluate it once.
    in.total_memory_bytes = *std::max_element(totals.begin(), totals.end());
    in.gpu_memory_utilization = 1.0;
    if (given_free) in.free_memory_bytes = -1;
    // Scheduler sizes left unset take vLLM's default for each GPU (by memory and name, for the
    // release and usage context): the shape is evaluated once per distinct resolved pair.
    std::map<std::pair<int64_t, int64_t>, std::pair<PlanInputs, Shape>> shapes;
    auto shape_for = [&](size_t gi) -> const std::pair<PlanInputs, Shape>& {
      std::pair<int64_t, int64_t> key{ns, nt};
      if (ns == 0 || nt == 0) {
        try {
          const VersionLookup v = LookupVllmVersion(base.vllm_version);
          const std::string engine = base.vllm_engine.empty() ? v.profile->engine : base.vllm_engine;
          const BatchDefaults d = ResolveBatchDefaults(*v.profile, engine, base.usage_context, totals[gi], names[gi],
                                                       len > 0 ? len : DerivedMaxModelLen(spec), ns, nt);
          key = {d.max_num_seqs, d.max_num_batched_tokens};
        } catch (const InvalidArgument&) {
          key = {-1, -1};  // the shape's own evaluation refuses it by name: an invalid row
        }
      }
      auto it = shapes.find(key);
      if (it == shapes.end()) {
        PlanInputs at = in;
        at.max_num_seqs = key.first;
        at.max_num_batched_tokens = key.second;
        it = shapes.emplace(key, std::make_pair(at, MakeShape(spec, at))).first;
      }
      return it->second;
    };
    for (size_t gi = 0; gi < totals.size(); ++gi)
    for (double util : utils) {
      const int64_t total = totals[gi];
      const PlanInputs& in_gpu = shape_for(gi).first;
      const Shape& shape = shape_for(gi).second;
      const size_t ranks = shape.weights.size();
      c.gpu_index.push_back(static_cast<int32_t>(gi));
      c.total_memory_bytes.push_back(total);
      c.gpu_memory_utilization.push_back(util);
      c.max_model_len.push_back(shape.valid ? shape.max_model_len : len);
      c.tensor_parallel_size.push_back(tp);
      c.pipeline_parallel_size.push_back(pp);
      c.max_num_seqs.push_back(in_gpu.max_num_seqs);
      c.max_num_batched_tokens.push_back(in_gpu.max_num_batched_tokens);
      c.block_size.push_back(block);
      c.dtype_index.push_back(static_cast<int32_t>(di));
      c.kv_cache_dtype_index.push_back(static_cast<int32_t>(ki));
      c.quantization_index.push_back(static_cast<int32_t>(qi));
      c.enforce_eager.push_back(eager != 0 ? 1 : 0);
      if (!shape.valid) {
        RowResult r;
        r.phase = kSweepInvalid;
        Push(c, r);
        continue;
      }
      if (!shape.fast || v0 || (given_free && base.free_memory_bytes > total)) {
        PlanInputs row = in_gpu;
        row.total_memory_bytes = total;
        row.gpu_memory_utilization = util;
        row.free_memory_bytes = base.free_memory_bytes;
        try {
          Push(c, FromPlan(EvaluatePlan(spec, row)));
        } catch (const InvalidArgument&) {
          RowResult r;
          r.phase = kSweepInvalid;
          Push(c, r);
        }
        continue;
      }
      // The fast path: EvaluatePlan's budget and verdict for one uniform KV group.
      ++c.num_fast_rows;
      RowResult r;
      r.requested = RequestedMemoryBytes(total, util);
      const int64_t free = given_free ? base.free_memory_bytes : std::max<int64_t>(0, total - shape.baseline);
      size_t tight = 0;
      int64_t min_blocks = INT64_MAX, tight_avail = INT64_MAX;
      bool kv_fits = true, all_positive = true;
      for (size_t k = 0; k < ranks; ++k) {
        const int64_t avail = base.kv_cache_memory_bytes > 0 ? base.kv_cache_memory_bytes
                                                             : r.requested - shape.non_kv[k] - shape.cudagraph_applied[k];
        const int64_t b = avail > 0 ? avail / shape.bytes_per_block[k] : 0;
        kv_fits = kv_fits && avail > 0 && shape.bytes_per_request[k] <= avail;
        all_positive = all_positive && avail > 0;
        if (b < min_blocks || (b == min_blocks && avail < tight_avail)) {
          min_blocks = b;
          tight_avail = avail;
          tight = k;
        }
      }
      r.weights = shape.weights[tight];
      r.activation = shape.activation[tight];
      r.non_torch = shape.non_torch[tight];
      r.cudagraph = shape.cudagraph[tight];
      r.available = tight_avail;
      if (all_positive) r.max_len = std::min(CheckedMul(min_blocks, shape.block_size, "max_model_len"), shape.model_max_model_len);
      FailurePhase phase = FailurePhase::kNone;
      if (free < r.requested) {
        phase = FailurePhase::kFreeMemory;
      } else if (shape.worst_weights > free) {
        phase = FailurePhase::kWeights;
      } else if (shape.worst_non_kv > free) {
        phase = FailurePhase::kProfilePeak;
      } else if (!kv_fits) {
        phase = min_blocks == 0 ? FailurePhase::kNoKvBlocks : FailurePhase::kMaxModelLen;
      }
      r.fits = phase == FailurePhase::kNone;
      r.phase = static_cast<int8_t>(phase);
      if (r.fits) {
        r.blocks = min_blocks;
        // vLLM: max_concurrency = num_blocks / blocks_per_request; tokens = int(concurrency * len).
        r.concurrency = static_cast<double>(min_blocks) / static_cast<double>(shape.blocks_per_request);
        r.tokens = KvCacheNumTokens(r.concurrency, shape.max_model_len);  // range-checked
      }
      Push(c, r);
    }
  }
  return c;
}

}  // namespace vllm_mem
