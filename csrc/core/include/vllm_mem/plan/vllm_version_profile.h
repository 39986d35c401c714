/*!
 * \file vllm_mem/plan/vllm_version_profile.h
 * \brief Which vLLM release a plan is for, and the start-up rules of that release: defaults
 *        (gpu_memory_utilization, scheduler sizes by GPU and usage context), whether the
 *        CUDA-graph estimate is in the KV budget, the engine's budget arithmetic, the sampler's
 *        transient memory, the KV-cache manager and the wording of vLLM's log lines.
 *
 * The rules are data (plan/vllm_versions.json, compiled in), each change with its source; a
 * version resolves to the newest profile not newer than it. docs/vllm_versions.md has the table.
 */
#ifndef VLLM_MEM_PLAN_VLLM_VERSION_PROFILE_H_
#define VLLM_MEM_PLAN_VLLM_VERSION_PROFILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/model/vision_profile_item.h"
#include "vllm_mem/plan/sparse_indexer_profile.h"
#include "vllm_mem/plan/sparse_mla_workspace.h"

namespace vllm_mem {

struct ModelSpec;

/*! \brief vLLM's engine: V0 (vllm/worker, up to 0.10) or V1 (vllm/v1). The Python API and
 *  vllm_versions.json say "v0" / "v1"; ParseVllmEngine is the one conversion from text. */
enum class VllmEngine { kV0, kV1 };
const char* VllmEngineName(VllmEngine engine);  //!< "v0" / "v1"
/*! \brief "v0" / "v1"; InvalidArgument (field "vllm_engine") for anything else. */
VllmEngine ParseVllmEngine(std::string_view text);

/*! \brief A release number: major.minor.patch (pre-release and local suffixes dropped). */
struct VllmVersion {
  int64_t major = 0, minor = 0, patch = 0;
  bool operator<(const VllmVersion& o) const;
  bool operator<=(const VllmVersion& o) const { return !(o < *this); }
};

/*! \brief Parses "0.19", "0.19.1", "v0.10.2", "0.11.0rc1", "0.20.1.dev12+g3e372c5", "0.9.2+cu128".
 *  InvalidArgument (field "vllm_version") naming the value and the allowed form otherwise. */
VllmVersion ParseVllmVersion(std::string_view text);
std::string VllmVersionString(const VllmVersion& v);  //!< "0.19.0"

/*! \brief max_num_seqs / max_num_batched_tokens vLLM picks for one kind of GPU. A tier matches
 *  when the device has at least min_memory_bytes and its name (lower-cased) contains one of
 *  name_contains_any (when given) and none of name_contains_none. */
struct BatchDefaultTier {
  int64_t min_memory_bytes = 0;
  std::vector<std::string> name_contains_any;
  std::vector<std::string> name_contains_none;
  int64_t server_max_num_seqs = 0, server_max_num_batched_tokens = 0;
  int64_t offline_max_num_seqs = 0, offline_max_num_batched_tokens = 0;
};

/*! \brief V0 engine scheduler defaults (SchedulerConfig / _set_default_args_v0). */
struct V0BatchDefaults {
  int64_t max_num_seqs = 256;
  int64_t min_batched_tokens = 2048;              //!< max(max_model_len, this) without chunked prefill
  int64_t chunked_prefill_above_tokens = 32768;   //!< V0 turned chunked prefill on above this
  int64_t chunked_prefill_batched_tokens = 2048;  //!< its token budget then
};

/*! \brief One rule's value in a profile, for listings: name, value as text, source. */
struct VersionRuleNote {
  std::string rule;
  std::string value;
  std::string since;    //!< the release that introduced this value
  std::string release;  //!< "tagged" (read from a release note/tag) or "inferred" (merge date)
  std::string source;
};

/*! \brief The rules of one vLLM release line. */
struct VllmVersionProfile {
  std::string version;  //!< "0.19.0": the first release these rules apply to
  std::string date;     //!< release date where read, else ""
  std::string note;
  std::string engine;   //!< "v0" or "v1": what a plain `vllm serve` runs
  bool v0_engine_available = false;
  double gpu_memory_utilization = 0.9;
  bool cudagraph_memory_in_budget = false;
  std::vector<BatchDefaultTier> batch_tiers;  //!< V1; the first matching tier wins
  V0BatchDefaults v0_batch;
  double sampler_bytes_per_logit = 12.0;     //!< the V1 runner's dummy sampler (activation_estimate.h)
  int64_t sampler_kernel_programs = 132;      //!< ActivationConstants: the Triton top-k/top-p buffer's rows
  int64_t sampler_fixed_bytes = 50331648;     //!< ActivationConstants: the sampler phase's fixed bytes
  SparseIndexerProfile sparse_indexer;  //!< ActivationConstants: DeepSeek-V3.2's indexer in the profile run
  SparseMlaWorkspaceRule sparse_mla_workspace;  //!< ActivationConstants: FlashMLA sparse's load-time buffers
  double v2_sampler_bytes_per_logit = 4.0;   //!< Model Runner V2's dummy sampler (its float32 copy)
  int64_t non_torch_single_gpu_bytes = 263066746;  //!< one GPU's non-torch increase (NonTorchConstants)
  KvLogFormat kv_log_format = KvLogFormat::kCombinedLine;
  bool hybrid_kv_cache_manager = true;
  int64_t default_block_size = 16;
  bool hybrid_align_to_user_block_size = true;  //!< PR 37467 (kv_cache: KvCacheOptions)
  bool sliding_window_capped_at_full = false;    //!< KvCacheOptions.cap_sliding_window_at_full
  int64_t mxfp4_hopper_value_align = 64;  //!< WeightOptions::mxfp4_hopper_value_align (vendored triton_kernels)
  bool awq_mp_linear_kernel = true;  //!< AWQ linears go through choose_mp_linear_kernel (Machete on 9.0), not Marlin only
  bool pixtral_dense_block_mask = true;  //!< Pixtral's vision attention over a dense [N, N] mask (mm_profile_estimate.h)
  bool qwen25_vision_qkv_copies = false;   //!< Qwen2.5-VL's vision attention copies q, k, v (mm_profile_estimate.h)
  bool qwen25_vision_fp32_rotary = false;  //!< Qwen2.5-VL's vision attention rotates through float32 (same)
  Qwen3VlDummyVideo qwen3_vl_dummy_video = Qwen3VlDummyVideo::kVideoBound2FramesKwargs;  //!< Qwen3-VL's dummy video
  bool mm_modality_tie_by_name = true;       //!< a token tie between modalities goes to the later name (video)
  bool qwen_vl_image_factor_pair = true;     //!< the Qwen-VL largest image by a rows x columns factor pair
  bool moonvit_dense_attention_mask = true;  //!< MoonViT's SDPA over a dense [1, N, N] mask (mm_profile_estimate.h)
  bool text_only_skips_vision_tower = false;  //!< no tower weights when every modality is limited to 0
  bool mm_dummy_options = true;  //!< --limit-mm-per-prompt takes per-modality options (count, width, ...)
  bool hybrid_prefix_caching_default = true;  //!< prefix caching on when unset for a hybrid model
  bool mamba_cache_mode_align_by_default = true;  //!< prefix caching on, mode unset: 'align' for every class
  bool lora_extra_vocab = false;  //!< LoRA slots with lora_extra_vocab_size rows (rule lora_extra_vocab)
  bool available_kv_line_format_gib = true;  //!< "Available KV cache memory": format_gib, else "%.2f"
  bool long_max_model_len_warning = true;  //!< the refusal carries the "extreme caution" text
  bool max_model_len_auto = true;          //!< --max-model-len -1 / auto is vLLM's auto-fit
  bool kv_cache_dtype_skip_layers = true;  //!< --kv-cache-dtype-skip-layers exists (KvSkipLayersRefusal)
  bool language_model_only_flag = true;    //!< --language-model-only exists (LanguageModelOnlyRefusal)
  /*! The versioned --kv-cache-dtype names this release accepts (rule kv_cache_dtypes_added);
   *  names no change lists are accepted on every release (KvCacheDTypeRefusal). */
  std::vector<std::string> kv_cache_dtypes_added;
  /*! Which models Model Runner V2 serves by default: "none", "listed" (the architectures below
   *  only), "dense" (and the architectures below) or "all" (model_runner.h). */
  std::string v2_runner_serves = "none";
  /*! DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES: config.json architectures V2 serves beside "dense". */
  std::vector<std::string> v2_runner_architectures;
  bool v2_runner_listed_dense_unquantized = false;  //!< "listed" only for non-MoE, unquantized models
  std::vector<std::string> v2_runner_speculative_methods;  //!< the methods V2 runs; others fall back to V1
  bool v2_runner_cudagraph_profiling = false;  //!< V2's profile_cudagraph_memory measures (else returns 0)
  std::vector<VersionRuleNote> rules;      //!< every rule with its value and source
};

/*! \brief All profiles, oldest first. */
const std::vector<VllmVersionProfile>& VllmVersionProfiles();

/*! \brief The answer to "which profile plans version X". */
struct VersionLookup {
  const VllmVersionProfile* profile = nullptr;
  std::string asked;   //!< the normalised asked version ("0.19.0"); "" when none was asked
  bool newer_than_known = false;  //!< the asked version is newer than the newest profile
  std::string note;    //!< one line for reports: which profile and why
};

/*! \brief The newest profile <= \p version ("" : the newest profile whose CUDA-graph start-ups are
 *  planned, 0.28.0: from 0.29 Model Runner V2 measures its graphs). A version older than the
 *  oldest profile is InvalidArgument("vllm_version"); a newer one uses the newest and says so. */
VersionLookup LookupVllmVersion(std::string_view version);

/*! \brief The KV-cache rules of \p profile's release on \p options, as plan() applies them (one
 *  function, so kv_cache_capacity and plan agree): the printed token count (kv_log_format), the
 *  hybrid block alignment, the sliding-window cap and, for releases without the hybrid KV-cache
 *  manager (or the V0 engine), every layer sized for the full length. \p engine: "v0" or "v1"
 *  ("" : the release's default). */
void ApplyVersionKvRules(const VllmVersionProfile& profile, const std::string& engine, KvCacheOptions& options);

/*! \brief "" when \p profile's release accepts \p kv_cache_dtype, else vLLM's refusal: pydantic's
 *  literal_error for CacheConfig.cache_dtype (a name a later release added, rule
 *  kv_cache_dtypes_added), with the first release that accepts it. Unknown names are the
 *  kv_cache area's error (ResolveKvCacheDType), not this one's. */
std::string KvCacheDTypeRefusal(const VllmVersionProfile& profile, std::string_view kv_cache_dtype);

/*! \brief "" when \p profile's release reads --max-model-len -1 / auto as its auto-fit (rule
 *  max_model_len_auto), else why the plan refuses it: before the rule vLLM's parser refused the
 *  word auto (argparse: "invalid human_readable_int value: 'auto'") and took -1 as a length that
 *  no check refused (ModelConfig's max_model_len skips validation; _get_and_verify_max_len only
 *  bounds a length above the derived one), so what such a start-up did is not modelled. */
std::string MaxModelLenAutoRefusal(const VllmVersionProfile& profile);

/*! \brief "" when \p skip_layers is empty or \p profile's release has --kv-cache-dtype-skip-layers
 *  (rule kv_cache_dtype_skip_layers), else vLLM's own refusal of a flag its parser does not know
 *  (argparse: "unrecognized arguments: --kv-cache-dtype-skip-layers ...") with the first release
 *  that has it. */
std::string KvSkipLayersRefusal(const VllmVersionProfile& profile, const std::vector<std::string>& skip_layers);

/*! \brief "" unless \p language_model_only is asked of a release without --language-model-only
 *  (rule language_model_only_flag), then vLLM's parser's refusal of the unknown flag with the first
 *  release that has it. Before it a text-only start-up limits every modality to 0 instead. */
std::string LanguageModelOnlyRefusal(const VllmVersionProfile& profile, bool language_model_only);

/*! \brief The scheduler defaults vLLM picks: V1 by GPU tier and usage context ("server" for
 *  `vllm serve` / the API server, "offline" for the LLM class), V0 from max_model_len; then
 *  vLLM's clamps (tokens <= max_num_seqs x max_model_len, seqs <= tokens). Either figure the
 *  user gave (> 0) is kept. */
struct BatchDefaults {
  int64_t max_num_seqs = 0;
  int64_t max_num_batched_tokens = 0;
};
BatchDefaults ResolveBatchDefaults(const VllmVersionProfile& profile, const std::string& engine,
                                   const std::string& usage_context, int64_t total_memory_bytes,
                                   const std::string& gpu_name, int64_t max_model_len, int64_t max_num_seqs,
                                   int64_t max_num_batched_tokens);

/*! \brief vLLM's derived maximum length (_get_and_verify_max_len): max_position_embeddings,
 *  times the rope scaling factor except for su/longrope/llama3 and Gemma-3, with yarn scaling
 *  original_max_position_embeddings (the rotary cache rows the model reader derived). 0 when
 *  the config gives none. */
int64_t DerivedMaxModelLen(const ModelSpec& spec);

/*! \brief vLLM's refusal of a max_model_len above DerivedMaxModelLen, as vLLM words it for
 *  \p profile; "" when \p max_model_len is allowed (or \p allow_long is set). */
std::string LongMaxModelLenError(const VllmVersionProfile& profile, const ModelSpec& spec, int64_t max_model_len,
                                 bool allow_long);

/*! \brief Unsupported (not modelled) when \p asked is a release from which vllm_versions.json's
 *  "not_modelled" list says the start-up is not modelled; "" is never refused. */
void RefuseIfNotModelled(const std::string& asked);

/*! \brief The engine \p asked ("v0" / "v1"), or \p profile's default when \p asked is "". */
VllmEngine EngineFor(const VllmVersionProfile& profile, std::string_view asked);

/*! \brief vLLM's line for the KV budget as \p engine of \p profile prints it: V1 "Available KV cache
 *  memory: 42.8 GiB" (format_gib, or "%.2f" in older releases); V0 "... the rest of the memory
 *  reserved for KV Cache is 42.80GiB." (the tail of its memory-profiling message). */
std::string AvailableKvCacheLine(const VllmVersionProfile& profile, const std::string& engine, int64_t available_bytes);

/*! \brief "usage_context": "server" or "offline"; InvalidArgument otherwise. */
void ValidateUsageContext(const std::string& usage_context);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_VLLM_VERSION_PROFILE_H_
