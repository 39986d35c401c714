/*!
 * \file core/plan/plan_sweep.cc
 * \brief The cross product of plan settings, with the budget-independent terms cached.
 */
#include "vllm_mem/plan/plan_sweep.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/kv_cache/kv_cache_groups.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/plan_verdict.h"
#include "vllm_mem/plan/sizing_cache.h"
#include "vllm_mem/plan/vllm_version_profile.h"

namespace vllm_mem {
namespace {

template <typename T>
std::vector<T> OrBase(const std::vector<T>& axis, const T& base) {
  return axis.empty() ? std::vector<T>{base} : axis;
}

/*! A refusal as plan() raises it for the row: InvalidArgument's text is already "field: message". */
std::string Reason(const std::exception& e) { return e.what(); }

// What a row needs from an evaluated plan shape: per-rank terms that do not depend on the
// GPU's size or the utilization.
struct Shape {
  bool valid = false;
  bool fast = false;  // single uniform KV group: blocks follow from bytes per block
  std::string reason;  // !valid: the refusal
  std::vector<int64_t> weights, activation, non_torch, non_kv, cudagraph, cudagraph_applied, bytes_per_block,
      bytes_per_request;
  int64_t max_model_len = 0;  // resolved (0 in the inputs: the model's own)
  int64_t blocks_per_request = 0, block_size = 0, model_max_model_len = 0;
  int64_t baseline = 0;
};

Shape MakeShape(const PlanInputs& in, const SizingCache& sizing) {
  Shape s;
  std::optional<StartupPlan> plan;
  try {
    plan = EvaluatePlan(sizing, in);
  } catch (const InvalidArgument& e) {
    s.reason = Reason(e);
    return s;
  } catch (const Unsupported& e) {
    s.reason = Reason(e);
    return s;
  }
  s.valid = true;
  // An auto-fitted length depends on each row's budget: such rows are whole plans.
  s.fast = plan->kv_single_group && !plan->inputs.max_model_len_auto;
  for (const auto& r : plan->ranks) {
    s.weights.push_back(r.weights_bytes);
    s.non_kv.push_back(r.non_kv_cache_bytes);
    s.activation.push_back(r.activation_peak_bytes);
    s.non_torch.push_back(r.non_torch_bytes);
    s.cudagraph.push_back(r.cudagraph_bytes);
    s.cudagraph_applied.push_back(r.cudagraph_applied_bytes);
    s.bytes_per_block.push_back(r.kv_bytes_per_block);
    s.bytes_per_request.push_back(r.kv_bytes_per_request);
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
  int64_t auto_fitted_len = 0;  //!< max_model_len auto: the length this row's plan settled on
  double concurrency = 0.0;
  bool fits = false;
  int8_t phase = 0;
  std::string reason;  //!< kSweepInvalid: the refusal ("field: message")
};

/*! The row's index into c.invalid_reasons (each distinct refusal kept once; few rows are invalid). */
int32_t ReasonIndex(SweepColumns& c, const RowResult& r) {
  if (r.phase != kSweepInvalid) return -1;
  const auto it = std::find(c.invalid_reasons.begin(), c.invalid_reasons.end(), r.reason);
  if (it != c.invalid_reasons.end()) return static_cast<int32_t>(it - c.invalid_reasons.begin());
  c.invalid_reasons.push_back(r.reason);
  return static_cast<int32_t>(c.invalid_reasons.size() - 1);
}

void Push(SweepColumns& c, const RowResult& r) {
  if (r.auto_fitted_len > 0) c.max_model_len.back() = r.auto_fitted_len;  // pushed with the inputs
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
  c.invalid_reason_index.push_back(ReasonIndex(c, r));
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
  if (p.auto_fit_from_max_model_len > 0) r.auto_fitted_len = p.inputs.max_model_len;
  r.fits = p.fits;
  r.phase = static_cast<int8_t>(p.failure_phase);
  if (p.kv_cache) {
    r.blocks = p.kv_cache->num_blocks;
    r.tokens = p.kv_cache->num_tokens;
    r.concurrency = p.kv_cache->max_concurrency;
  }
  return r;
}

/*! The axes with the base's value for an empty one, checked. */
struct Grid {
  std::vector<int64_t> totals;
  std::vector<std::string> names;
  std::vector<int64_t> sm_counts;  //!< per GPU: the catalog's SM count, 0 when unknown (the plan's fallback)
  std::vector<double> utils;
  std::vector<int64_t> lens, tps, pps, seqs, tokens, blocks, eagers;
  std::vector<std::string> dtypes, kvs, quants;
};

Grid ResolveGrid(const SweepAxes& axes) {
  const PlanInputs& base = axes.base;
  Grid g;
  g.totals = axes.total_memory_bytes;
  g.names = axes.gpu_names;
  if (g.totals.empty()) {
    if (base.total_memory_bytes <= 0) throw InvalidArgument("gpus", "give at least one GPU or total_memory_bytes");
    g.totals = {base.total_memory_bytes};
    g.names = {base.gpu_name};
  }
  g.names.resize(g.totals.size());
  for (const std::string& name : g.names) {
    const GpuInfo* gpu = FindCatalogGpu(name);
    g.sm_counts.push_back(gpu != nullptr ? gpu->sm_count : base.gpu_sm_count);
  }
  for (int64_t t : g.totals) RequirePositive(t, "total_memory_bytes");
  g.utils = OrBase(axes.gpu_memory_utilization, base.gpu_memory_utilization);
  for (double u : g.utils) ValidateUtilization(u);
  g.lens = OrBase(axes.max_model_len, base.max_model_len);
  g.tps = OrBase(axes.tensor_parallel_size, base.tensor_parallel_size);
  g.pps = OrBase(axes.pipeline_parallel_size, base.pipeline_parallel_size);
  g.seqs = OrBase(axes.max_num_seqs, base.max_num_seqs);
  g.tokens = OrBase(axes.max_num_batched_tokens, base.max_num_batched_tokens);
  g.dtypes = OrBase(axes.dtype, base.dtype);
  g.kvs = OrBase(axes.kv_cache_dtype, base.kv_cache_dtype);
  g.quants = OrBase(axes.quantization, base.quantization);
  g.blocks = OrBase(axes.block_size, base.block_size);
  g.eagers = OrBase(axes.enforce_eager, static_cast<int64_t>(base.enforce_eager ? 1 : 0));
  return g;
}

/*! Empty columns for the grid's rows, their index tables set and their space reserved (in
 *  \p storage's memory where it has some). */
SweepColumns EmptyColumns(const Grid& g, SweepColumns&& storage) {
  SweepColumns c = std::move(storage);  // its columns' memory: every other field is set below
  ForEachColumn(c, [](const char*, auto& column) { column.clear(); });
  c.num_fast_rows = 0;
  c.dtype_values = g.dtypes;
  c.kv_cache_dtype_values = g.kvs;
  c.quantization_values = g.quants;
  c.gpu_names = g.names;
  c.invalid_reasons.clear();
  int64_t rows = 1;
  for (size_t n : {g.totals.size(), g.utils.size(), g.lens.size(), g.tps.size(), g.pps.size(), g.seqs.size(),
                   g.tokens.size(), g.dtypes.size(), g.kvs.size(), g.quants.size(), g.blocks.size(), g.eagers.size()}) {
    rows = CheckedMul(rows, static_cast<int64_t>(n), "sweep size");
  }
  c.num_rows = rows;
  ForEachColumn(c, [rows](const char*, auto& column) { column.reserve(static_cast<size_t>(rows)); });
  return c;
}

/*! What the whole sweep shares: the model, its KV layouts and weights, the release. */
struct SweepContext {
  const ModelSpec& spec;
  const SweepAxes& axes;
  const Grid& grid;
  const SizingCache& sizing;
  const VllmVersionProfile* profile = nullptr;  //!< null: the version text is refused (rows invalid)
  bool v0 = false;  //!< the V0 engine budgets differently: its rows are whole plans
  /*! ceil(total x utilization) per (GPU, utilization), made on first use (-1: not yet): every
   *  setting's fast rows ask for the same few hundred. */
  mutable std::vector<int64_t> requested{};
  int64_t Requested(size_t gpu, size_t util) const {
    int64_t& r = requested[gpu * grid.utils.size() + util];
    if (r < 0) r = RequestedMemoryBytes(grid.totals[gpu], grid.utils[util]);
    return r;
  }
};

/*! One combination of the axes other than the GPU and the utilization. */
struct Setting {
  PlanInputs in;  //!< total: the largest GPU; utilization 1; free memory assumed
  int32_t dtype_index = 0, kv_index = 0, quant_index = 0;
};

/*! Scheduler sizes left unset take vLLM's default for each GPU (by memory and name, for the
 *  release and usage context); (-1, -1) when the release refuses them (an invalid row). */
std::pair<int64_t, int64_t> BatchKey(const SweepContext& ctx, const Setting& s, size_t gpu) {
  const PlanInputs& in = s.in;
  if (in.max_num_seqs != 0 && in.max_num_batched_tokens != 0) return {in.max_num_seqs, in.max_num_batched_tokens};
  if (ctx.profile == nullptr) return {-1, -1};
  try {
    const BatchDefaults d = ResolveBatchDefaults(
        *ctx.profile, ctx.axes.base.vllm_engine, ctx.axes.base.usage_context, ctx.grid.totals[gpu],
        ctx.grid.names[gpu], in.max_model_len > 0 ? in.max_model_len : DerivedMaxModelLen(ctx.spec),
        in.max_num_seqs, in.max_num_batched_tokens);
    return {d.max_num_seqs, d.max_num_batched_tokens};
  } catch (const InvalidArgument&) {
    return {-1, -1};  // the shape's own evaluation refuses it by name: an invalid row
  }
}

/*! The row's inputs, as the columns show them. */
void PushInputs(SweepColumns& c, const Setting& s, const PlanInputs& at, const Shape& shape, size_t gpu, int64_t total,
                double util) {
  c.gpu_index.push_back(static_cast<int32_t>(gpu));
  c.total_memory_bytes.push_back(total);
  c.gpu_memory_utilization.push_back(util);
  c.max_model_len.push_back(shape.valid ? shape.max_model_len : s.in.max_model_len);
  c.tensor_parallel_size.push_back(s.in.tensor_parallel_size);
  c.pipeline_parallel_size.push_back(s.in.pipeline_parallel_size);
  c.max_num_seqs.push_back(at.max_num_seqs);
  c.max_num_batched_tokens.push_back(at.max_num_batched_tokens);
  c.block_size.push_back(s.in.block_size);
  c.dtype_index.push_back(s.dtype_index);
  c.kv_cache_dtype_index.push_back(s.kv_index);
  c.quantization_index.push_back(s.quant_index);
  c.enforce_eager.push_back(s.in.enforce_eager ? 1 : 0);
}

/*! A row EvaluatePlan decides whole (hybrid KV, V0, or free memory above the GPU's total). */
RowResult PlanRow(const SweepContext& ctx, const PlanInputs& at, int64_t total, double util) {
  PlanInputs row = at;
  row.total_memory_bytes = total;
  row.gpu_memory_utilization = util;
  row.free_memory_bytes = ctx.axes.base.free_memory_bytes;
  RowResult invalid;
  invalid.phase = kSweepInvalid;
  try {
    return FromPlan(EvaluatePlan(ctx.sizing, row));
  } catch (const InvalidArgument& e) {
    invalid.reason = Reason(e);
  } catch (const Unsupported& e) {
    invalid.reason = Reason(e);  // not modelled for this row only (a 0.29+ row that captures graphs), as MakeShape
  }
  return invalid;
}

/*! EvaluatePlan's budget and verdict (plan_verdict.h) for one uniform KV group: blocks follow
 *  from bytes per block alone. */
RowResult FastRow(const Shape& shape, int64_t total, int64_t requested, const PlanInputs& base) {
  RowResult r;
  r.requested = requested;
  VerdictFigures f;
  f.requested_bytes = r.requested;
  f.free_memory_bytes = base.free_memory_bytes >= 0 ? base.free_memory_bytes
                                                    : std::max<int64_t>(0, total - shape.baseline);
  f.request_fits = f.free_memory_bytes >= r.requested;
  size_t tight = 0;
  int64_t tight_avail = INT64_MAX;
  bool all_positive = true;
  for (size_t k = 0; k < shape.weights.size(); ++k) {
    const int64_t avail = base.kv_cache_memory_bytes > 0 ? base.kv_cache_memory_bytes
                                                         : r.requested - shape.non_kv[k] - shape.cudagraph_applied[k];
    const int64_t blocks = avail > 0 ? avail / shape.bytes_per_block[k] : 0;
    const int64_t min_before = f.min_blocks;
    AddRank(f, shape.weights[k], shape.non_kv[k], avail, shape.bytes_per_block[k], shape.bytes_per_request[k], blocks,
            avail > 0 && shape.bytes_per_request[k] <= avail);
    all_positive = all_positive && avail > 0;
    if (k == 0 || blocks < min_before || (blocks == min_before && avail < tight_avail)) {
      tight_avail = avail;
      tight = k;
    }
  }
  r.weights = shape.weights[tight];
  r.activation = shape.activation[tight];
  r.non_torch = shape.non_torch[tight];
  r.cudagraph = shape.cudagraph[tight];
  r.available = tight_avail;
  if (all_positive) {
    r.max_len = std::min(CheckedMul(f.min_blocks, shape.block_size, "max_model_len"), shape.model_max_model_len);
  }
  const FailurePhase phase = DecideVerdict(f, nullptr).phase;
  r.fits = phase == FailurePhase::kNone;
  r.phase = static_cast<int8_t>(phase);
  if (r.fits) {
    r.blocks = f.min_blocks;
    // vLLM: max_concurrency = num_blocks / blocks_per_request; tokens = int(concurrency * len).
    r.concurrency = static_cast<double>(f.min_blocks) / static_cast<double>(shape.blocks_per_request);
    r.tokens = KvCacheNumTokens(r.concurrency, shape.max_model_len);  // range-checked
  }
  return r;
}

/*! Every GPU and utilization of one setting. The shape does not depend on either, so it is
 *  evaluated once per distinct pair of resolved scheduler sizes. */
void RunSetting(const SweepContext& ctx, const Setting& s, SweepColumns& c) {
  const PlanInputs& base = ctx.axes.base;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::pair<PlanInputs, Shape>> shapes;
  for (size_t gi = 0; gi < ctx.grid.totals.size(); ++gi) {
    const std::pair<int64_t, int64_t> batch = BatchKey(ctx, s, gi);
    // The profile run's sampler keeps one row per SM (0.17+): GPUs of other SM counts differ.
    const int64_t sm_count = ctx.grid.sm_counts[gi];
    const auto key = std::make_tuple(batch.first, batch.second, sm_count);
    auto it = shapes.find(key);
    if (it == shapes.end()) {
      PlanInputs at = s.in;
      at.max_num_seqs = batch.first;
      at.max_num_batched_tokens = batch.second;
      at.gpu_sm_count = sm_count;
      it = shapes.emplace(key, std::make_pair(at, MakeShape(at, ctx.sizing))).first;
    }
    const PlanInputs& at = it->second.first;
    const Shape& shape = it->second.second;
    const int64_t total = ctx.grid.totals[gi];
    const bool whole_plans = !shape.fast || ctx.v0 || (base.free_memory_bytes >= 0 && base.free_memory_bytes > total);
    for (size_t ui = 0; ui < ctx.grid.utils.size(); ++ui) {
      const double util = ctx.grid.utils[ui];
      PushInputs(c, s, at, shape, gi, total, util);
      RowResult r;
      if (!shape.valid) {
        r.phase = kSweepInvalid;
        r.reason = shape.reason;
      } else if (whole_plans) {
        r = PlanRow(ctx, at, total, util);
      } else {
        ++c.num_fast_rows;
        r = FastRow(shape, total, ctx.Requested(gi, ui), base);
      }
      Push(c, r);
    }
  }
}

/*! Each byte column as GiB and as a fraction of its row's total (IEEE double division, as
 *  NumPy's true division of the same figures gives). */
void DerivedColumns(SweepColumns& c) {
  struct Derived {
    const std::vector<int64_t>& bytes;
    std::vector<double>& gib;
    std::vector<double>& fraction;
  };
  const Derived columns[] = {
      {c.requested_bytes, c.requested_gib, c.requested_fraction},
      {c.weights_bytes, c.weights_gib, c.weights_fraction},
      {c.activation_peak_bytes, c.activation_peak_gib, c.activation_peak_fraction},
      {c.non_torch_bytes, c.non_torch_gib, c.non_torch_fraction},
      {c.cudagraph_bytes, c.cudagraph_gib, c.cudagraph_fraction},
      {c.available_kv_cache_bytes, c.available_kv_cache_gib, c.available_kv_cache_fraction},
  };
  constexpr double kGiBDouble = static_cast<double>(kGiB);
  const size_t rows = c.total_memory_bytes.size();
  for (const Derived& d : columns) {
    for (size_t i = 0; i < rows; ++i) {  // reserved by EmptyColumns: no reallocation
      const double b = static_cast<double>(d.bytes[i]);
      d.gib.push_back(b / kGiBDouble);
      d.fraction.push_back(b / static_cast<double>(c.total_memory_bytes[i]));
    }
  }
}

/*! The release the base asks for; null when its text is refused (every row's plan says why). */
const VllmVersionProfile* SweepProfile(const PlanInputs& base, bool& v0) {
  try {
    const VllmVersionProfile* profile = LookupVllmVersion(base.vllm_version).profile;
    v0 = EngineFor(*profile, base.vllm_engine) == VllmEngine::kV0;
    return profile;
  } catch (const InvalidArgument&) {
    v0 = false;
    return nullptr;
  }
}

}  // namespace

SweepColumns RunSweep(const ModelSpec& spec, const SweepAxes& axes, SweepColumns storage) {
  const Grid g = ResolveGrid(axes);
  SweepColumns c = EmptyColumns(g, std::move(storage));
  const SizingCache sizing(spec);
  SweepContext ctx{spec, axes, g, sizing};
  ctx.requested.assign(g.totals.size() * g.utils.size(), -1);
  ctx.profile = SweepProfile(axes.base, ctx.v0);
  Setting s;
  s.in = axes.base;
  // The shape is evaluated on the largest GPU with all of it granted and free memory assumed.
  s.in.total_memory_bytes = *std::max_element(g.totals.begin(), g.totals.end());
  s.in.gpu_memory_utilization = 1.0;
  if (axes.base.free_memory_bytes >= 0) s.in.free_memory_bytes = -1;
  for (int64_t tp : g.tps)
  for (int64_t pp : g.pps)
  for (size_t di = 0; di < g.dtypes.size(); ++di)
  for (size_t qi = 0; qi < g.quants.size(); ++qi)
  for (size_t ki = 0; ki < g.kvs.size(); ++ki)
  for (int64_t block : g.blocks)
  for (int64_t len : g.lens)
  for (int64_t ns : g.seqs)
  for (int64_t nt : g.tokens)
  for (int64_t eager : g.eagers) {
    s.in.tensor_parallel_size = tp;
    s.in.pipeline_parallel_size = pp;
    s.in.dtype = g.dtypes[di];
    s.in.quantization = g.quants[qi];
    s.in.kv_cache_dtype = g.kvs[ki];
    s.in.block_size = block;
    s.in.max_model_len = len;
    s.in.max_num_seqs = ns;
    s.in.max_num_batched_tokens = nt;
    s.in.enforce_eager = eager != 0;
    s.dtype_index = static_cast<int32_t>(di);
    s.quant_index = static_cast<int32_t>(qi);
    s.kv_index = static_cast<int32_t>(ki);
    RunSetting(ctx, s, c);
  }
  DerivedColumns(c);
  return c;
}

}  // namespace vllm_mem
