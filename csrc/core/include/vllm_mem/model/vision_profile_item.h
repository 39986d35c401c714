/*!
 * \file vllm_mem/model/vision_profile_item.h
 * \brief The largest image vLLM's processor makes for a vision tower: what one dummy item of
 *        the start-up profile run costs in prompt tokens, pixels, tower tokens and cached
 *        embeddings (core/model/vision_profile_item.cc).
 *
 * vLLM sizes its encoder budget and its dummy multimodal batch from the processor's "image size
 * with most features" (vllm/multimodal/profiling.py, each model's ProcessingInfo
 * get_image_size_with_most_features / get_num_image_tokens): Gemma-3 and Mistral-3 from config.json,
 * the Qwen-VL processors from the published preprocessor's max_pixels (VisionEncoderSpec::max_pixels,
 * smart_resize), Llama-4 from the image processor's max_patches (VisionEncoderSpec::max_dynamic_tiles),
 * Kimi-VL from its processor's in_token_limit (VisionEncoderSpec::in_token_limit), Gemma-3n from its
 * processor's square (VisionEncoderSpec::image_size; its audio item: audio_profile_item.h).
 * A tower whose processor has no rule
 * here has no item (nullopt): the plan then keeps the vision-profiling caveat.
 */
#ifndef VLLM_MEM_MODEL_VISION_PROFILE_ITEM_H_
#define VLLM_MEM_MODEL_VISION_PROFILE_ITEM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vllm_mem/model/vision_encoder.h"

namespace vllm_mem {

/*! \brief One maximum-size image as the profile run builds it. */
struct VisionDummyItem {
  int64_t prompt_tokens = 0;   //!< placeholder tokens in the prompt (get_mm_max_tokens_per_item)
  int64_t embed_rows = 0;      //!< rows the encoder returns for it (kept in the encoder cache)
  int64_t pixel_elements = 0;  //!< pixel_values elements (channels x height x width)
  int64_t patch_tokens = 0;    //!< the tower's sequence length for it (patches; Gemma-3n's CNN: its output tokens)
};

/*! \brief The largest item of \p spec's processor, or nullopt when its processor has no rule. */
std::optional<VisionDummyItem> LargestVisionItem(const VisionEncoderSpec& spec);

/*! \brief What a serving start asks of the processor beyond its published defaults: vLLM's
 *  --mm-processor-kwargs bounds and the --limit-mm-per-prompt dummy options. 0: not given. */
struct VisionItemRequest {
  int64_t max_pixels = 0;      //!< the smart_resize processors' largest area
  int64_t min_pixels = 0;      //!< their smallest area
  /*! --mm-processor-kwargs size.longest_edge alone (max_pixels does not replace it here): Qwen3-VL's
   *  video target reads the size dict only (qwen3_vl.py get_max_video_tokens: mm_kwargs.get("size", ...)). */
  int64_t size_longest_edge = 0;
  int64_t in_token_limit = 0;  //!< Kimi-VL's processor's patch budget (its in_token_limit)
  int64_t width = 0;           //!< the dummy's width (vLLM keeps the smaller of it and the largest image's)
  int64_t height = 0;
  int64_t num_frames = 1;                           //!< frames: 1 an image, more a video (smart_resize processors)
  /*! The release finds the largest image by a rows x columns factor pair of the merged patches the bound
   *  holds (vllm_versions.json qwen_vl_image_factor_pair, 0.13.0 on), not a square smart_resize. */
  bool factor_pair = false;
  std::string field = "limit_mm_per_prompt.image";  //!< named when the processor refuses the size
};

/*! \brief True when \p spec's processor is a smart_resize one (Qwen2-VL, Qwen2.5-VL, Qwen3-VL): the
 *  one kind whose item follows VisionItemRequest's bounds, sizes and frames. */
bool IsSmartResizeProcessor(const VisionEncoderSpec& spec);

/*! \brief True when \p spec is Kimi-VL's MoonViT with its processor's patch budget: the one kind whose
 *  item follows VisionItemRequest::in_token_limit. */
bool IsKimiVlProcessor(const VisionEncoderSpec& spec);

/*! \brief The dummy item vLLM builds for \p request: the largest image (or video of
 *  request.num_frames frames) within the bounds, shrunk to the dummy options' size, as the
 *  processor resizes it. nullopt when the processor has no rule; the request's bounds and sizes
 *  apply to smart_resize processors only (the caller refuses them elsewhere). InvalidArgument
 *  (request.field) for a size transformers refuses (an aspect ratio above 200). */
std::optional<VisionDummyItem> VisionItem(const VisionEncoderSpec& spec, const VisionItemRequest& request);

/*! \brief Frames of Qwen3-VL's dummy video (qwen3_vl.py Qwen3VLDummyInputsBuilder.get_dummy_mm_data:
 *  target_num_frames = 2; a num_frames option only lowers it and never below 2). */
constexpr int64_t kQwen3VlDummyVideoFrames = 2;

/*! \brief How a vLLM release sizes Qwen3-VL's dummy video (vllm_versions.json qwen3_vl_dummy_video; each
 *  value is the rule's name there). qwen3_vl.py arrived in 0.11.0. */
enum class Qwen3VlDummyVideo {
  kAbsent,  //!< "absent": the release has no Qwen3-VL (before 0.11.0)
  /*! "image_bound_frames_unresized_x12_5" (0.11.0): the frames by max_model_len at the image's largest
   *  size (Qwen3VlImageBoundVideo), the budget item x 12.5, the dummy unresized (do_resize False), no options */
  kImageBoundFramesUnresizedX12_5,
  kImageBoundFramesX12_5,  //!< "image_bound_frames_x12_5" (0.11.1): the same, resized again, options read
  kImageBoundFrames,       //!< "image_bound_frames" (0.13.0): the same without the x 12.5
  /*! "video_bound_2_frames" (0.15.0): two frames at the video processor's own bound (Qwen3VlVideoItem),
   *  --mm-processor-kwargs not read for the target (refused by name with a video) */
  kVideoBound2Frames,
  kVideoBound2FramesKwargs,  //!< "video_bound_2_frames_kwargs" (0.17.0): the same, the kwargs read
  /*! "video_bound_2_frames_pixels" (0.32.0): the same, the target's bound also taking max_pixels (folded
   *  into size.longest_edge), where 0.17.0 to 0.31.0 read the size dict alone */
  kVideoBound2FramesPixels,
};

/*! \brief The rule named \p name in vllm_versions.json, or nullopt for an unknown name. */
std::optional<Qwen3VlDummyVideo> Qwen3VlDummyVideoFromName(std::string_view name);

/*! \brief vllm qwen3_vl.py _MAX_FRAMES_PER_VIDEO (0.11.0 to 0.14.0): the frame cap of the dummy video
 *  that follows max_model_len. */
constexpr int64_t kQwen3VlMaxFramesPerVideo = 24576;

/*! \brief Qwen3-VL's dummy video before 0.15.0: the budget's item (largest), the encoded one (dummy) and
 *  its frames. */
struct Qwen3VlFramesVideo {
  VisionDummyItem largest;
  VisionDummyItem dummy;
  int64_t frames = 0;
};

/*! \brief Qwen3-VL's dummy video of the image_bound_frames rules (qwen3_vl.py 0.11.0 to 0.14.0,
 *  get_max_video_tokens and Qwen3VLDummyInputsBuilder.get_dummy_mm_data): the image's largest size (the
 *  square smart_resize of 9999999 x 9999999 within the image bounds, or from 0.13.0 the factor pair of
 *  their merged patches: \p factor_pair) video-smart_resized within the video processor's bounds at N
 *  frames, N the most frames from 2 whose tokens fit \p max_model_len (Qwen2-VL's _get_max_video_frames),
 *  at most kQwen3VlMaxFramesPerVideo. The budget's item counts int(tokens x 12.5) under the x12_5 rules
 *  (the timestamp text it reckoned a token carries). The dummy takes the options' num_frames (at least 2)
 *  and width / height as mins (from 0.11.1), and the processor resizes it again (from 0.11.1). \p request
 *  carries the options only (the caller refuses processor bounds). nullopt without a video bound. */
std::optional<Qwen3VlFramesVideo> Qwen3VlImageBoundVideo(const VisionEncoderSpec& spec,
                                                         const VisionItemRequest& request, int64_t max_model_len,
                                                         Qwen3VlDummyVideo rule, bool factor_pair);

/*! \brief Qwen3-VL's dummy video from 0.15.0 (vllm_versions.json qwen3_vl_dummy_video video_bound_*): two
 *  frames of the size with most features under the video processor's bound (VisionEncoderSpec::
 *  video_max_pixels, or request.size_longest_edge) over the temporal patch, video-smart_resized within
 *  request.max_pixels / min_pixels (else the video processor's bounds), shrunk to request.width /
 *  height when given and resized again as the processor does. nullopt when \p spec has no video
 *  processor bound. InvalidArgument for a size transformers refuses (a side under one merged patch). */
std::optional<VisionDummyItem> Qwen3VlVideoItem(const VisionEncoderSpec& spec, const VisionItemRequest& request);

/*! \brief The modalities vLLM's processor for \p spec takes (its get_supported_mm_limits): image,
 *  and video for the Qwen-VL processors. */
std::vector<std::string> VisionModalities(const VisionEncoderSpec& spec);

/*! \brief What an --mm-processor-kwargs key does to the profile run's dummy item of \p spec. */
enum class ProcessorKwargEffect {
  kModelled,     //!< sizes the item, and the item follows it (VisionItemRequest)
  kNoEffect,     //!< read by the processor, changes no tensor's size
  kNotModelled,  //!< may change the item; no rule here
};
ProcessorKwargEffect ClassifyProcessorKwarg(const VisionEncoderSpec& spec, std::string_view key);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_VISION_PROFILE_ITEM_H_
