/*!
 * \file core/plan/startup_plan.cc
 * \brief Evaluating one start-up plan, per pipeline rank (the text report: planner/render.py).
 */
#include "vllm_mem/plan/startup_plan.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/kv_cache/kv_cache_spec.h"
#include "vllm_mem/memory/memory_budget.h"
#include "core/model/parallelism.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {
namespace {

// Large enough that every worker holds ~2^29 blocks, small enough not to overflow when
// multiplied by a handful of layers: bytes_per_block = floor(A / blocks) exactly.
constexpr int64_t kProbeBytes = int64_t{1} << 50;

void ValidateInputs(const ModelSpec& spec, const PlanInputs& in) {
  if (in.total_memory_bytes <= 0) {
    throw InvalidArgument("total_memory_bytes", "must be a positive byte count (or name a catalog gpu), got " +
                                                    std::to_string(in.total_memory_bytes));
  }
  ValidateUtilization(in.gpu_memory_utilization);
  // Every setting's bounds come from the settings table (plan_request.h); what follows
  // relates settings to each other and to the model.
  ValidatePlanRequest(in);
  if (in.free_memory_bytes > in.total_memory_bytes) {
    throw InvalidArgument("free_memory_bytes", "must be in [0, total_memory_bytes], got " +
                                                   std::to_string(in.free_memory_bytes));
  }
  RequireNonNegative(in.checkpoint_weights_bytes, "checkpoint_weights_bytes");
  RequireAtMost(in.checkpoint_weights_bytes, kMaxDeviceBytes, "checkpoint_weights_bytes", "1 PiB; vllm_mem/base/limits.h");
  ValidateParallelism(spec.num_layers, in.tensor_parallel_size, in.pipeline_parallel_size);
  AttentionHeadsPerRank(spec.num_attention_heads, in.tensor_parallel_size);
  KvHeadsPerRank(spec.num_kv_heads, in.tensor_parallel_size);
  const int64_t world = CheckedMul(in.tensor_parallel_size, in.pipeline_parallel_size, "tensor_parallel_size");
  if (in.gpu_count > 0 && world > in.gpu_count) {
    throw InvalidArgument("tensor_parallel_size",
                          "tensor_parallel_size x pipeline_parallel_size = " + std::to_string(world) +
                              " GPUs, but only " + std::to_string(in.gpu_count) + " are available (gpu_count)");
  }
}

/*! --cpu-offload-gb: vLLM's maybe_offload_to_cpu (model_executor/models/utils.py) wraps each
 *  decoder layer (make_layers) and moves its parameters to CPU memory, first layers first, until
 *  the per-GPU budget of cpu_offload_gb GiB is used; embeddings, the LM head and buffers stay.
 *  So the GPU keeps the rank's weights less min(budget, its decoder-layer parameters). vLLM
 *  stops at the first whole parameter past the budget (at most one parameter more leaves). */
int64_t CpuOffloadedBytes(const RankWeights& rw, double cpu_offload_gb) {
  if (cpu_offload_gb <= 0.0) return 0;
  const int64_t budget = CheckedDoubleToInt64(std::ceil(cpu_offload_gb * static_cast<double>(kGiB)), "cpu_offload_gb");
  const int64_t layers = rw.attention_bytes + rw.mlp_bytes + rw.quantization_overhead_bytes;
  return std::min(budget, layers);
}

}  // namespace

std::string FailurePhaseName(FailurePhase phase) {
  switch (phase) {
    case FailurePhase::kNone: return "";
    case FailurePhase::kFreeMemory: return "free_memory";
    case FailurePhase::kWeights: return "weights";
    case FailurePhase::kProfilePeak: return "profile_peak";
    case FailurePhase::kNoKvBlocks: return "no_kv_blocks";
    case FailurePhase::kMaxModelLen: return "max_model_len";
  }
  return "";
}

KvCacheOptions KvOptionsFor(const ModelSpec& spec, const PlanInputs& in) {
  KvCacheOptions k = KvCacheOptionsFrom(in);
  if (k.max_model_len <= 0) k.max_model_len = DerivedMaxModelLen(spec);
  // Releases before the hybrid allocator (and the V0 engine) size every layer for the full length.
  k.disable_hybrid_kv_cache_manager = in.disable_hybrid_kv_cache_manager || !in.hybrid_kv_cache_manager;
  // The KV rules that changed by release (vllm_versions.json): the printed token count, the
  // hybrid block alignment and whether a sliding layer's per-request need is capped at the full one.
  k.kv_tokens_from_concurrency =
      in.kv_log_format == KvLogFormat::kCombinedLine || in.kv_log_format == KvLogFormat::kConcurrencyTokens;
  k.hybrid_align_to_user_block_size = in.hybrid_align_to_user_block_size;
  k.cap_sliding_window_at_full = in.cap_sliding_window_at_full.value_or(false);
  return k;
}

StartupPlan EvaluatePlan(const ModelSpec& spec, const PlanInputs& inputs, const KvCacheLayoutCache* kv_layouts) {
  // The cached layouts are only used for the spec they were built for.
  if (kv_layouts != nullptr && &kv_layouts->spec() != &spec) kv_layouts = nullptr;
  // The release's defaults first: what vLLM would run with is what gets checked and planned.
  const VersionLookup version = LookupVllmVersion(inputs.vllm_version);
  StartupPlan plan;
  plan.request = inputs;
  plan.inputs = ResolveForVersion(*version.profile, spec, inputs);
  PlanInputs& in = plan.inputs;
  in.vllm_version_note = version.note;
  ValidateInputs(spec, in);
  const bool v0 = in.vllm_engine == "v0";
  const bool graphs_in_budget = in.cudagraph_memory_in_budget.value_or(false);
  const int64_t tp = in.tensor_parallel_size, pp = in.pipeline_parallel_size;
  // Speculative decoding (speculative_decoding.h): the drafter's layers join the KV pool as
  // extra layers of a copy of the model, which the target's cached layouts do not describe.
  std::optional<ResolvedSpeculative> spec_decode;
  std::optional<ModelSpec> kv_spec_with_drafter;
  if (in.speculative) {
    spec_decode = ResolveSpeculativeConfig(spec, *in.speculative, tp, pp);
    kv_spec_with_drafter = WithDrafterKvLayers(spec, *spec_decode, tp);
    kv_layouts = nullptr;
  }
  const ModelSpec& kv_spec = kv_spec_with_drafter ? *kv_spec_with_drafter : spec;
  plan.free_memory_assumed = in.free_memory_bytes < 0;
  if (plan.free_memory_assumed) {
    const int64_t baseline = tp * pp > 1 ? in.baseline_constants.multi_process_bytes
                                         : in.baseline_constants.single_process_bytes;
    in.free_memory_bytes = std::max<int64_t>(0, in.total_memory_bytes - baseline);
  }
  plan.model_max_model_len = std::max(DerivedMaxModelLen(spec), in.max_model_len);

  // 1. request_memory. The V0 worker had no free-memory check and budgeted total x utilization
  //    unrounded (vllm/worker/worker.py determine_num_available_blocks); its floor gives the same
  //    block count, since blocks = floor((total x util - non_kv) / block bytes).
  RequestedMemory req = CheckRequestMemory(in.total_memory_bytes, in.free_memory_bytes, in.gpu_memory_utilization);
  if (v0) {
    req.requested_bytes = CheckedDoubleToInt64(
        std::floor(static_cast<double>(in.total_memory_bytes) * in.gpu_memory_utilization), "gpu_memory_utilization");
    req.fits = true;
    req.error_message.clear();
  }
  plan.requested_bytes = req.requested_bytes;
  plan.request_memory_error = req.error_message;

  // 2. Weights, per pipeline rank.
  WeightOptions wo;
  wo.dtype = in.dtype.empty() ? "auto" : in.dtype;
  wo.quantization = in.quantization;
  wo.tensor_parallel_size = tp;
  wo.pipeline_parallel_size = pp;
  const WeightBreakdown weights = ComputeWeights(spec, wo);
  int64_t whole_model_param_bytes = 1;  // the config's parameter bytes on one GPU (TP = PP = 1)
  if (in.checkpoint_weights_bytes > 0) {
    WeightOptions one_gpu = wo;
    one_gpu.tensor_parallel_size = one_gpu.pipeline_parallel_size = 1;
    const RankWeights& whole = ComputeWeights(spec, one_gpu).per_pp_rank.at(0);
    whole_model_param_bytes = std::max<int64_t>(1, whole.total_bytes - whole.buffer_bytes);
  }

  // 3. KV geometry per rank (bytes per block), from the sizing core.
  const KvCacheOptions kv_options = KvOptionsFor(kv_spec, in);
  const std::vector<int64_t> probe_bytes(static_cast<size_t>(pp), kProbeBytes);
  const KvCacheCapacity probe = kv_layouts ? ComputeKvCacheCapacity(*kv_layouts, probe_bytes, kv_options)
                                           : ComputeKvCacheCapacity(kv_spec, probe_bytes, kv_options);
  // The drafter's share of a block: the same probe without its layers.
  std::vector<int64_t> target_blocks_per_worker;
  if (kv_spec_with_drafter) {
    target_blocks_per_worker = ComputeKvCacheCapacity(spec, probe_bytes, kv_options).num_blocks_per_worker;
  }
  DraftWeights draft_weights;
  if (spec_decode) draft_weights = ComputeDraftWeights(spec, *in.speculative, *spec_decode, wo.dtype, wo.quantization);

  plan.kv_block_size = probe.block_size;
  plan.kv_single_group = probe.groups.size() == 1 && probe.block_size > 0 &&
                         probe.groups[0].blocks_per_request == CeilDiv(kv_options.max_model_len, probe.block_size) &&
                         (probe.groups[0].kind == "full_attention" || probe.groups[0].kind == "mla");

  // 4. The profile run, per rank.
  std::vector<int64_t> available;
  for (int64_t r = 0; r < pp; ++r) {
    RankPlan rank;
    rank.pp_rank = r;
    const RankWeights& rw = weights.per_pp_rank.at(static_cast<size_t>(r));
    rank.first_layer = rw.first_layer;
    rank.end_layer = rw.end_layer;
    rank.weights_bytes = rw.total_bytes;
    rank.vision_encoder_bytes = rw.vision_encoder_bytes;
    if (in.checkpoint_weights_bytes > 0) {
      // Headers give the whole checkpoint as stored; each rank takes the share of the
      // parameters the config path gives it (vocab/TP shards, replicated norms and KV heads,
      // its PP layers), plus its buffers, which no checkpoint holds (rotary cos/sin cache).
      const int64_t rank_params = rw.total_bytes - rw.buffer_bytes;
      const double share = static_cast<double>(rank_params) / static_cast<double>(whole_model_param_bytes);
      rank.weights_bytes = CheckedAdd(
          CheckedDoubleToInt64(std::round(share * static_cast<double>(in.checkpoint_weights_bytes)),
                               "checkpoint_weights_bytes"),
          rw.buffer_bytes, "checkpoint_weights_bytes");
    }
    rank.weights_bytes -= CpuOffloadedBytes(rw, in.cpu_offload_gb);
    if (spec_decode && r == pp - 1) {  // "Model loading took" includes the drafter
      rank.draft_weights_bytes = draft_weights.total_bytes;
      rank.weights_bytes = CheckedAdd(rank.weights_bytes, rank.draft_weights_bytes, "draft_weights_bytes");
    }

    ActivationOptions ao;
    ao.max_num_batched_tokens = in.max_num_batched_tokens;
    ao.max_num_seqs = in.max_num_seqs;
    ao.tensor_parallel_size = tp;
    ao.pipeline_parallel_size = pp;
    ao.pp_rank = r;
    ao.dtype = wo.dtype;
    ao.constants = in.activation_constants;
    rank.activation = EstimateActivationPeak(spec, ao);
    rank.activation_peak_bytes = rank.activation.peak_bytes;

    rank.non_torch = EstimateNonTorchIncrease(tp, pp, in.non_torch_constants);
    rank.non_torch_bytes = rank.non_torch.total_bytes;

    CudagraphOptions co;
    co.enforce_eager = in.enforce_eager;
    co.mode = in.cudagraph_mode;
    co.capture_sizes = in.cudagraph_capture_sizes;
    if (spec_decode && !in.enforce_eager && in.cudagraph_mode != CudagraphMode::kNone) {
      // num_speculative_tokens widens the decode batch: sizes become multiples of 1 + K.
      co.capture_sizes = SpecDecodeCaptureSizes(in.cudagraph_capture_sizes, in.max_cudagraph_capture_size,
                                                in.max_num_seqs, in.max_num_batched_tokens,
                                                spec_decode->uniform_decode_query_len);
      co.uniform_decode_query_len = spec_decode->uniform_decode_query_len;
    }
    co.max_cudagraph_capture_size = in.max_cudagraph_capture_size;
    co.max_num_seqs = in.max_num_seqs;
    co.max_num_batched_tokens = in.max_num_batched_tokens;
    co.tensor_parallel_size = tp;
    co.pipeline_parallel_size = pp;
    co.pp_rank = r;
    co.dtype = wo.dtype;
    co.constants = in.cudagraph_constants;
    co.activation_constants = in.activation_constants;
    rank.cudagraph = EstimateCudagraphMemory(spec, co);
    rank.cudagraph_bytes = rank.cudagraph.total_bytes;

    ProfileMeasurements pm;
    pm.weights_bytes = rank.weights_bytes;
    pm.torch_peak_increase_bytes = rank.activation_peak_bytes;
    pm.non_torch_increase_bytes = rank.non_torch_bytes;
    pm.cudagraph_estimate_bytes = rank.cudagraph_bytes;
    AvailableKvOptions ko;
    ko.total_memory_bytes = in.total_memory_bytes;
    ko.gpu_memory_utilization = in.gpu_memory_utilization;
    ko.kv_cache_memory_bytes = in.kv_cache_memory_bytes;
    ko.init_free_memory_bytes = in.free_memory_bytes;
    ko.estimate_cudagraphs = graphs_in_budget;
    AvailableKvMemory avail = DetermineAvailableKvCacheMemory(plan.requested_bytes, pm, ko);
    rank.non_kv_cache_bytes = CheckedAdd(CheckedAdd(rank.weights_bytes, rank.activation_peak_bytes, "non_kv"),
                                         rank.non_torch_bytes, "non_kv");
    rank.cudagraph_applied_bytes = avail.cudagraph_applied_bytes;
    rank.available_kv_cache_bytes = avail.available_kv_cache_bytes;

    const int64_t probe_blocks = probe.num_blocks_per_worker.at(static_cast<size_t>(r * tp));
    rank.kv_bytes_per_block = probe_blocks > 0 ? kProbeBytes / probe_blocks : 0;
    if (!target_blocks_per_worker.empty()) {
      const int64_t target_blocks = target_blocks_per_worker.at(static_cast<size_t>(r * tp));
      rank.draft_kv_bytes_per_block =
          rank.kv_bytes_per_block - (target_blocks > 0 ? kProbeBytes / target_blocks : 0);
    }
    int64_t blocks_per_request = 0;
    for (const auto& g : probe.groups) blocks_per_request += g.blocks_per_request;
    rank.kv_bytes_per_request = CheckedMul(rank.kv_bytes_per_block, blocks_per_request, "kv_bytes_per_request");
    rank.num_blocks = rank.kv_bytes_per_block > 0 && rank.available_kv_cache_bytes > 0
                          ? rank.available_kv_cache_bytes / rank.kv_bytes_per_block
                          : 0;
    rank.draft_kv_cache_bytes = CheckedMul(rank.num_blocks, rank.draft_kv_bytes_per_block, "draft_kv_cache_bytes");
    available.push_back(rank.available_kv_cache_bytes);
    plan.ranks.push_back(std::move(rank));
  }

  // The tightest rank: fewest blocks, then least KV budget.
  size_t tight = 0;
  for (size_t i = 1; i < plan.ranks.size(); ++i) {
    const auto& a = plan.ranks[i];
    const auto& b = plan.ranks[tight];
    if (a.num_blocks < b.num_blocks ||
        (a.num_blocks == b.num_blocks && a.available_kv_cache_bytes < b.available_kv_cache_bytes)) {
      tight = i;
    }
  }
  const RankPlan& t = plan.ranks[tight];
  plan.tightest_pp_rank = t.pp_rank;
  plan.weights_bytes = t.weights_bytes;
  plan.activation_peak_bytes = t.activation_peak_bytes;
  plan.non_torch_bytes = t.non_torch_bytes;
  plan.cudagraph_bytes = t.cudagraph_bytes;
  plan.non_kv_cache_bytes = t.non_kv_cache_bytes;
  plan.available_kv_cache_bytes = t.available_kv_cache_bytes;
  plan.cudagraph_line = CudagraphProfilingLine(t.cudagraph_bytes, in.total_memory_bytes, in.gpu_memory_utilization,
                                               graphs_in_budget);
  plan.kv_cache_memory_suggestion = SuggestKvCacheMemoryBytes(
      in.free_memory_bytes, in.total_memory_bytes, in.gpu_memory_utilization, plan.requested_bytes, t.weights_bytes,
      t.activation_peak_bytes, t.non_torch_bytes, t.cudagraph_bytes, std::max<int64_t>(0, t.available_kv_cache_bytes));

  // Largest max_model_len one request fits in, up to the model's own limit.
  bool all_positive = true;
  for (int64_t a : available) all_positive = all_positive && a > 0;
  if (all_positive) {
    KvCacheOptions upper = kv_options;
    upper.max_model_len = plan.model_max_model_len;
    plan.max_model_len_that_fits = kv_layouts ? EstimateMaxModelLen(*kv_layouts, available, upper)
                                              : EstimateMaxModelLen(kv_spec, available, upper);
  }

  // 5. The verdict, in vLLM's order.
  int64_t worst_weights = 0, worst_profile = 0;
  for (const auto& r : plan.ranks) {
    worst_weights = std::max(worst_weights, r.weights_bytes);
    worst_profile = std::max(worst_profile, r.non_kv_cache_bytes);
  }
  if (!req.fits) {
    plan.failure_phase = FailurePhase::kFreeMemory;
    plan.failure_message = req.error_message;
    plan.shortfall_bytes = plan.requested_bytes - in.free_memory_bytes;
  } else if (worst_weights > in.free_memory_bytes) {
    plan.failure_phase = FailurePhase::kWeights;
    plan.shortfall_bytes = worst_weights - in.free_memory_bytes;
    plan.failure_message =
        "Failed to load model - not enough GPU memory: the weights (" + FormatGib(worst_weights) +
        " GiB per GPU) exceed the free memory (" + FormatGib(in.free_memory_bytes) +
        " GiB). Try increasing --tensor-parallel-size or using --quantization.";
  } else if (worst_profile > in.free_memory_bytes) {
    plan.failure_phase = FailurePhase::kProfilePeak;
    plan.shortfall_bytes = worst_profile - in.free_memory_bytes;
    plan.failure_message = "CUDA out of memory in the profile run: weights + peak activation + non-torch (" +
                           FormatGib(worst_profile) + " GiB per GPU) exceed the free memory (" +
                           FormatGib(in.free_memory_bytes) + " GiB).";
  } else {
    const std::string shortfall = kv_layouts ? KvCacheMemoryShortfall(*kv_layouts, available, kv_options)
                                             : KvCacheMemoryShortfall(kv_spec, available, kv_options);
    if (shortfall.empty()) {
      plan.fits = true;
      plan.kv_cache = kv_layouts ? ComputeKvCacheCapacity(*kv_layouts, available, kv_options)
                                 : ComputeKvCacheCapacity(kv_spec, available, kv_options);
      plan.kv_log_lines = KvCacheLogLinesFor(*plan.kv_cache, in.kv_log_format);
    } else {
      plan.failure_message = shortfall;
      bool no_blocks = false;
      for (const auto& r : plan.ranks) no_blocks = no_blocks || r.num_blocks == 0;
      if (v0) {
        // V0's own words (vllm/worker/worker.py raise_if_cache_size_invalid).
        int64_t min_blocks = -1;
        for (const auto& r : plan.ranks) min_blocks = min_blocks < 0 ? r.num_blocks : std::min(min_blocks, r.num_blocks);
        plan.failure_message =
            no_blocks ? "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                        "initializing the engine."
                      : "The model's max seq len (" + std::to_string(in.max_model_len) +
                            ") is larger than the maximum number of tokens that can be stored in KV cache (" +
                            std::to_string(CheckedMul(min_blocks, plan.kv_block_size, "num_tokens")) +
                            "). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                            "initializing the engine.";
      }
      if (no_blocks) {
        plan.failure_phase = FailurePhase::kNoKvBlocks;
        int64_t need = 0;
        for (const auto& r : plan.ranks) {
          need = std::max(need, r.kv_bytes_per_block - r.available_kv_cache_bytes);
        }
        plan.shortfall_bytes = need;
      } else {
        plan.failure_phase = FailurePhase::kMaxModelLen;
        int64_t need = 0;
        for (const auto& r : plan.ranks) {
          need = std::max(need, r.kv_bytes_per_request - r.available_kv_cache_bytes);
        }
        plan.shortfall_bytes = need;
      }
    }
  }
  plan.available_kv_line =
      AvailableKvCacheLine(*version.profile, in.vllm_engine, plan.available_kv_cache_bytes);
  // vLLM prints its --kv-cache-memory suggestion whatever it holds; only offer it when it starts.
  {
    const int64_t suggested = plan.kv_cache_memory_suggestion.to_requested_limit_bytes;
    bool holds = suggested > 0 && plan.failure_phase != FailurePhase::kFreeMemory &&
                 plan.failure_phase != FailurePhase::kWeights && plan.failure_phase != FailurePhase::kProfilePeak;
    for (const auto& r : plan.ranks) holds = holds && r.kv_bytes_per_request > 0 && suggested >= r.kv_bytes_per_request;
    plan.kv_cache_memory_suggestion_fits = holds;
  }
  return plan;
}

}  // namespace vllm_mem
