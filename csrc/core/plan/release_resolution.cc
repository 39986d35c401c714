/*!
 * \file core/plan/release_resolution.cc
 * \brief A plan's settings with the vLLM release's defaults filled in (ResolveForVersion).
 */
#include "vllm_mem/plan/release_resolution.h"

#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/model/dtype.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/model_runner.h"
#include "vllm_mem/plan/speculative_decoding.h"

namespace vllm_mem {
namespace {

// The model runner the release gives the model, which decides whether the graph estimate is
// budgeted (Model Runner V2 before 0.29 profiled none) and, from 0.29, refuses a plan whose
// budget would hold V2's measured graph memory (model_runner.h).
VllmModelRunner ResolveModelRunner(const VllmVersionProfile& profile, const ModelSpec& spec, PlanInputs& in) {
  const ModelRunnerChoice runner = ChooseModelRunner(
      profile, spec, in.speculative ? NormalizeSpeculativeMethod(in.speculative->method) : std::string());
  in.model_runner = VllmModelRunnerName(runner.runner);
  in.model_runner_note = runner.reason;
  if (!in.cudagraph_memory_in_budget.has_value()) {
    in.cudagraph_memory_in_budget = CudagraphMemoryInBudgetByDefault(profile, in.engine, runner.runner);
  }
  const bool captures_graphs = !in.enforce_eager && in.cudagraph_mode != CudagraphMode::kNone;
  if (const std::string r = V2GraphProfileRefusal(profile, runner.runner, captures_graphs,
                                                  *in.cudagraph_memory_in_budget, in.kv_cache_memory_bytes > 0);
      !r.empty()) {
    throw Unsupported(r);
  }
  return runner.runner;
}

/*! What the planned GPU's catalog entry decides (none for a GPU outside the catalog). */
void ResolveGpuFacts(const VllmVersionProfile& profile, VllmModelRunner runner, const ModelSpec& spec, PlanInputs& in) {
  const GpuInfo* gpu = FindCatalogGpu(in.gpu_name);
  // The Triton top-k/top-p kernel of the profile run's sampler keeps one float32 vocabulary row
  // per program, min(num_compute_units, rows) of them: the GPU's SM count. Model Runner V2 samples
  // the dummy batch without it (no rows), and releases before it have none (rule value 0).
  const int64_t release_programs = runner == VllmModelRunner::kV2 ? 0 : profile.sampler_kernel_programs;
  const int64_t sm_count = in.gpu_sm_count > 0 ? in.gpu_sm_count : (gpu != nullptr ? gpu->sm_count : 0);
  in.activation_constants.sampler_kernel_programs =
      release_programs == 0 ? 0 : (sm_count > 0 ? sm_count : kUnknownGpuSmCount);
  if (release_programs > 0 && sm_count == 0) {
    in.sampler_programs_note = "sampler: the top-k/top-p kernel's rows are sized for " +
                               std::to_string(kUnknownGpuSmCount) +
                               " SMs (an H100's): the GPU's SM count is unknown "
                               "(give a catalog GPU name for its own)";
  }
  // dtype "auto" on a GPU without bfloat16 (compute capability < 8.0): vLLM serves a bfloat16
  // checkpoint in float16 (CudaPlatform.supported_dtypes; _resolve_auto_dtype).
  if ((in.dtype.empty() || in.dtype == "auto") && spec.dtype == DType::kBFloat16 && gpu != nullptr &&
      !gpu->supports_bfloat16) {
    in.dtype = "float16";
    in.dtype_note = "dtype auto: the bfloat16 checkpoint is served as float16 on " + gpu->name +
                    " (compute capability " + gpu->compute_capability + " < 8.0 has no bfloat16), as vLLM does";
  }
}

}  // namespace

PlanInputs ResolveForVersion(const VllmVersionProfile& profile, const ModelSpec& spec, PlanInputs in) {
  RefuseIfNotModelled(in.vllm_version);
  in.resolved_vllm_version = profile.version;
  // A KV-cache dtype a later release added is refused as this release's vLLM refuses it.
  if (const std::string r = KvCacheDTypeRefusal(profile, in.kv_cache_dtype); !r.empty()) {
    throw InvalidArgument("kv_cache_dtype", r);
  }
  if (const std::string r = KvSkipLayersRefusal(profile, in.kv_cache_dtype_skip_layers); !r.empty()) {
    throw InvalidArgument("kv_cache_dtype_skip_layers", r);
  }
  if (const std::string r = LanguageModelOnlyRefusal(profile, in.language_model_only); !r.empty()) {
    throw InvalidArgument("language_model_only", r);
  }
  ValidateUsageContext(in.usage_context);
  in.engine = EngineFor(profile, in.vllm_engine);
  in.vllm_engine = VllmEngineName(in.engine);
  const bool v1 = in.engine == VllmEngine::kV1;
  if (!v1 && !profile.v0_engine_available) {
    throw InvalidArgument("vllm_engine", "\"v0\": vLLM " + profile.version +
                                             " has no V0 engine (removed in 0.11.0); use a vllm_version below 0.11");
  }
  if (in.gpu_memory_utilization == 0.0) in.gpu_memory_utilization = profile.gpu_memory_utilization;
  const VllmModelRunner runner = ResolveModelRunner(profile, spec, in);
  if (in.max_model_len == kMaxModelLenAuto) {
    // vLLM's auto-fit starts at the derived maximum: the scheduler sizes and the profile run are
    // resolved with it, and only the KV phase shortens it (EvaluatePlan).
    if (const std::string r = MaxModelLenAutoRefusal(profile); !r.empty()) throw InvalidArgument("max_model_len", r);
    in.max_model_len = DerivedMaxModelLen(spec);
    in.max_model_len_auto = true;
  } else if (in.max_model_len == 0) {
    in.max_model_len = DerivedMaxModelLen(spec);
  } else {
    const std::string refusal = LongMaxModelLenError(profile, spec, in.max_model_len, in.allow_long_max_model_len);
    if (!refusal.empty()) throw InvalidArgument("max_model_len", refusal);
  }
  const BatchDefaults b =
      ResolveBatchDefaults(profile, in.vllm_engine, in.usage_context, in.total_memory_bytes,
                           in.gpu_name, in.max_model_len,
                           in.max_num_seqs, in.max_num_batched_tokens);
  in.max_num_seqs = b.max_num_seqs;
  in.max_num_batched_tokens = b.max_num_batched_tokens;
  // Each runner samples the profile run's dummy logits its own way (vllm_versions.json).
  const double release_sampler =
      runner == VllmModelRunner::kV2 ? profile.v2_sampler_bytes_per_logit : profile.sampler_bytes_per_logit;
  in.activation_constants.sampler_bytes_per_logit =
      in.sampler_bytes_per_logit > 0.0 ? in.sampler_bytes_per_logit : release_sampler;
  in.activation_constants.sampler_fixed_bytes = profile.sampler_fixed_bytes;
  in.activation_constants.sparse_indexer = profile.sparse_indexer;
  in.activation_constants.sparse_mla_workspace = profile.sparse_mla_workspace;
  // The release's single-GPU non-torch figure, unless the caller calibrated its own constant.
  if (in.non_torch_constants.single_process_bytes == NonTorchConstants{}.single_process_bytes) {
    in.non_torch_constants.single_process_bytes = profile.non_torch_single_gpu_bytes;
  }
  in.hybrid_kv_cache_manager = v1 && profile.hybrid_kv_cache_manager;
  in.hybrid_align_to_user_block_size = profile.hybrid_align_to_user_block_size;
  in.mxfp4_hopper_value_align = profile.mxfp4_hopper_value_align;
  in.awq_mp_linear_kernel = profile.awq_mp_linear_kernel;
  in.moonvit_dense_attention_mask = profile.moonvit_dense_attention_mask;
  in.pixtral_dense_block_mask = profile.pixtral_dense_block_mask;
  in.qwen25_vision_qkv_copies = profile.qwen25_vision_qkv_copies;
  in.qwen25_vision_fp32_rotary = profile.qwen25_vision_fp32_rotary;
  in.qwen3_vl_dummy_video = profile.qwen3_vl_dummy_video;
  in.mm_modality_tie_by_name = profile.mm_modality_tie_by_name;
  in.qwen_vl_image_factor_pair = profile.qwen_vl_image_factor_pair;
  in.text_only_skips_vision_tower = profile.text_only_skips_vision_tower;
  in.mm_dummy_options = profile.mm_dummy_options;
  in.lora_extra_vocab = profile.lora_extra_vocab;
  if (in.enable_lora && !in.enforce_eager && in.cudagraph_mode != CudagraphMode::kNone) {
    in.lora_note = "lora: the CUDA graphs vLLM captures per active-adapter count are not in the graph estimate "
                   "(an eager start-up has none)";
  }
  if (!in.cap_sliding_window_at_full) in.cap_sliding_window_at_full = profile.sliding_window_capped_at_full;
  in.kv_log_format = !v1 ? KvLogFormat::kV0Blocks : profile.kv_log_format;
  ResolveGpuFacts(profile, runner, spec, in);
  return in;
}

namespace {

// vLLM's attn_type "attention_free" (IsAttentionFree: Mamba-1, Falcon-Mamba, Mamba-2): recurrent
// state and not one attention layer.
bool AttentionFree(const ModelSpec& spec) { return spec.hybrid && spec.hybrid->num_attention_layers == 0; }

// Prefix caching as the release runs it when the user left it unset: the hybrid default (rule
// hybrid_prefix_caching_default); attention-free models keep it off on every release, since
// ModelConfig.is_prefix_caching_supported is False for them (vllm_versions.json, that rule).
bool PrefixCachingOn(const VllmVersionProfile& profile, const ModelSpec& spec, const KvCacheSettings& settings) {
  return settings.enable_prefix_caching.value_or(profile.hybrid_prefix_caching_default && !AttentionFree(spec));
}

}  // namespace

std::string ResolvedMambaCacheMode(const VllmVersionProfile& profile, const ModelSpec& spec,
                                   const KvCacheSettings& settings) {
  const std::string mode = settings.mamba_cache_mode.empty() ? "none" : settings.mamba_cache_mode;
  if (AttentionFree(spec) && (mode != "none" || PrefixCachingOn(profile, spec, settings))) {
    // vLLM's is_prefix_caching_supported is False for attention-free models: there are no KV
    // blocks for a Mamba block size to align to, and what vLLM does with the request is not read.
    throw Unsupported(std::string(settings.enable_prefix_caching.value_or(false) ? "enable_prefix_caching"
                                                                                  : "mamba_cache_mode") +
                      ": prefix caching on an attention-free Mamba model (" + spec.model_type +
                      ") is not modelled: vLLM does not support it for these models (ModelConfig."
                      "is_prefix_caching_supported); plan with enable_prefix_caching=False and mamba_cache_mode='none'");
  }
  if (mode != "none" || !spec.hybrid || spec.hybrid->num_state_layers == 0) return mode;
  if (!PrefixCachingOn(profile, spec, settings)) return mode;
  // From 0.28 vLLM picks 'align' whatever the class and the speculative config (rule
  // mamba_cache_mode_align_by_default); before, by the class flag, and a class that refuses
  // 'all' has no flag.
  if (profile.mamba_cache_mode_align_by_default) return "align";
  if (spec.hybrid && !spec.hybrid->cache_mode_all_refusal.empty()) return "align";
  const std::string why = settings.enable_prefix_caching.has_value()
                              ? "on a hybrid (Mamba / linear-attention) model"
                              : "vLLM " + profile.version +
                                    " turns prefix caching on by default for hybrid (Mamba / linear-attention) "
                                    "models (pass enable_prefix_caching=False to plan without it); with it";
  throw InvalidArgument(
      "enable_prefix_caching",
      why + " vLLM " + profile.version +
          " sets mamba_cache_mode to 'all' when the model class supports Mamba prefix "
          "caching, else 'align' ('align' with speculative decoding in some releases; "
          "MambaModelConfig.verify_and_update_config; from 0.28 always 'align'); which one this model gets on "
          "this release is not modelled: pass mamba_cache_mode='all' or 'align' (vLLM's start-up log says which: "
          "'Mamba cache mode is set to ...')");
}

void BoundAutoMaxModelLen(const ModelSpec& spec, KvCacheOptions& options) {
  if (options.max_model_len == kMaxModelLenAuto) options.max_model_len = DerivedMaxModelLen(spec);
}

namespace {

/*! options.max_model_len auto fitted; false when not one token fits. */
bool FitAuto(const KvCacheLayoutCache& cache, const std::vector<int64_t>& available_bytes, KvCacheOptions& options) {
  if (options.max_model_len != kMaxModelLenAuto) return true;
  BoundAutoMaxModelLen(cache.spec(), options);
  const int64_t fitted = AutoFitMaxModelLen(cache, available_bytes, options);
  if (fitted <= 0) return false;
  options.max_model_len = fitted;
  return true;
}

}  // namespace

void AutoFitKvOptions(const KvCacheLayoutCache& cache, const std::vector<int64_t>& available_bytes,
                      KvCacheOptions& options) {
  if (!FitAuto(cache, available_bytes, options)) throw InsufficientMemory(kCannotAutoFitMessage);
}

std::string KvShortfallAutoFitted(const KvCacheLayoutCache& cache, const std::vector<int64_t>& available_bytes,
                                  KvCacheOptions options) {
  if (!FitAuto(cache, available_bytes, options)) return kCannotAutoFitMessage;
  return KvCacheMemoryShortfall(cache, available_bytes, options);
}

}  // namespace vllm_mem
