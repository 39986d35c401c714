/*!
 * \file core/plan/startup_plan.cc
 * \brief Evaluating one start-up plan, per pipeline rank (the text report: planner/render.py).
 */
#include "vllm_mem/plan/startup_plan.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/checked_math.h"
#include "core/model/parallelism.h"
#include "core/plan/mp_linear_kernel.h"
#include "core/plan/mxfp4_backend.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/kv_cache/kv_cache_query.h"
#include "vllm_mem/kv_cache/kv_cache_spec.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/model/vision_profile_item.h"
#include "vllm_mem/model/weights.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/lora_estimate.h"
#include "vllm_mem/plan/release_resolution.h"
#include "vllm_mem/plan/sizing_cache.h"
#include "vllm_mem/plan/sparse_mla_workspace.h"

namespace vllm_mem {
namespace {

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

namespace {

/*! What the phases of one plan share. Built on the stack and never moved: a layout cache keeps
 *  a reference to the spec it was built for. */
struct PlanRun {
  explicit PlanRun(const ModelSpec& s) : spec(s) {}
  const ModelSpec& spec;
  const VllmVersionProfile* profile = nullptr;
  /*! Speculative decoding (speculative_decoding.h): the drafter's layers join the KV pool as
   *  extra layers of a copy of the model, which the target's layouts do not describe. */
  std::optional<ResolvedSpeculative> spec_decode;
  std::optional<ModelSpec> kv_spec_with_drafter;
  std::optional<KvCacheLayoutCache> own_layouts;      //!< the target's, when the caller keeps none
  std::optional<KvCacheLayoutCache> drafter_layouts;  //!< over kv_spec_with_drafter
  const KvCacheLayoutCache* target_layouts = nullptr;
  const KvCacheLayoutCache* kv_layouts = nullptr;     //!< the layers the KV pool holds
  const SizingCache* sizing = nullptr;  //!< the model's remembered weights, when the caller keeps them
  KvCacheOptions kv_options;
  std::string auto_fit_refusal;  //!< vLLM's "Cannot auto-fit max_model_len" ValueError, when it raises
  /*! The KV pool's layout at kv_options, checked and looked up once for every KV question (made
   *  again when the auto-fit changes the length). */
  std::shared_ptr<const KvCacheQuery> kv;
  RequestedMemory request;
  WeightOptions weight_options;
  std::vector<int64_t> available;  //!< the KV budget per pipeline rank
};

/*! Phase 1: which vLLM release, with its defaults: what vLLM would run with is what gets
 *  checked and planned. */
ResolvedRelease Resolve(const ModelSpec& spec, PlanInputs&& inputs) {
  VersionLookup version = LookupVllmVersion(inputs.vllm_version);
  ResolvedRelease r;
  r.profile = version.profile;
  r.inputs = ResolveForVersion(*version.profile, spec, std::move(inputs));
  r.inputs.vllm_version_note = std::move(version.note);
  ValidateInputs(spec, r.inputs);
  r.inputs.mamba_cache_mode = ResolvedMambaCacheMode(*r.profile, spec, r.inputs);
  return r;
}

void ResolveRelease(PlanRun& run, PlanInputs&& inputs, StartupPlan& plan) {
  plan.request = inputs;
  ResolvedRelease r = Resolve(run.spec, std::move(inputs));
  run.profile = plan.profile = r.profile;
  plan.inputs = std::move(r.inputs);
}

/*! Phase 1 for a request in an environment on the model's SizingCache, which remembers the
 *  resolution (a pure function of the three). */
std::shared_ptr<const ResolvedRelease> RememberedRelease(const PlanRun& run, const PlanRequest& request,
                                                         const PlanEnvironment& env) {
  return run.sizing->Release(request, env, [&] {
    PlanInputs in;
    static_cast<PlanRequest&>(in) = request;
    in.total_memory_bytes = env.total_memory_bytes;
    in.gpu_name = env.gpu_name;
    in.vllm_version = env.vllm_version;
    in.vllm_version_source = env.vllm_version_source;
    in.allow_long_max_model_len = env.allow_long_max_model_len;
    return Resolve(run.spec, std::move(in));
  });
}

/*! The KV layouts every KV question goes through: the caller's cache for this spec, else one
 *  for this plan; with a drafter, one over the target plus the drafter's layers. */
void SetUpKvLayouts(PlanRun& run, const PlanInputs& in, const KvCacheLayoutCache* caller_layouts) {
  const int64_t tp = in.tensor_parallel_size, pp = in.pipeline_parallel_size;
  run.target_layouts = caller_layouts != nullptr && &caller_layouts->spec() == &run.spec
                           ? caller_layouts
                           : &run.own_layouts.emplace(run.spec);
  run.kv_layouts = run.target_layouts;
  if (in.speculative) {
    run.spec_decode = ResolveSpeculativeConfig(run.spec, *in.speculative, tp, pp);
    if (in.max_model_len > 0) CheckDraftMaxModelLen(run.spec, *in.speculative, *run.spec_decode, in.max_model_len);
    run.kv_spec_with_drafter = WithDrafterKvLayers(run.spec, *run.spec_decode, tp);
    run.kv_layouts = &run.drafter_layouts.emplace(*run.kv_spec_with_drafter);
  }
  run.kv_options = KvOptionsFor(run.kv_layouts->spec(), in);
  // Every recurrent layer keeps the speculated tokens' states, whatever the method
  // (vllm/model_executor/layers/mamba/abstract.py get_kv_cache_spec: num_speculative_blocks =
  // num_speculative_tokens; mamba_utils.py: conv_kernel - 1 + num_spec conv rows). The v0.22.0
  // Qwen3.6-35B-A3B MTP start-up prints the 1,072-token block and 15.66x this gives.
  if (run.spec_decode) run.kv_options.num_speculative_tokens = run.spec_decode->num_speculative_tokens;
}

/*! Phase 2: request_memory. Free memory not given is the total less the idle baseline. The V0
 *  worker had no free-memory check and budgeted total x utilization unrounded
 *  (vllm/worker/worker.py determine_num_available_blocks); its floor gives the same block
 *  count, since blocks = floor((total x util - non_kv) / block bytes). */
void RequestMemory(PlanRun& run, StartupPlan& plan) {
  PlanInputs& in = plan.inputs;
  plan.free_memory_assumed = in.free_memory_bytes < 0;
  if (plan.free_memory_assumed) {
    const int64_t baseline = in.tensor_parallel_size * in.pipeline_parallel_size > 1
                                 ? in.baseline_constants.multi_process_bytes
                                 : in.baseline_constants.single_process_bytes;
    in.free_memory_bytes = std::max<int64_t>(0, in.total_memory_bytes - baseline);
  }
  plan.model_max_model_len = std::max(DerivedMaxModelLen(run.spec), in.max_model_len);
  run.request = CheckRequestMemory(in.total_memory_bytes, in.free_memory_bytes, in.gpu_memory_utilization);
  if (in.engine == VllmEngine::kV0) {
    run.request.requested_bytes = CheckedDoubleToInt64(
        std::floor(static_cast<double>(in.total_memory_bytes) * in.gpu_memory_utilization), "gpu_memory_utilization");
    run.request.fits = true;
    run.request.error_message.clear();
  }
  plan.requested_bytes = run.request.requested_bytes;
  plan.request_memory_error = run.request.error_message;
}

/*! What no checkpoint file holds: buffers (rotary cos/sin cache) and the MoE kernel's layout. */
int64_t NotInCheckpoint(const RankWeights& rw) {
  return CheckedAdd(rw.buffer_bytes, rw.kernel_layout_bytes, "checkpoint_weights_bytes");
}

/*! Headers give the whole checkpoint as stored; each rank takes the share of the parameters the
 *  config path gives it (vocab/TP shards, replicated norms and KV heads, its PP layers), plus
 *  what no checkpoint holds. */
int64_t CheckpointShare(const RankWeights& rw, int64_t whole_model_param_bytes, int64_t checkpoint_bytes) {
  const int64_t rank_params = rw.total_bytes - NotInCheckpoint(rw);
  const double share = static_cast<double>(rank_params) / static_cast<double>(whole_model_param_bytes);
  return CheckedAdd(
      CheckedDoubleToInt64(std::round(share * static_cast<double>(checkpoint_bytes)), "checkpoint_weights_bytes"),
      NotInCheckpoint(rw), "checkpoint_weights_bytes");
}

/*! --language-model-only, or --limit-mm-per-prompt with every modality the model takes at 0: vLLM
 *  treats the model as text only (no encoder profile run; the release may not build the tower). */
bool TextOnly(const ModelSpec& spec, const PlanInputs& in) {
  return in.language_model_only || MmAllModalitiesOff(spec, in.limit_mm_per_prompt);
}

/*! Whether every one of \p modalities is limited to 0: from the release that builds each tower inside
 *  _mark_tower_model(vllm_config, modality) (text_only_skips_vision_tower), that tower is left unbuilt.
 *  Gemma-3n's vision tower and embedder serve "image", its audio tower and embedder "audio"
 *  (gemma3n_mm.py), so limiting one modality drops that tower alone. */
bool ModalitiesOff(const PlanInputs& in, const std::vector<std::string>& modalities) {
  if (in.language_model_only) return true;
  if (!in.limit_mm_per_prompt.IsSet()) return false;
  for (const std::string& modality : modalities) {
    if (in.limit_mm_per_prompt.Count(modality) > 0) return false;
  }
  return true;
}

/*! Which towers a release that skips unused ones leaves unbuilt: the vision tower when the model is
 *  text only or its vision modalities are off, the audio tower (when the model has one) when audio is. */
struct SkippedTowers {
  bool vision = false;
  bool audio = false;
};

SkippedTowers SkippedTowersFor(const ModelSpec& spec, const PlanInputs& in) {
  SkippedTowers off;
  if (!in.text_only_skips_vision_tower) return off;
  std::vector<std::string> vision_modalities;
  if (spec.vision) vision_modalities = VisionModalities(*spec.vision);
  std::erase(vision_modalities, std::string("audio"));
  off.vision = TextOnly(spec, in) || (!vision_modalities.empty() && ModalitiesOff(in, vision_modalities));
  off.audio = spec.audio.has_value() && (TextOnly(spec, in) || ModalitiesOff(in, {"audio"}));
  return off;
}

/*! DeepSeek-V3.2: DeepseekV2Model allocates the indexer's topk_indices_buffer (max_num_batched_tokens x
 *  index_topk int32) on every pipeline rank while the model is built (vLLM deepseek_v2.py), so vLLM's
 *  "Model loading took" counts it beside the weights. */
int64_t IndexerTopkBufferBytes(const ModelSpec& spec, int64_t max_num_batched_tokens) {
  constexpr int64_t kInt32Bytes = 4;
  if (!spec.mla || spec.mla->index_topk == 0) return 0;
  return CheckedMul(CheckedMul(max_num_batched_tokens, spec.mla->index_topk, "index_topk"), kInt32Bytes, "index_topk");
}

/*! Gemma-3n: Gemma3nForConditionalGeneration allocates per_layer_embeddings (max_num_batched_tokens x
 *  num_layers x hidden_size_per_layer_input, the model dtype) while it is built (vLLM gemma3n_mm.py),
 *  so "Model loading took" counts it beside the weights. */
int64_t PerLayerEmbeddingBufferBytes(const ModelSpec& spec, int64_t max_num_batched_tokens, const std::string& dtype) {
  if (!spec.traits.per_layer_embedding_buffer) return 0;
  const char* field = "hidden_size_per_layer_input";
  const int64_t per_token = CheckedMul(spec.num_layers, spec.traits.per_layer_input_size, field);
  return CheckedMul(CheckedMul(max_num_batched_tokens, per_token, field), DTypeSizeBytes(ParseDType(dtype, "dtype")),
                    field);
}

/*! DeepSeek-V3.2: the WorkspaceManager buffer the FlashMLA sparse backend reserves as each MLA layer is
 *  built (sparse_mla_workspace.h); 0 where vLLM picks another backend or the GPU is not a catalog one. */
SparseMlaLoadWorkspace SparseMlaLoadWorkspaceFor(const ModelSpec& spec, const PlanInputs& in) {
  SparseMlaWorkspaceOptions o;
  if (const GpuInfo* gpu = FindCatalogGpu(in.gpu_name)) {
    o.gpu_known = true;
    o.compute_capability = gpu->compute_capability;
  }
  o.kv_cache_dtype = in.kv_cache_dtype;
  o.tensor_parallel_size = in.tensor_parallel_size;
  o.max_num_batched_tokens = in.max_num_batched_tokens;
  o.max_model_len_tokens = in.max_model_len > 0 ? in.max_model_len : in.max_num_batched_tokens;
  return EstimateSparseMlaLoadWorkspace(spec, o, in.activation_constants.sparse_mla_workspace);
}

/*! DeepSeek-V3.2's MTP drafter: each DeepSeekMultiTokenPredictorLayer allocates its own indexer
 *  topk_indices_buffer while it is built (vLLM deepseek_mtp.py, read in 0.11.0, 0.13.0, 0.20.0 and
 *  0.32.0), so "Model loading took" counts one per MTP layer beside the drafter's weights. */
int64_t DrafterIndexerTopkBufferBytes(const PlanRun& run, int64_t max_num_batched_tokens) {
  if (!run.spec_decode || run.spec_decode->method != "mtp" || !run.spec_decode->kv_model) return 0;
  const ModelSpec& mtp = *run.spec_decode->kv_model;
  return CheckedMul(IndexerTopkBufferBytes(mtp, max_num_batched_tokens), mtp.num_layers, "draft_weights_bytes");
}

/*! Buffers the model class allocates while it is built, counted by "Model loading took" with the
 *  weights: DeepSeek-V3.2's indexer top-k buffer, Gemma-3n's per-layer-embedding buffer. */
int64_t ModelBuildBufferBytes(const ModelSpec& spec, int64_t max_num_batched_tokens, const std::string& dtype) {
  return CheckedAdd(IndexerTopkBufferBytes(spec, max_num_batched_tokens),
                    PerLayerEmbeddingBufferBytes(spec, max_num_batched_tokens, dtype), "weights_bytes");
}

/*! --enable-lora: the LoRA manager is built inside load_model's DeviceMemoryProfiler
 *  (vllm/v1/worker/gpu_model_runner.py load_model, LoRAModelRunnerMixin.load_lora_model), so its
 *  adapter slots and the Punica wrapper's tensors are part of "Model loading took" (lora_estimate.h). */
LoraOptions LoraOptionsFor(const PlanInputs& in, const std::string& dtype) {
  if (in.lora_extra_vocab) {
    throw Unsupported("enable_lora: vLLM " + in.resolved_vllm_version +
                      " sizes LoRA slots with lora_extra_vocab_size extra vocabulary rows, which are not modelled "
                      "(the rule lora_extra_vocab in vllm_versions.json: modelled from 0.12.0)");
  }
  LoraOptions o;
  o.max_loras = in.max_loras;
  o.max_lora_rank = in.max_lora_rank;
  o.lora_dtype = in.lora_dtype;
  o.dtype = dtype;
  o.fully_sharded_loras = in.fully_sharded_loras;
  o.tensor_parallel_size = in.tensor_parallel_size;
  o.max_num_batched_tokens = in.max_num_batched_tokens;
  o.max_num_seqs = in.max_num_seqs;
  return o;
}

int64_t LoraSlotsBytes(const PlanRun& run, const PlanInputs& in, const RankPlan& rank) {
  if (!in.enable_lora) return 0;
  const bool last = rank.pp_rank == in.pipeline_parallel_size - 1;
  return EstimateLoraSlots(run.spec, LoraOptionsFor(in, run.weight_options.dtype), rank.first_layer, rank.end_layer,
                           rank.pp_rank == 0, last)
      .total_bytes;
}

/*! The kernels vLLM picks for the GPU and release, which decide what quantized weights hold after
 *  loading: MXFP4 experts (H100's "triton" without a catalog GPU) and AWQ / GPTQ /
 *  compressed-tensors WNA16 linears and experts (Machete on 9.0 widens zero points, Marlin MoE
 *  and Marlin linears allocate a workspace per layer; the checkpoint's layout without a catalog
 *  GPU). An explicit --quantization gptq (and awq, while awq_marlin repacked for
 *  Marlin only) makes vLLM "force" the plain kernels (override_quantization_method), which keep
 *  the checkpoint's tensors. */
void PickWeightKernels(const ModelSpec& spec, const PlanInputs& in, WeightOptions& wo) {
  if (!spec.quantization) return;
  if (spec.quantization->method == "mxfp4") {
    const std::string backend = Mxfp4BackendForGpu(in.gpu_name);
    if (!backend.empty()) wo.mxfp4_backend = backend;
  }
  const bool forced_plain = in.quantization == "gptq" || (in.quantization == "awq" && !in.awq_mp_linear_kernel);
  if (!forced_plain) {
    wo.mp_linear_kernel = MpLinearKernelForGpu(in.gpu_name, *spec.quantization, in.awq_mp_linear_kernel);
  }
  // A kernel is picked only for a catalog GPU, whose SM count sizes the Marlin workspaces.
  if (!wo.mp_linear_kernel.empty()) wo.gpu_sm_count = FindCatalogGpu(in.gpu_name)->sm_count;
}

/*! Phase 3: the weights each pipeline rank loads, the drafter's on the last rank ("Model
 *  loading took" includes it). */
void SizeWeights(PlanRun& run, StartupPlan& plan) {
  const PlanInputs& in = plan.inputs;
  WeightOptions& wo = run.weight_options;
  wo.dtype = in.dtype.empty() ? "auto" : in.dtype;
  wo.quantization = in.quantization;
  wo.tensor_parallel_size = in.tensor_parallel_size;
  wo.pipeline_parallel_size = in.pipeline_parallel_size;
  wo.mxfp4_hopper_value_align = in.mxfp4_hopper_value_align;
  // The length vLLM builds the model at (before any --max-model-len auto fit).
  if (run.spec.traits.rope_rows_capped_by_max_model_len) wo.max_model_len = run.kv_options.max_model_len;
  PickWeightKernels(run.spec, in, wo);
  // The model's remembered breakdown for these weight settings, when the caller keeps one.
  std::shared_ptr<const WeightBreakdown> remembered;
  std::optional<WeightBreakdown> computed;
  const WeightBreakdown& weights =
      run.sizing != nullptr ? *(remembered = run.sizing->Weights(wo)) : computed.emplace(ComputeWeights(run.spec, wo));
  int64_t whole_model_param_bytes = 1;  // the config's parameter bytes on one GPU (TP = PP = 1)
  if (in.checkpoint_weights_bytes > 0) {
    WeightOptions one_gpu = wo;
    one_gpu.tensor_parallel_size = one_gpu.pipeline_parallel_size = 1;
    const RankWeights& whole = ComputeWeights(run.spec, one_gpu).per_pp_rank.at(0);
    whole_model_param_bytes = std::max<int64_t>(1, whole.total_bytes - NotInCheckpoint(whole));
  }
  DraftWeights draft;
  if (run.spec_decode) draft = ComputeDraftWeights(run.spec, *in.speculative, *run.spec_decode, wo.dtype, wo.quantization);
  for (int64_t r = 0; r < in.pipeline_parallel_size; ++r) {
    RankPlan rank;
    rank.pp_rank = r;
    const RankWeights& rw = weights.per_pp_rank.at(static_cast<size_t>(r));
    rank.first_layer = rw.first_layer;
    rank.end_layer = rw.end_layer;
    rank.weights_bytes = rw.total_bytes;
    rank.vision_encoder_bytes = rw.vision_encoder_bytes;
    if (in.checkpoint_weights_bytes > 0) {
      rank.weights_bytes = CheckpointShare(rw, whole_model_param_bytes, in.checkpoint_weights_bytes);
    }
    rank.weights_bytes -= CpuOffloadedBytes(rw, in.cpu_offload_gb);
    rank.weights_bytes = CheckedAdd(
        rank.weights_bytes, ModelBuildBufferBytes(run.spec, in.max_num_batched_tokens, weights.dtype), "weights_bytes");
    rank.weights_bytes =
        CheckedAdd(rank.weights_bytes, SparseMlaLoadWorkspaceFor(run.spec, in).reserved_bytes, "weights_bytes");
    // The towers of modalities limited to 0 are not built by releases that skip them (vllm_versions.json).
    const SkippedTowers off = SkippedTowersFor(run.spec, in);
    if (off.vision) rank.weights_bytes -= std::exchange(rank.vision_encoder_bytes, 0);
    if (off.audio) rank.weights_bytes -= rw.audio_encoder_bytes;
    rank.lora_slots_bytes = LoraSlotsBytes(run, in, rank);
    rank.weights_bytes = CheckedAdd(rank.weights_bytes, rank.lora_slots_bytes, "weights_bytes");
    if (run.spec_decode && r == in.pipeline_parallel_size - 1) {
      rank.draft_weights_bytes = CheckedAdd(
          draft.total_bytes, DrafterIndexerTopkBufferBytes(run, in.max_num_batched_tokens), "draft_weights_bytes");
      rank.weights_bytes = CheckedAdd(rank.weights_bytes, rank.draft_weights_bytes, "draft_weights_bytes");
    }
    plan.ranks.push_back(std::move(rank));
  }
}

/*! Phase 4: the profile run's torch peak (activation, sampler) and non-torch growth per rank. */
/*! What a drafter adds to the V1 runner's profile run (gpu_model_runner.py): _dummy_run's
 *  drafter forward for the EAGLE-style proposers (use_eagle(): EAGLE, EAGLE-3, MTP) and
 *  _dummy_sampler_run's rejection-sampler pass for any speculative_config. The V2 runner's own
 *  profile run is not read for them. */
void SetSpeculativeProfileRun(const PlanRun& run, const PlanInputs& in, ActivationOptions& ao) {
  if (!run.spec_decode || in.model_runner != "v1") return;
  ao.rejection_sampler = true;
  const std::string& m = run.spec_decode->method;
  if (m == "eagle" || m == "eagle3" || m == "mtp") {
    ao.drafter = run.spec_decode->kv_model;
    ao.drafter_tensor_parallel_size = run.spec_decode->draft_tensor_parallel_size;
  }
}

void ProfilePeak(const PlanRun& run, StartupPlan& plan) {
  const PlanInputs& in = plan.inputs;
  for (RankPlan& rank : plan.ranks) {
    ActivationOptions ao;
    ao.max_num_batched_tokens = in.max_num_batched_tokens;
    ao.max_num_seqs = in.max_num_seqs;
    ao.tensor_parallel_size = in.tensor_parallel_size;
    ao.pipeline_parallel_size = in.pipeline_parallel_size;
    ao.pp_rank = rank.pp_rank;
    ao.dtype = run.weight_options.dtype;
    ao.constants = in.activation_constants;
    ao.max_model_len = in.max_model_len;
    ao.shared_workspace_reserved_bytes = SparseMlaLoadWorkspaceFor(run.spec, in).reserved_bytes;
    ao.limit_mm_per_prompt = in.limit_mm_per_prompt;
    ao.mm_processor_kwargs = in.mm_processor_kwargs;
    // --language-model-only is vLLM's limit of 0 for every modality: no encoder profile run.
    ao.language_model_only = in.language_model_only;
    ao.mm_dummy_options = in.mm_dummy_options;
    ao.skip_mm_profiling = in.skip_mm_profiling;
    ao.pixtral_dense_block_mask = in.pixtral_dense_block_mask;
    ao.qwen25_vision_qkv_copies = in.qwen25_vision_qkv_copies;
    ao.qwen25_vision_fp32_rotary = in.qwen25_vision_fp32_rotary;
    ao.qwen3_vl_dummy_video = in.qwen3_vl_dummy_video;
    ao.mm_modality_tie_by_name = in.mm_modality_tie_by_name;
    ao.qwen_vl_image_factor_pair = in.qwen_vl_image_factor_pair;
    ao.max_lora_rank = in.enable_lora ? in.max_lora_rank : 0;
    SetSpeculativeProfileRun(run, in, ao);
    ao.moonvit_dense_attention_mask = in.moonvit_dense_attention_mask;
    rank.activation = EstimateActivationPeak(run.spec, ao);
    rank.activation_peak_bytes = rank.activation.peak_bytes;
    rank.non_torch = EstimateNonTorchIncrease(in.tensor_parallel_size, in.pipeline_parallel_size,
                                              in.non_torch_constants);
    rank.non_torch_bytes = rank.non_torch.total_bytes;
    rank.non_kv_cache_bytes = CheckedAdd(CheckedAdd(rank.weights_bytes, rank.activation_peak_bytes, "non_kv"),
                                         rank.non_torch_bytes, "non_kv");
  }
}

/*! Phase 5: the CUDA-graph pool each rank captures. */
void CudaGraphs(const PlanRun& run, StartupPlan& plan) {
  const PlanInputs& in = plan.inputs;
  for (RankPlan& rank : plan.ranks) {
    CudagraphOptions co;
    co.enforce_eager = in.enforce_eager;
    co.mode = in.cudagraph_mode;
    co.capture_sizes = in.cudagraph_capture_sizes;
    if (run.spec_decode && !in.enforce_eager && in.cudagraph_mode != CudagraphMode::kNone) {
      // num_speculative_tokens widens the decode batch: sizes become multiples of 1 + K.
      co.capture_sizes = SpecDecodeCaptureSizes(in.cudagraph_capture_sizes, in.max_cudagraph_capture_size,
                                                in.max_num_seqs, in.max_num_batched_tokens,
                                                run.spec_decode->uniform_decode_query_len);
      co.uniform_decode_query_len = run.spec_decode->uniform_decode_query_len;
    }
    co.max_cudagraph_capture_size = in.max_cudagraph_capture_size;
    co.max_num_seqs = in.max_num_seqs;
    co.max_num_batched_tokens = in.max_num_batched_tokens;
    co.tensor_parallel_size = in.tensor_parallel_size;
    co.pipeline_parallel_size = in.pipeline_parallel_size;
    co.pp_rank = rank.pp_rank;
    co.dtype = run.weight_options.dtype;
    co.constants = in.cudagraph_constants;
    co.activation_constants = in.activation_constants;
    rank.cudagraph = run.sizing != nullptr ? *run.sizing->Cudagraphs(co) : EstimateCudagraphMemory(run.spec, co);
    rank.cudagraph_bytes = rank.cudagraph.total_bytes;
  }
}

/*! Phase 6: the KV budget per rank (vLLM's arithmetic, startup_budget.h) and the blocks it
 *  holds, from the layout's bytes per block. */
void SizeKvCache(PlanRun& run, StartupPlan& plan) {
  const PlanInputs& in = plan.inputs;
  const size_t num_budgets = static_cast<size_t>(in.pipeline_parallel_size);
  run.kv = run.sizing != nullptr && run.kv_layouts == &run.sizing->kv_layouts()
               ? run.sizing->KvQuery(run.kv_options, num_budgets)  // remembered by the model
               : std::make_shared<const KvCacheQuery>(*run.kv_layouts, run.kv_options, num_budgets);
  const KvCacheGeometry geometry = run.kv->Geometry();
  std::optional<KvCacheGeometry> target;  // without the drafter: the drafter's share of a block
  if (run.kv_layouts != run.target_layouts) target = ComputeKvCacheGeometry(*run.target_layouts, run.kv_options);
  plan.kv_block_size = geometry.block_size;
  plan.kv_single_group = geometry.groups.size() == 1 && geometry.block_size > 0 &&
                         geometry.groups[0].blocks_per_request == CeilDiv(run.kv_options.max_model_len, geometry.block_size) &&
                         (geometry.groups[0].kind == "full_attention" || geometry.groups[0].kind == "mla");
  AvailableKvOptions ko;
  ko.total_memory_bytes = in.total_memory_bytes;
  ko.gpu_memory_utilization = in.gpu_memory_utilization;
  ko.kv_cache_memory_bytes = in.kv_cache_memory_bytes;
  ko.init_free_memory_bytes = in.free_memory_bytes;
  ko.estimate_cudagraphs = in.cudagraph_memory_in_budget.value_or(false);
  for (RankPlan& rank : plan.ranks) {
    ProfileMeasurements pm;
    pm.weights_bytes = rank.weights_bytes;
    pm.torch_peak_increase_bytes = rank.activation_peak_bytes;
    pm.non_torch_increase_bytes = rank.non_torch_bytes;
    pm.cudagraph_estimate_bytes = rank.cudagraph_bytes;
    // Figures only: Headline prints the lines once, for the tightest rank.
    const AvailableKvMemory avail = AvailableKvCacheFigures(plan.requested_bytes, pm, ko);
    rank.cudagraph_applied_bytes = avail.cudagraph_applied_bytes;
    rank.available_kv_cache_bytes = avail.available_kv_cache_bytes;
    const size_t r = static_cast<size_t>(rank.pp_rank);
    rank.kv_bytes_per_block = geometry.bytes_per_block.at(r);
    if (target) rank.draft_kv_bytes_per_block = rank.kv_bytes_per_block - target->bytes_per_block.at(r);
    rank.kv_bytes_per_request = CheckedMul(rank.kv_bytes_per_block, geometry.blocks_per_request, "kv_bytes_per_request");
    rank.num_blocks = rank.kv_bytes_per_block > 0 && rank.available_kv_cache_bytes > 0
                          ? rank.available_kv_cache_bytes / rank.kv_bytes_per_block
                          : 0;
    rank.draft_kv_cache_bytes = CheckedMul(rank.num_blocks, rank.draft_kv_bytes_per_block, "draft_kv_cache_bytes");
    run.available.push_back(rank.available_kv_cache_bytes);
  }
}

/*! The tightest rank (fewest blocks, then least KV budget) gives the headline figures (and
 *  vLLM's CUDA-graph line and --kv-cache-memory suggestion, formatted on demand). */
void Headline(StartupPlan& plan) {
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
}

/*! The longest length in [1, options.max_model_len] one request fits on every rank, and the KV
 *  budget of the rank that limits it: vLLM estimates per worker, keeping the first worker whose
 *  estimate is below the running minimum (which starts at the derived length). */
std::pair<int64_t, int64_t> AutoFitPerRank(const PlanRun& run) {
  int64_t fitted = run.kv_options.max_model_len;
  int64_t limiting_bytes = run.available.empty() ? 0 : run.available.front();
  for (size_t r = 0; r < run.available.size(); ++r) {
    // Rank r alone: every other rank is given the most a device holds, so it never limits.
    std::vector<int64_t> only(run.available.size(), kMaxDeviceBytes);
    only[r] = run.available[r];
    const int64_t rank_len = only[r] > 0 ? AutoFitMaxModelLen(*run.kv_layouts, only, run.kv_options) : 0;
    if (rank_len < fitted) {
      fitted = rank_len;
      limiting_bytes = run.available[r];
    }
  }
  return {fitted, limiting_bytes};
}

/*! Phase 6b, --max-model-len auto / -1 (vLLM's _auto_fit_max_model_len, after profiling and
 *  before its KV check): the longest length one request fits on every rank, searched from the
 *  derived maximum to 1 token by token (no rounding to blocks). The scheduler sizes, the profile
 *  run and the CUDA graphs keep the derived length, as vLLM sized them before it knew its budget;
 *  only the KV cache is sized again, at the length it settled on. */
void AutoFit(PlanRun& run, StartupPlan& plan) {
  PlanInputs& in = plan.inputs;
  if (!in.max_model_len_auto) return;
  plan.auto_fit_from_max_model_len = in.max_model_len;
  plan.auto_fit_attention_free = std::all_of(plan.ranks.begin(), plan.ranks.end(),
                                             [](const RankPlan& r) { return r.kv_bytes_per_block <= 0; });
  if (plan.auto_fit_attention_free) return;  // vLLM keeps the derived length
  const auto [fitted, limiting_bytes] = AutoFitPerRank(run);
  plan.auto_fit_limiting_bytes = limiting_bytes;
  if (fitted <= 0) {
    run.auto_fit_refusal = kCannotAutoFitMessage;
    return;
  }
  if (fitted >= in.max_model_len) return;
  in.max_model_len = fitted;
  run.kv_options.max_model_len = fitted;
  run.available.clear();
  SizeKvCache(run, plan);  // the budget is the same; a request's blocks are not
}

/*! The largest max_model_len one request fits in, up to the model's own limit. */
void MaxModelLenThatFits(const PlanRun& run, StartupPlan& plan) {
  for (int64_t a : run.available) {
    if (a <= 0) return;
  }
  plan.max_model_len_that_fits = run.kv->EstimateMaxModelLen(run.available, plan.model_max_model_len);
}

/*! Phase 7: the verdict in vLLM's order (plan_verdict.h), then what a start that fits logs. */
void Judge(const PlanRun& run, StartupPlan& plan) {
  const PlanInputs& in = plan.inputs;
  VerdictFigures f;
  f.request_fits = run.request.fits;
  f.requested_bytes = plan.requested_bytes;
  f.free_memory_bytes = in.free_memory_bytes;
  for (const RankPlan& r : plan.ranks) {
    AddRank(f, r.weights_bytes, r.non_kv_cache_bytes, r.available_kv_cache_bytes, r.kv_bytes_per_block,
            r.kv_bytes_per_request, r.num_blocks, true);
  }
  const bool reaches_kv = f.request_fits && f.worst_weights_bytes <= f.free_memory_bytes &&
                          f.worst_non_kv_bytes <= f.free_memory_bytes;
  std::string kv_shortfall;
  if (reaches_kv) kv_shortfall = !run.auto_fit_refusal.empty() ? run.auto_fit_refusal : run.kv->Shortfall(run.available);
  f.kv_fits = kv_shortfall.empty();
  const VerdictWords words{plan.request_memory_error, kv_shortfall, in.engine == VllmEngine::kV0, in.max_model_len,
                           plan.kv_block_size};
  Verdict v = DecideVerdict(f, &words);
  plan.fits = v.fits();
  plan.failure_phase = v.phase;
  plan.failure_message = std::move(v.message);
  plan.shortfall_bytes = v.shortfall_bytes;
  if (plan.fits) plan.kv_cache = run.kv->Capacity(run.available);
  // vLLM prints its --kv-cache-memory suggestion whatever it holds; only offer it when it starts.
  // (The headline figures are the tightest rank's, as KvCacheMemorySuggestionOf formats them.)
  const int64_t suggested =
      KvCacheMemorySuggestionFigures(in.free_memory_bytes, plan.requested_bytes, plan.weights_bytes,
                                     plan.activation_peak_bytes, plan.non_torch_bytes, plan.cudagraph_bytes)
          .to_requested_limit_bytes;
  bool holds = suggested > 0 && reaches_kv;
  for (const auto& r : plan.ranks) holds = holds && r.kv_bytes_per_request > 0 && suggested >= r.kv_bytes_per_request;
  plan.kv_cache_memory_suggestion_fits = holds;
}

}  // namespace

std::string CudagraphLine(const StartupPlan& plan) {
  const PlanInputs& in = plan.inputs;
  return CudagraphProfilingLine(plan.cudagraph_bytes, in.total_memory_bytes, in.gpu_memory_utilization,
                                in.cudagraph_memory_in_budget.value_or(false));
}

std::string AutoFitLine(const StartupPlan& plan) {
  const int64_t from = plan.auto_fit_from_max_model_len;
  if (from <= 0) return "";
  const std::string head = "Auto-fit max_model_len: ";
  if (plan.auto_fit_attention_free) {
    return head + "attention-free model, using derived max_model_len=" + std::to_string(from);
  }
  const int64_t len = plan.inputs.max_model_len;
  if (plan.failure_message == kCannotAutoFitMessage) return "";
  if (len >= from) return head + "full model context length " + std::to_string(from) + " fits in available GPU memory";
  return head + "reduced from " + std::to_string(from) + " to " + std::to_string(len) +
         " to fit in available GPU memory (" + FormatGib(plan.auto_fit_limiting_bytes) + " GiB available for KV cache)";
}

std::vector<std::string> KvLogLines(const StartupPlan& plan) {
  if (!plan.kv_cache) return {};
  return KvCacheLogLinesFor(*plan.kv_cache, plan.inputs.kv_log_format);
}

std::string AvailableKvLine(const StartupPlan& plan) {
  if (plan.profile == nullptr) return "";  // a default-constructed plan: nothing was planned
  return AvailableKvCacheLine(*plan.profile, plan.inputs.vllm_engine, plan.available_kv_cache_bytes);
}

KvCacheMemorySuggestion KvCacheMemorySuggestionOf(const StartupPlan& plan) {
  const PlanInputs& in = plan.inputs;
  return SuggestKvCacheMemoryBytes(in.free_memory_bytes, in.total_memory_bytes, in.gpu_memory_utilization,
                                   plan.requested_bytes, plan.weights_bytes, plan.activation_peak_bytes,
                                   plan.non_torch_bytes, plan.cudagraph_bytes,
                                   std::max<int64_t>(0, plan.available_kv_cache_bytes));
}

namespace {

/*! The phases after the release's resolution. */
void RunPhases(PlanRun& run, StartupPlan& plan, const KvCacheLayoutCache* kv_layouts) {
  SetUpKvLayouts(run, plan.inputs, kv_layouts);
  RequestMemory(run, plan);
  SizeWeights(run, plan);
  ProfilePeak(run, plan);
  CudaGraphs(run, plan);
  SizeKvCache(run, plan);
  AutoFit(run, plan);
  plan.kv_query = run.kv;  // after the auto-fit: the pool at the length it settled on
  Headline(plan);
  MaxModelLenThatFits(run, plan);
  Judge(run, plan);
}

StartupPlan Evaluate(const ModelSpec& spec, PlanInputs&& inputs, const KvCacheLayoutCache* kv_layouts,
                     const SizingCache* sizing) {
  PlanRun run(spec);
  run.sizing = sizing;
  StartupPlan plan;
  ResolveRelease(run, std::move(inputs), plan);
  RunPhases(run, plan, kv_layouts);
  return plan;
}

}  // namespace

StartupPlan EvaluatePlan(const ModelSpec& spec, PlanInputs inputs, const KvCacheLayoutCache* kv_layouts) {
  return Evaluate(spec, std::move(inputs), kv_layouts, nullptr);
}

StartupPlan EvaluatePlan(const SizingCache& sizing, PlanInputs inputs) {
  return Evaluate(sizing.spec(), std::move(inputs), &sizing.kv_layouts(), &sizing);
}

StartupPlan EvaluateRequest(const SizingCache& sizing, const PlanRequest& request, const PlanEnvironment& environment) {
  PlanRun run(sizing.spec());
  run.sizing = &sizing;
  const std::shared_ptr<const ResolvedRelease> release = RememberedRelease(run, request, environment);
  // Copied in as the plan is made, not assigned over default-made ones: a default request makes
  // its strings (cudagraph_mode's takes the heap) only to drop them.
  StartupPlan plan{.request = request, .inputs = release->inputs};
  run.profile = plan.profile = release->profile;
  RunPhases(run, plan, &sizing.kv_layouts());
  return plan;
}

}  // namespace vllm_mem
