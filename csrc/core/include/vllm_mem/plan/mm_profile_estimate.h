/*!
 * \file vllm_mem/plan/mm_profile_estimate.h
 * \brief The multimodal part of vLLM's profile run: the encoder budget and the dummy encoder
 *        batch (core/plan/mm_profile_estimate.cc).
 *
 * vLLM's GPUModelRunner.profile_run (vllm/v1/worker/gpu_model_runner.py), for a multimodal model
 * whose encoder budget is positive and unless --skip-mm-profiling: takes the modality with the
 * most tokens per item, builds max_items_per_batch dummy items of the largest size
 * (_get_mm_dummy_batch), runs the encoder on them (embed_multimodal), keeps the outputs in the
 * encoder cache, then runs the text dummy forward and the dummy sampler, and only then clears the
 * cache. The dummy pixel inputs are a local of profile_run, so they stay allocated to its end too.
 * The torch peak is therefore the larger of the encoder phase (pixels + the tower's working set)
 * and the text phases with the pixels and the cached embeddings beside them.
 */
#ifndef VLLM_MEM_PLAN_MM_PROFILE_ESTIMATE_H_
#define VLLM_MEM_PLAN_MM_PROFILE_ESTIMATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/vision_profile_item.h"
#include "vllm_mem/plan/mm_settings.h"

namespace vllm_mem {

/*! \brief What the encoder budget is computed from. */
struct MmBudgetOptions {
  int64_t max_tokens_per_item = 0;  //!< the largest item's placeholder tokens
  int64_t max_num_batched_tokens = 0;
  int64_t max_num_seqs = 0;
  int64_t max_model_len = 0;
  int64_t limit_per_prompt = kDefaultMmLimitPerPrompt;  //!< 0 disables the modality
  bool chunked_prefill = true;                          //!< V1 always chunks prefill unless disabled
};

/*! \brief vLLM's encoder budget (vllm/v1/core/encoder_cache_manager.py compute_mm_encoder_budget;
 *  vllm/multimodal/encoder_budget.py MultiModalBudget._get_max_items). */
struct MmEncoderBudget {
  int64_t encoder_compute_budget_tokens = 0;  //!< max(max_num_batched_tokens, max_tokens_per_item)
  int64_t encoder_cache_size_tokens = 0;      //!< the same by default
  int64_t max_items_per_prompt = 0;
  int64_t max_items_per_batch = 0;  //!< the dummy batch: "profiled with N image items"
  /*! min(compute budget, cache size): the "budget of N tokens" vLLM prints; 0 when disabled. */
  int64_t encoder_budget_tokens = 0;
};

/*! \brief The budget for one modality. InvalidArgument for non-positive counts (limit >= 0). */
MmEncoderBudget ComputeMmEncoderBudget(const MmBudgetOptions& options);

/*! \brief The serving settings the multimodal profile depends on. */
struct MmProfileOptions {
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
  int64_t max_model_len = 8192;
  MmLimitPerPrompt limit_mm_per_prompt;  //!< unset: vLLM's 999 of every modality
  MmProcessorKwargs mm_processor_kwargs;
  bool language_model_only = false;  //!< every modality limited to 0
  bool skip_mm_profiling = false;
  /*! The release takes --limit-mm-per-prompt's per-modality options (vllm_versions.json
   *  mm_dummy_options); before it an entry is a count only. */
  bool mm_dummy_options = true;
  int64_t tensor_parallel_size = 1;
  std::string dtype = "auto";
  /*! The release builds Pixtral's block-diagonal attention mask as a dense [N, N] tensor over
   *  every patch of the batch (vllm_versions.json pixtral_dense_block_mask). */
  bool pixtral_dense_block_mask = true;
  /*! The release's Qwen2.5-VL vision attention copies q, k and v out of the qkv projection
   *  (.contiguous(); at TP > 1 after gathering every rank's qkv), vllm_versions.json
   *  qwen25_vision_qkv_copies, and rotates q and k through float32 (qwen25_vision_fp32_rotary). */
  bool qwen25_vision_qkv_copies = false;
  bool qwen25_vision_fp32_rotary = false;
  /*! How the release sizes Qwen3-VL's dummy video (vllm_versions.json qwen3_vl_dummy_video): at the
   *  image's size with frames by max_model_len before 0.15.0, two frames at its video processor's own
   *  bound after (model/vision_profile_item.h). */
  Qwen3VlDummyVideo qwen3_vl_dummy_video = Qwen3VlDummyVideo::kVideoBound2FramesKwargs;
  /*! MultiModalBudget.get_modality_with_max_tokens breaks a token tie by the modality's name, the later
   *  one winning (video over image: vllm_versions.json mm_modality_tie_by_name); else the first one in
   *  get_mm_max_tokens_per_item's order (image). */
  bool mm_modality_tie_by_name = true;
  /*! The Qwen-VL processors' largest image is the closest rows x columns factor pair of the merged
   *  patches max_pixels holds (vllm_versions.json qwen_vl_image_factor_pair); else the smart_resize of a
   *  9999999-pixel square. */
  bool qwen_vl_image_factor_pair = true;
  /*! The release runs MoonViT's attention through torch SDPA with a dense [1, N, N] boolean mask
   *  over every patch of the batch, on the math path (vllm_versions.json moonvit_dense_attention_mask);
   *  else through vLLM's MMEncoderAttention with per-image cu_seqlens. */
  bool moonvit_dense_attention_mask = true;
};

/*! \brief The multimodal profile run, term by term (bytes on one GPU). */
struct MmProfileBreakdown {
  bool modelled = false;  //!< the tower's processor has a rule (vision_profile_item.h)
  bool runs = false;      //!< the encoder profile runs (modelled, not skipped, budget > 0)
  MmEncoderBudget budget;
  std::string modality;                       //!< the modality profiled ("image", "video"); "" when none runs
  int64_t video_frames = 0;                   //!< the dummy video's frames when the modality is video
  std::vector<std::string> no_effect_kwargs;  //!< mm_processor_kwargs keys that change no tensor's size
  int64_t items = 0;                          //!< dummy items encoded
  int64_t pixel_bytes = 0;                    //!< the dummy pixel_values, alive to profile_run's end
  int64_t encoder_output_bytes = 0;           //!< cached embeddings, alive through the text phases
  int64_t attention_mask_bytes = 0;           //!< Pixtral's / MoonViT's dense masks (releases that build them)
  int64_t encoder_layer_bytes = 0;            //!< the tower's largest layer working set
  int64_t encoder_phase_bytes = 0;            //!< pixels + mask + layer working set
  int64_t resident_bytes = 0;                 //!< pixels + cached embeddings, beside the text phases
};

/*! \brief The multimodal profile run of \p spec; all zero for a text model, a tower without an
 *  item rule (modelled false), every modality limited to 0, --language-model-only or
 *  --skip-mm-profiling. InvalidArgument for a modality the model does not take or options the
 *  release does not take; Unsupported (named) for a processor kwarg or a dummy item with no rule. */
MmProfileBreakdown EstimateMmProfile(const ModelSpec& spec, const MmProfileOptions& options);

/*! \brief Every modality \p spec's processor takes is limited to 0 (vLLM then serves text only);
 *  false for a model with no vision tower rules. */
bool MmAllModalitiesOff(const ModelSpec& spec, const MmLimitPerPrompt& limit);

}  // namespace vllm_mem

#endif  // VLLM_MEM_PLAN_MM_PROFILE_ESTIMATE_H_
