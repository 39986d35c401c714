/*!
 * \file vllm_mem/plan/startup_plan.h
 * \brief The offline start-up plan: how vLLM will spend one GPU's memory for a model and a set
 *        of serving settings, per pipeline rank, and whether (and where) it fails.
 *
 * The order is vLLM's: the free-memory check of request_memory, loading the weights, the
 * profile run (activation peak, non-torch growth, CUDA-graph estimate), the KV budget, then
 * vLLM's KV checks. Weights come from vllm_mem/model/weights.h and KV sizing from
 * vllm_mem/kv_cache/kv_cache_capacity.h; the profile-run terms are the estimators of
 * vllm_mem/plan/{activation,non_torch,cudagraph}_estimate.h; the budget arithmetic is
 * vllm_mem/plan/startup_budget.h. The tightest pipeline rank decides (vLLM takes the min of blocks).
 */
#ifndef VLLM_MEM_PLAN_STARTUP_PLAN_H_
#define VLLM_MEM_PLAN_STARTUP_PLAN_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vllm_mem/plan/activation_estimate.h"
#include "vllm_mem/plan/cudagraph_estimate.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_layout.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/non_torch_estimate.h"
#include "vllm_mem/plan/plan_request.h"
#include "vllm_mem/plan/plan_verdict.h"
#include "vllm_mem/plan/speculative_decoding.h"
#include "vllm_mem/plan/startup_budget.h"
#include "vllm_mem/plan/vllm_version_profile.h"

namespace vllm_mem {

class KvCacheQuery;  // vllm_mem/kv_cache/kv_cache_query.h

/*! \brief Device memory in use before vLLM's init snapshot on an otherwise idle GPU: the CUDA
 *  context (0.51 GiB on the calibration H100), and with NCCL set up (TP or PP > 1) its
 *  communicators too (1.43-1.53 GiB). Used when no free-memory figure is given. */
struct StartupBaselineConstants {
  int64_t single_process_bytes = 547608330;  //!< 0.51 GiB
  int64_t multi_process_bytes = 1610612736;  //!< 1.50 GiB
};

/*! \brief Everything a plan depends on: what was asked (PlanRequest, plan_request.h: every
 *  setting and its bounds, in one table) and what the release and the environment resolve.
 *  Sizes in bytes. */
struct PlanInputs : PlanRequest {
  std::string gpu_name;               //!< the report; a catalog GPU also decides dtype auto and the MXFP4 MoE kernel
  //! For the report only: where total_memory_bytes comes from ("estimated ..." / "given ..." /
  //! any other text for a runtime figure). Empty: derived from gpu_name's catalog entry (its
  //! figure source: an estimate says "estimated"), or "given" when there is no gpu_name.
  std::string total_memory_source;
  // ---- which vLLM (vllm_version_profile.h): ResolveForVersion fills the defaults above ----
  std::string vllm_version_source;  //!< for reports: "asked", "installed", "newest known"
  std::string vllm_engine;          //!< "v0" / "v1"; "": what the release runs by default
  VllmEngine engine = VllmEngine::kV1;  //!< vllm_engine resolved (ResolveForVersion)
  bool allow_long_max_model_len = false;  //!< VLLM_ALLOW_LONG_MAX_MODEL_LEN
  /*! max_model_len kMaxModelLenAuto was asked (ResolveForVersion sets it and resolves the length
   *  to the derived maximum; EvaluatePlan's auto-fit phase then shortens it to what fits). */
  bool max_model_len_auto = false;
  double sampler_bytes_per_logit = 0.0;   //!< 0: the release's (Triton top-k/top-p or not)
  /*! The GPU's SM count (the sampler's Triton rows); 0: gpu_name's catalog entry's, else an
   *  H100's 132 with a note. A sweep sets it per GPU swept. */
  int64_t gpu_sm_count = 0;
  // ---- filled by ResolveForVersion (inputs of EvaluatePlan's result) ----
  std::string resolved_vllm_version;  //!< the profile used ("0.19.0")
  std::string vllm_version_note;      //!< which profile and why, one line
  std::string model_runner;           //!< "v1" / "v2": the GPU model runner vLLM gives the model (model_runner.h)
  std::string model_runner_note;      //!< which runner and why, one line
  bool hybrid_kv_cache_manager = true;
  bool hybrid_align_to_user_block_size = true;  //!< the kv_cache area's rule of that name
  int64_t mxfp4_hopper_value_align = 64;  //!< the release's WeightOptions::mxfp4_hopper_value_align
  bool awq_mp_linear_kernel = true;  //!< the release's rule of that name (plan/mp_linear_kernel.h)
  bool pixtral_dense_block_mask = true;  //!< the release's Pixtral vision attention mask (multimodal profile run)
  bool qwen25_vision_qkv_copies = false;   //!< the release's Qwen2.5-VL vision attention copies q, k, v (same)
  bool qwen25_vision_fp32_rotary = false;  //!< the release's Qwen2.5-VL vision rotary in float32 (same)
  Qwen3VlDummyVideo qwen3_vl_dummy_video = Qwen3VlDummyVideo::kVideoBound2FramesKwargs;  //!< the release's (same)
  bool mm_modality_tie_by_name = true;       //!< the release's tie-break between modalities (same)
  bool qwen_vl_image_factor_pair = true;     //!< the release's Qwen-VL largest image rule (same)
  bool moonvit_dense_attention_mask = true;  //!< the release's MoonViT attention mask (multimodal profile run)
  bool text_only_skips_vision_tower = false;  //!< the release leaves the tower unbuilt when text only
  bool mm_dummy_options = true;  //!< the release's --limit-mm-per-prompt takes per-modality options
  bool lora_extra_vocab = false;  //!< the release's LoRA slots carry lora_extra_vocab_size rows (not modelled)
  // cap_sliding_window_at_full (PlanRequest): set here to the release's rule when not asked.
  KvLogFormat kv_log_format = KvLogFormat::kCombinedLine;
  std::string dtype_note;             //!< set when "auto" resolved differently than the checkpoint
  std::string sampler_programs_note;  //!< set when the sampler's rows assume an H100's SM count
  std::string lora_note;              //!< set when LoRA's extra CUDA-graph captures are left out
  /*! The checkpoint's weight bytes read from its safetensors headers (vllm_mem.hub); 0: from
   *  the config. Split over TP/PP ranks in the config path's proportions (EvaluatePlan). */
  int64_t checkpoint_weights_bytes = 0;  // 0: from the config
  /*! vLLM's --speculative-config: the drafter's weights and KV layers join the plan and
   *  num_speculative_tokens reshapes the capture sizes (speculative_decoding.h). */
  std::optional<SpeculativeConfig> speculative;
  ActivationConstants activation_constants;
  NonTorchConstants non_torch_constants;
  CudagraphConstants cudagraph_constants;
  StartupBaselineConstants baseline_constants;
};

/*! \brief One pipeline rank (every tensor-parallel GPU of a rank is alike). */
struct RankPlan {
  int64_t pp_rank = 0;
  int64_t first_layer = 0, end_layer = 0;
  int64_t weights_bytes = 0;             //!< with the drafter's (vLLM's "Model loading took")
  int64_t draft_weights_bytes = 0;       //!< the speculative drafter's part of weights_bytes
  int64_t vision_encoder_bytes = 0;      //!< a multimodal model's vision tower + projector part of weights_bytes
  int64_t lora_slots_bytes = 0;          //!< --enable-lora: adapter slots + Punica metadata, part of weights_bytes
  int64_t draft_kv_bytes_per_block = 0;  //!< the drafter's layers' part of kv_bytes_per_block
  int64_t draft_kv_cache_bytes = 0;      //!< num_blocks x draft_kv_bytes_per_block
  int64_t activation_peak_bytes = 0;
  int64_t non_torch_bytes = 0;
  int64_t cudagraph_bytes = 0;          //!< estimated graph pool (whether or not in the budget)
  int64_t cudagraph_applied_bytes = 0;  //!< the part subtracted from the KV budget
  int64_t non_kv_cache_bytes = 0;       //!< weights + activation + non-torch (vLLM's "non KV")
  int64_t available_kv_cache_bytes = 0; //!< requested - non-KV - applied graph memory
  int64_t kv_bytes_per_block = 0;       //!< one block id across this rank's layers
  int64_t kv_bytes_per_request = 0;     //!< one max_model_len request on this rank
  int64_t num_blocks = 0;               //!< before the min over ranks
  ActivationBreakdown activation;
  NonTorchBreakdown non_torch;
  CudagraphEstimate cudagraph;
};

/*! \brief The evaluated plan. */
struct StartupPlan {
  PlanRequest request;               //!< what was asked, as given
  PlanInputs inputs;                 //!< with defaults resolved (max_model_len, free memory)
  bool free_memory_assumed = true;   //!< free memory was not given: total minus the idle baseline
  int64_t requested_bytes = 0;
  std::vector<RankPlan> ranks{};  // (the {} initializers let EvaluateRequest designate only request and inputs)
  int64_t tightest_pp_rank = 0;      //!< the rank with the fewest KV blocks (or least budget)
  // The tightest rank's figures, for the headline.
  int64_t weights_bytes = 0;
  int64_t activation_peak_bytes = 0;
  int64_t non_torch_bytes = 0;
  int64_t cudagraph_bytes = 0;
  int64_t non_kv_cache_bytes = 0;
  int64_t available_kv_cache_bytes = 0;
  bool fits = false;
  FailurePhase failure_phase = FailurePhase::kNone;
  std::string failure_message{};     //!< vLLM's own message where vLLM has one
  int64_t shortfall_bytes = 0;       //!< how many bytes the failing phase lacks (per GPU)
  std::optional<KvCacheCapacity> kv_cache{};//!< when fits
  /*! The KV pool the figures above were sized from (the target's layers and a drafter's, at the
   *  plan's resolved KV options and length): a caller asks it another budget without building it
   *  again (a stage's least budget serving a concurrency, vllm_mem/stages/stage_demand.h). */
  std::shared_ptr<const KvCacheQuery> kv_query{};
  int64_t max_model_len_that_fits = 0;      //!< largest L <= the model's limit one request fits
  int64_t model_max_model_len = 0;          //!< the upper bound searched (model's max_position_embeddings)
  /*! --max-model-len auto / -1 (vLLM's _auto_fit_max_model_len): the derived length the fit
   *  started from, 0 when not asked; inputs.max_model_len is the length it settled on (still
   *  the derived one when not one token fits: the plan then fails with vLLM's "Cannot auto-fit
   *  max_model_len" ValueError, raised before vLLM changes the length). */
  int64_t auto_fit_from_max_model_len = 0;
  int64_t auto_fit_limiting_bytes = 0;  //!< the KV budget of the rank that limited the fit (vLLM's line)
  bool auto_fit_attention_free = false; //!< no KV layer: vLLM keeps the derived length
  int64_t kv_block_size = 0;                //!< tokens per block (vLLM's cache_config.block_size)
  /*! The KV cache is one group whose request needs cdiv(max_model_len, block) blocks (full
   *  attention or MLA): block counts then follow from bytes per block alone (plan_sweep.h). */
  bool kv_single_group = false;
  /*! The suggested --kv-cache-memory-bytes (to the requested limit, KvCacheMemorySuggestionOf)
   *  would start: it holds one max_model_len request on every rank and the phases before the
   *  KV cache pass. */
  bool kv_cache_memory_suggestion_fits = false;
  std::string request_memory_error{};  //!< vLLM's free-memory ValueError text, when it applies
  /*! The release profile that planned it (an entry of the static VllmVersionProfiles() table,
   *  never freed): the lines below are worded by it. */
  const VllmVersionProfile* profile = nullptr;
};

// vLLM's lines for a plan, formatted on demand from the plan's figures in the planned release's
// wording: EvaluatePlan formats none of them, so a plan in a loop (or a sweep) pays only for
// the lines a report reads (docs/performance.md). Each gives what vLLM would print.

/*! \brief vLLM's CUDA-graph INFO line (CudagraphProfilingLine of the tightest rank). */
std::string CudagraphLine(const StartupPlan& plan);
/*! \brief vLLM's "Auto-fit max_model_len: ..." INFO line of a max_model_len auto plan (the full
 *  length fits, reduced from L to M, or attention-free); "" when auto was not asked or nothing fit
 *  (the failure message is vLLM's ValueError then). */
std::string AutoFitLine(const StartupPlan& plan);
/*! \brief vLLM's KV capacity lines in the release's wording; empty when the plan does not fit. */
std::vector<std::string> KvLogLines(const StartupPlan& plan);
/*! \brief vLLM's "Available KV cache memory" line as the release rounds it. */
std::string AvailableKvLine(const StartupPlan& plan);
/*! \brief The --kv-cache-memory values vLLM would suggest with these estimates, and its line
 *  (SuggestKvCacheMemoryBytes of the tightest rank). */
KvCacheMemorySuggestion KvCacheMemorySuggestionOf(const StartupPlan& plan);

/*! \brief KV options (vLLM's settings) derived from plan inputs: one definition. */
KvCacheOptions KvOptionsFor(const ModelSpec& spec, const PlanInputs& inputs);

/*! \brief Evaluates one plan for the vLLM release inputs.vllm_version names (the defaults it
 *  leaves unset resolved with ResolveForVersion). InvalidArgument (naming the field) for bad inputs: utilization
 *  outside (0, 1], non-positive lengths, TP x PP above gpu_count, TP not dividing the heads,
 *  a negative budget or memory figure. A plan that does not fit is a result, not an error.
 *  \p kv_layouts: the model's cached KV layouts (kv_cache_layout.h) when the caller keeps
 *  them for \p spec, so repeated plans skip rebuilding the layers' specs and groups; the
 *  result is the same either way. \p inputs is taken by value: a caller done with its
 *  inputs moves them in, and the plan resolves them in place instead of copying. */
StartupPlan EvaluatePlan(const ModelSpec& spec, PlanInputs inputs, const KvCacheLayoutCache* kv_layouts = nullptr);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_STARTUP_PLAN_H_
