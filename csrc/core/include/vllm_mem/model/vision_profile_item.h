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
 * smart_resize). A tower whose processor has no rule
 * here has no item (nullopt): the plan then keeps the vision-profiling caveat.
 */
#ifndef VLLM_MEM_MODEL_VISION_PROFILE_ITEM_H_
#define VLLM_MEM_MODEL_VISION_PROFILE_ITEM_H_

#include <cstdint>
#include <optional>

#include "vllm_mem/model/vision_encoder.h"

namespace vllm_mem {

/*! \brief One maximum-size image as the profile run builds it. */
struct VisionDummyItem {
  int64_t prompt_tokens = 0;   //!< placeholder tokens in the prompt (get_mm_max_tokens_per_item)
  int64_t embed_rows = 0;      //!< rows the encoder returns for it (kept in the encoder cache)
  int64_t pixel_elements = 0;  //!< pixel_values elements (channels x height x width)
  int64_t patch_tokens = 0;    //!< the tower's sequence length for it (patches)
};

/*! \brief The largest item of \p spec's processor, or nullopt when its processor has no rule. */
std::optional<VisionDummyItem> LargestVisionItem(const VisionEncoderSpec& spec);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_VISION_PROFILE_ITEM_H_
