/*!
 * \file core/model/vision_profile_item.cc
 * \brief The largest dummy image per processor, as vLLM's ProcessingInfo classes size it.
 *
 * vLLM's processor casts every floating-point output to the model dtype
 * (vllm/multimodal/processing InputProcessingContext.call_hf_processor: "this emulates
 * output.to(dtype=self.model_config.dtype)"), so pixel elements here are in the model dtype.
 */
#include "vllm_mem/model/vision_profile_item.h"

#include "core/base/checked_math.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "vision_config";

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kField); }

/*! Patches per side of an image of \p size pixels: transformers' _num_image_tokens,
 *  (size - 1) // patch + 1. */
int64_t PatchesPerSide(int64_t size, int64_t patch) { return (size - 1) / patch + 1; }

/*! Gemma-3 (vllm gemma3_mm.py Gemma3ProcessingInfo): pan-and-scan is off by default
 *  (Gemma3ImagesKwargs do_pan_and_scan False), so the largest item is one image resized to
 *  vision_config.image_size square: (image_size / patch)^2 SigLIP patches, average-pooled by the
 *  projector to mm_tokens_per_image embeddings, which is also its placeholder count
 *  (get_num_image_tokens: (num_crops + 1) * image_seq_length with no crops). */
VisionDummyItem Gemma3Item(const VisionEncoderSpec& s) {
  VisionDummyItem item;
  const int64_t side = s.image_size / s.patch_size;
  item.patch_tokens = Mul(side, side);
  item.embed_rows = s.tokens_per_image;
  item.prompt_tokens = s.tokens_per_image;
  item.pixel_elements = Mul(s.num_channels, Mul(s.image_size, s.image_size));
  return item;
}

/*! Mistral-3 (vllm mistral3.py Mistral3ProcessingInfo): the largest image is the processor's
 *  longest_edge square (vision_config.image_size, 1540 for Mistral-Small-3.1/3.2); the tower sees
 *  every patch, the patch merger folds spatial_merge_size^2 of them into one embedding, and the
 *  prompt holds one [IMG] per embedding plus an [IMG_BREAK] / [IMG_END] per row:
 *  get_num_image_tokens = (ncols + 1) * nrows. */
VisionDummyItem Mistral3Item(const VisionEncoderSpec& s) {
  VisionDummyItem item;
  const int64_t side = PatchesPerSide(s.image_size, s.patch_size);
  const int64_t merged_side = side / s.spatial_merge_size;
  item.patch_tokens = Mul(side, side);
  item.embed_rows = Mul(merged_side, merged_side);
  item.prompt_tokens = Mul(merged_side + 1, merged_side);
  item.pixel_elements = Mul(s.num_channels, Mul(s.image_size, s.image_size));
  return item;
}

}  // namespace

std::optional<VisionDummyItem> LargestVisionItem(const VisionEncoderSpec& spec) {
  if (spec.image_size <= 0 || spec.patch_size <= 0) return std::nullopt;
  if (spec.encoder == VisionEncoderKind::kSiglip && spec.projector == VisionProjectorKind::kGemma3) {
    const VisionDummyItem item = Gemma3Item(spec);
    // The projector pools patches: more tokens than patches is no image vLLM can build.
    if (item.embed_rows > 0 && item.embed_rows <= item.patch_tokens) return item;
    return std::nullopt;
  }
  if (spec.encoder == VisionEncoderKind::kPixtral && spec.projector == VisionProjectorKind::kMistral3) {
    return Mistral3Item(spec);
  }
  return std::nullopt;  // other processors: no rule yet (the plan keeps the caveat)
}

}  // namespace vllm_mem
