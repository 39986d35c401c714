/*!
 * \file core/model/vision_profile_item.cc
 * \brief The largest dummy image per processor, as vLLM's ProcessingInfo classes size it.
 *
 * vLLM's processor casts every floating-point output to the model dtype
 * (vllm/multimodal/processing InputProcessingContext.call_hf_processor: "this emulates
 * output.to(dtype=self.model_config.dtype)"), so pixel elements here are in the model dtype.
 */
#include "vllm_mem/model/vision_profile_item.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "vision_config";

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kField); }
int64_t Add(int64_t a, int64_t b) { return CheckedAdd(a, b, kField); }

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

/*! transformers' smart_resize (image_processing_qwen2_vl.py) of an h x w image: each side rounded to
 *  the factor (Python's round, half to even), then scaled into [min_pixels, max_pixels] keeping the
 *  aspect: beta = sqrt(h * w / max_pixels), side = max(factor, floor(side / beta / factor) * factor)
 *  above, ceil(side * beta / factor) * factor below; in the same double arithmetic as Python (every
 *  operand is an exact double, so each step rounds as Python's does). An aspect ratio above 200 is
 *  refused as transformers refuses it. Qwen3-VL's video smart_resize (video_processing_qwen3_vl.py) is
 *  the same rule over a clip: \p t_bar frames (the frames rounded to the temporal patch) of h_bar x
 *  w_bar against the bounds, beta from \p frames x h x w; an image is one frame. Returns {height, width}. */
std::array<int64_t, 2> SmartResize(int64_t h, int64_t w, int64_t factor, int64_t min_pixels, int64_t max_pixels,
                                   const std::string& field, int64_t frames = 1, int64_t t_bar = 1) {
  const double fh = static_cast<double>(h);
  const double fw = static_cast<double>(w);
  const double ff = static_cast<double>(factor);
  const double ratio = std::max(fh, fw) / std::min(fh, fw);
  if (ratio > 200.0) {
    throw InvalidArgument(field, "absolute aspect ratio must be smaller than 200, got " + FormatRounded(ratio, 2) +
                                     " (transformers' smart_resize refuses the dummy image)");
  }
  auto side = [factor](double x) { return Mul(static_cast<int64_t>(x), factor); };
  int64_t hb = side(std::nearbyint(fh / ff));
  int64_t wb = side(std::nearbyint(fw / ff));
  const double ft = static_cast<double>(frames);
  if (Mul(t_bar, Mul(hb, wb)) > max_pixels) {
    const double beta = std::sqrt(ft * fh * fw / static_cast<double>(max_pixels));
    hb = std::max(factor, side(std::floor(fh / beta / ff)));
    wb = std::max(factor, side(std::floor(fw / beta / ff)));
  } else if (Mul(t_bar, Mul(hb, wb)) < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (ft * fh * fw));
    hb = side(std::ceil(fh * beta / ff));
    wb = side(std::ceil(fw * beta / ff));
  }
  return {hb, wb};
}

/*! Qwen2-VL, Qwen2.5-VL, Qwen3-VL (vllm qwen2_vl.py Qwen2VLProcessingInfo._get_vision_info, which
 *  qwen2_5_vl.py and qwen3_vl.py reuse): the largest image is the smart_resize of the 9999999 x
 *  9999999 image vLLM asks about (get_image_size_with_most_features) within the processor's bounds at
 *  a factor of patch x merge; vLLM's dummy keeps the smaller of it and the dummy options' size
 *  (BaseDummyInputsBuilder._get_dummy_images / _get_dummy_videos: min(width, overrides.width)), and the
 *  processor resizes that again. Frames are padded to the temporal patch (grid_t = max((frames +
 *  frames % T) // T, 1)), so the tower sees grid_t x grid_h x grid_w patches of C x T x p x p pixels
 *  each (the processor's flattened pixel_values), and the merger folds merge^2 of them into one
 *  embedding, which is one placeholder token (num_patches // merge_size^2). Qwen2.5-VL-7B: 3584^2
 *  pixels, 256^2 = 65,536 patches of 1,176 pixels, 16,384 tokens. */
std::array<int64_t, 2> MostFeaturesSize(int64_t max_pixels, int64_t factor, const std::string& field);

/*! The largest image's {height, width} (get_image_size_with_most_features, then get_num_image_tokens'
 *  smart_resize of it): the smart_resize of a 9999999 x 9999999 image, or (VisionItemRequest::
 *  factor_pair, vLLM 0.13.0 on) the closest rows x columns factor pair of max_pixels // factor^2 merged
 *  patches, which keeps every merged patch the bound holds when their count is not a square (1,003,520
 *  at factor 28: 1,280 = 32 x 40, not the square's 35^2 = 1,225). */
std::array<int64_t, 2> LargestImageSize(int64_t factor, int64_t min_pixels, int64_t max_pixels,
                                        const VisionItemRequest& r) {
  if (r.factor_pair) {
    if (max_pixels < Mul(factor, factor)) {
      throw InvalidArgument(r.field, "max_pixels " + std::to_string(max_pixels) + " holds no " +
                                         std::to_string(factor) + " x " + std::to_string(factor) +
                                         " merged patch (vLLM's largest image would be empty)");
    }
    const std::array<int64_t, 2> target = MostFeaturesSize(max_pixels, factor, r.field);
    return SmartResize(target[0], target[1], factor, min_pixels, max_pixels, r.field);
  }
  constexpr int64_t kSide = 9999999;  // the width and height vLLM passes
  return SmartResize(kSide, kSide, factor, min_pixels, max_pixels, r.field);
}

VisionDummyItem SmartResizeItem(const VisionEncoderSpec& s, const VisionItemRequest& r) {
  const int64_t factor = Mul(s.patch_size, s.spatial_merge_size);
  const int64_t max_pixels = r.max_pixels > 0 ? r.max_pixels : s.max_pixels;
  const int64_t min_pixels = r.min_pixels > 0 ? r.min_pixels : s.min_pixels;
  const std::array<int64_t, 2> largest = LargestImageSize(factor, min_pixels, max_pixels, r);
  const int64_t h = r.height > 0 ? std::min(r.height, largest[0]) : largest[0];
  const int64_t w = r.width > 0 ? std::min(r.width, largest[1]) : largest[1];
  const std::array<int64_t, 2> resized = SmartResize(h, w, factor, min_pixels, max_pixels, r.field);
  const int64_t frames = std::max<int64_t>(r.num_frames, 1);
  const int64_t grid_t = std::max<int64_t>((frames + frames % s.temporal_patch_size) / s.temporal_patch_size, 1);
  VisionDummyItem item;
  item.patch_tokens = Mul(grid_t, Mul(resized[0] / s.patch_size, resized[1] / s.patch_size));
  item.embed_rows = item.patch_tokens / Mul(s.spatial_merge_size, s.spatial_merge_size);
  item.prompt_tokens = item.embed_rows;
  const int64_t patch_pixels = Mul(Mul(s.num_channels, s.temporal_patch_size), Mul(s.patch_size, s.patch_size));
  item.pixel_elements = Mul(item.patch_tokens, patch_pixels);
  return item;
}

/*! vllm qwen2_vl.py Qwen2VLProcessingInfo.get_image_size_with_most_features(max_pixels), as Qwen3-VL's
 *  video asks it: the merged patches max_pixels holds, max_pixels // factor^2, split into the closest
 *  factor pair rows <= columns (the largest divisor up to its square root), or fewer patches when that
 *  pair's aspect passes 200 (the processor refuses such an image). Returns {height, width}. */
std::array<int64_t, 2> MostFeaturesSize(int64_t max_pixels, int64_t factor, const std::string& field) {
  constexpr int64_t kMaxAspect = 200;
  for (int64_t cells = max_pixels / Mul(factor, factor); cells > 0; --cells) {
    int64_t rows = 1;
    for (auto d = static_cast<int64_t>(std::sqrt(static_cast<double>(cells))) + 1; d > 0; --d) {
      if (Mul(d, d) <= cells && cells % d == 0) {
        rows = d;
        break;
      }
    }
    const int64_t cols = cells / rows;
    if (cols <= Mul(kMaxAspect, rows)) return {Mul(factor, rows), Mul(factor, cols)};
  }
  throw InvalidArgument(field, "the video bound (size.longest_edge / temporal_patch_size = " +
                                   std::to_string(max_pixels) + " pixels) holds no " + std::to_string(factor) + " x " +
                                   std::to_string(factor) + " merged patch (vLLM's dummy video would be empty)");
}

/*! Tokens a CLIP / SigLIP tower runs per image_size tile: (image_size / patch)^2 patches, plus
 *  CLIP's class token (vllm clip.py CLIPEncoderInfo.get_num_image_tokens; siglip.py: patches only). */
int64_t TowerTokensPerTile(const VisionEncoderSpec& s) {
  const int64_t side = s.image_size / s.patch_size;
  return Add(Mul(side, side), s.encoder == VisionEncoderKind::kClip ? 1 : 0);
}

/*! The features LLaVA keeps per tile: vision_feature_select_strategy "default" drops the first
 *  (vllm llava.py _apply_feature_select_strategy: n - 1), "full" keeps all n. */
int64_t FeaturesPerTile(const VisionEncoderSpec& s) { return TowerTokensPerTile(s) - (s.feature_drops_cls ? 1 : 0); }

/*! LLaVA-1.5 (vllm llava.py LlavaProcessingInfo): the largest image is one image_size square
 *  (get_image_size_with_most_features = the tower's image size); the tower runs its tokens and the
 *  prompt holds one placeholder per kept feature (llava-1.5: 24^2 + 1 = 577 tokens, 576 kept). */
VisionDummyItem LlavaItem(const VisionEncoderSpec& s) {
  VisionDummyItem item;
  item.patch_tokens = TowerTokensPerTile(s);
  item.embed_rows = FeaturesPerTile(s);
  item.prompt_tokens = item.embed_rows;
  item.pixel_elements = Mul(s.num_channels, Mul(s.image_size, s.image_size));
  return item;
}

/*! transformers' select_best_resolution (image_processing_utils.py), which LLaVA-NeXT's
 *  get_anyres_image_grid_shape calls: the canvas that keeps the most of an h x w image after an
 *  aspect-preserving fit, the least wasted area on a tie. */
std::array<int64_t, 2> BestCanvas(int64_t h, int64_t w, const std::vector<std::array<int64_t, 2>>& canvases) {
  std::array<int64_t, 2> best = canvases.front();
  int64_t max_effective = -1;
  int64_t min_wasted = 0;
  for (const auto& [ch, cw] : canvases) {
    const double scale = std::min(static_cast<double>(cw) / w, static_cast<double>(ch) / h);
    const auto dw = static_cast<int64_t>(w * scale);
    const auto dh = static_cast<int64_t>(h * scale);
    const int64_t effective = std::min(Mul(dw, dh), Mul(w, h));
    const int64_t wasted = Mul(cw, ch) - effective;
    if (effective > max_effective || (effective == max_effective && wasted < min_wasted)) {
      best = {ch, cw};
      max_effective = effective;
      min_wasted = wasted;
    }
  }
  return best;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

/*! Python's int(round(x, 7)). */
int64_t RoundTo7Truncated(double x) { return static_cast<int64_t>(std::round(x * 1e7) / 1e7); }

/*! LLaVA-NeXT's placeholder tokens for an h x w image and its tiles (vllm llava_next.py
 *  LlavaNextProcessingInfo.get_num_image_tokens / _get_num_unpadded_features): the base tile's
 *  features, the best canvas's (rows x cols) tiles of npatches^2 features with the padding the
 *  aspect ratio leaves removed, and one newline feature per remaining row. tiles = rows x cols + 1
 *  (the base image). 0 tokens when a canvas is smaller than a tile (no image vLLM can tile). */
int64_t LlavaNextTokens(const VisionEncoderSpec& s, int64_t h, int64_t w, int64_t& tiles) {
  const std::array<int64_t, 2> canvas = BestCanvas(h, w, s.image_grid_pinpoints);
  const int64_t rows = canvas[0] / s.image_size;
  const int64_t cols = canvas[1] / s.image_size;
  if (rows == 0 || cols == 0) return 0;
  const int64_t npatches = s.image_size / s.patch_size;
  int64_t cur_h = Mul(npatches, rows);
  int64_t cur_w = Mul(npatches, cols);
  const double aspect = static_cast<double>(w) / h;
  if (aspect > static_cast<double>(cur_w) / cur_h) {
    const int64_t new_h = RoundTo7Truncated(h * (static_cast<double>(cur_w) / w));
    cur_h -= 2 * FloorDiv(cur_h - new_h, 2);
  } else {
    const int64_t new_w = RoundTo7Truncated(w * (static_cast<double>(cur_h) / h));
    cur_w -= 2 * FloorDiv(cur_w - new_w, 2);
  }
  tiles = Add(Mul(rows, cols), 1);
  return Add(Add(Mul(cur_h, cur_w), cur_h), FeaturesPerTile(s));
}

/*! LLaVA-NeXT (get_image_size_with_most_features): the image_grid_pinpoints canvas whose own
 *  size gives the most tokens (the first on a tie); the tower runs every tile, the encoder returns
 *  one embedding per placeholder (newlines included). llava-v1.6 defaults, CLIP-336: 672 x 672 ->
 *  576 + 48 x 48 + 48 = 2,928 tokens over 5 tiles of 577. */
std::optional<VisionDummyItem> LlavaNextItem(const VisionEncoderSpec& s) {
  if (s.image_grid_pinpoints.empty()) return std::nullopt;
  int64_t best_tokens = 0;
  int64_t best_tiles = 0;
  for (const auto& [h, w] : s.image_grid_pinpoints) {
    int64_t tiles = 0;
    const int64_t tokens = LlavaNextTokens(s, h, w, tiles);
    if (tokens > best_tokens) {
      best_tokens = tokens;
      best_tiles = tiles;
    }
  }
  if (best_tokens <= 0) return std::nullopt;
  VisionDummyItem item;
  item.patch_tokens = Mul(best_tiles, TowerTokensPerTile(s));
  item.embed_rows = best_tokens;
  item.prompt_tokens = best_tokens;
  item.pixel_elements = Mul(best_tiles, Mul(s.num_channels, Mul(s.image_size, s.image_size)));
  return item;
}

/*! InternVL (vllm internvl.py InternVLProcessingInfo.get_image_size_with_most_features over the
 *  target ratios): the largest image fills max_dynamic_patch tiles of image_size, plus the thumbnail
 *  tile when use_thumbnail and it is split; each tile is (image_size / patch)^2 patches and the class
 *  token in the tower, pixel-shuffled to (image_size / patch)^2 x downsample_ratio^2 embeddings, one
 *  IMG_CONTEXT placeholder each (InternVL2.5, 448 / 14, ratio 0.5: 12 + 1 tiles of 1,025 tower tokens,
 *  13 x 256 = 3,328 tokens). */
VisionDummyItem InternVlItem(const VisionEncoderSpec& s) {
  VisionDummyItem item;
  const int64_t side = s.image_size / s.patch_size;
  const int64_t tiles = Add(s.max_dynamic_tiles, s.use_thumbnail && s.max_dynamic_tiles != 1 ? 1 : 0);
  const int64_t per_tile = Mul(side, side) / Mul(s.downsample_ratio_inverse, s.downsample_ratio_inverse);
  item.patch_tokens = Mul(tiles, Add(Mul(side, side), 1));
  item.embed_rows = Mul(tiles, per_tile);
  item.prompt_tokens = item.embed_rows;
  item.pixel_elements = Mul(tiles, Mul(s.num_channels, Mul(s.image_size, s.image_size)));
  return item;
}

/*! Llama-4 (vllm mllama4.py Mllama4ProcessingInfo): the largest image is max_patches tiles tall and
 *  one wide (get_image_size_with_most_features: max_patches x image_size by image_size), which the
 *  image processor's get_best_fit places on the max_patches x 1 canvas unscaled; a split image gets
 *  the global tile too (Mllama4MultiModalProcessor: patches_per_image = 1 + r_h x r_w). Each tile is
 *  (image_size / patch)^2 patches and the class token in the tower, pixel-shuffled to
 *  get_patch_per_chunk = (image_size / patch)^2 / round(1 / ratio^2) embeddings. The placeholder is
 *  Llama4Processor._prompt_split_image's whole string (the encoder budget counts every token of it):
 *  <|image_start|>, per tile row the row's patches and one <|tile_y_separator|> (a one-wide canvas
 *  has no x separators), <|image|>, the global tile's patches, <|image_end|>. Scout / Maverick
 *  (336 / 14, ratio 0.5, 16 tiles): 17 tiles of 577 tower tokens, 17 x 144 = 2,448 embeddings,
 *  2,448 + 16 + 3 = 2,467 placeholder tokens. */
VisionDummyItem Llama4Item(const VisionEncoderSpec& s) {
  VisionDummyItem item;
  const int64_t side = s.image_size / s.patch_size;
  const int64_t per_tile = Mul(side, side) / Mul(s.downsample_ratio_inverse, s.downsample_ratio_inverse);
  const int64_t rows = s.max_dynamic_tiles;
  const int64_t tiles = rows > 1 ? Add(rows, 1) : 1;
  constexpr int64_t kImageMarkers = 3;  // <|image_start|>, <|image|>, <|image_end|>
  item.patch_tokens = Mul(tiles, Add(Mul(side, side), 1));
  item.embed_rows = Mul(tiles, per_tile);
  item.prompt_tokens = Add(Add(item.embed_rows, rows > 1 ? rows : 0), kImageMarkers);
  item.pixel_elements = Mul(tiles, Mul(s.num_channels, Mul(s.image_size, s.image_size)));
  return item;
}

/*! Kimi-VL (vllm kimi_vl.py): KimiVLDummyInputsBuilder asks for MaxImageTokenMeta's 1024 x 1024 image
 *  (the ProcessingInfo has no get_image_size_with_most_features: the profiler counts that dummy's
 *  placeholders). KimiVLImageProcessor.rescale scales an image whose (w // patch) x (h // patch)
 *  patches pass in_token_limit by sqrt(limit / patches), each side int(side x scale) (Python's double
 *  arithmetic, as here), then (pad_input true) pads each side up to a multiple of merge x patch
 *  (KimiVLProcessingInfo.get_num_image_tokens reckons the same). The tower sees every patch of the
 *  padded image (pixel_values (patches, 3, p, p)); the patch merger folds a merge_h x merge_w kernel
 *  into one embedding, one <|media_pad|> each. Kimi-VL-A3B (patch 14, 2 x 2, 4096): 73^2 = 5,329 > 4096,
 *  1024 x 64 / 73 -> 897, padded to 924: 66 x 66 = 4,356 patches, 33 x 33 = 1,089 tokens. */
VisionDummyItem KimiVlItem(const VisionEncoderSpec& s, int64_t in_token_limit) {
  constexpr int64_t kDummySide = 1024;  // MaxImageTokenMeta's width and height
  const int64_t p = s.patch_size;
  int64_t side_h = kDummySide;
  int64_t side_w = kDummySide;
  const int64_t patches = Mul(side_w / p, side_h / p);
  if (patches > in_token_limit) {
    const double scale = std::sqrt(static_cast<double>(in_token_limit) / static_cast<double>(patches));
    side_w = static_cast<int64_t>(static_cast<double>(side_w) * scale);
    side_h = static_cast<int64_t>(static_cast<double>(side_h) * scale);
  }
  const int64_t unit_h = Mul(s.merge_kernel_h, p);
  const int64_t unit_w = Mul(s.merge_kernel_w, p);
  const int64_t grid_h = Mul(CeilDiv(side_h, unit_h), s.merge_kernel_h);
  const int64_t grid_w = Mul(CeilDiv(side_w, unit_w), s.merge_kernel_w);
  VisionDummyItem item;
  item.patch_tokens = Mul(grid_h, grid_w);
  item.embed_rows = Mul(grid_h / s.merge_kernel_h, grid_w / s.merge_kernel_w);
  item.prompt_tokens = item.embed_rows;
  item.pixel_elements = Mul(item.patch_tokens, Mul(s.num_channels, Mul(p, p)));
  return item;
}

/*! vLLM gemma3n_mm.py TOKENS_PER_IMAGE ("we hardcode them for now"): get_max_tokens_per_item's image
 *  count, the same in every release that serves Gemma-3n (0.10.0 on). */
constexpr int64_t kGemma3nTokensPerImage = 256;

/*! Gemma-3n (vllm gemma3n_mm.py Gemma3nDummyInputsBuilder): the dummy image is the image processor's
 *  size (768 x 768, vision_processors), which SiglipImageProcessorFast keeps; the placeholder budget is
 *  TOKENS_PER_IMAGE, and the tower returns that many embeddings (MobileNet-V5's fusion adapter pools
 *  to 16 x 16, reshaped by vision_soft_tokens_per_image = 256). patch_tokens is the tower's output. */
VisionDummyItem Gemma3nItem(const VisionEncoderSpec& s) {
  VisionDummyItem item;
  item.prompt_tokens = kGemma3nTokensPerImage;
  item.embed_rows = kGemma3nTokensPerImage;
  item.patch_tokens = kGemma3nTokensPerImage;
  item.pixel_elements = Mul(s.num_channels, Mul(s.image_size, s.image_size));
  return item;
}

bool IsClipOrSiglip(VisionEncoderKind kind) { return kind == VisionEncoderKind::kClip || kind == VisionEncoderKind::kSiglip; }

/*! transformers' video smart_resize refuses fewer frames than the temporal patch: vLLM's dummy video
 *  has 2, so a tower with a larger temporal_patch_size cannot profile it. */
void RequireTwoFrameDummy(const VisionEncoderSpec& s, const std::string& field) {
  if (s.temporal_patch_size > kQwen3VlDummyVideoFrames) {
    throw InvalidArgument(field, "t:2 must be larger than temporal_factor:" + std::to_string(s.temporal_patch_size) +
                                     " (transformers' video smart_resize refuses vLLM's 2-frame dummy video)");
  }
}

/*! The dummy video's {height, width} under the width / height dummy options, which only shrink it
 *  (min with the option); the processor refuses a side under one merged patch. */
std::array<int64_t, 2> DummyOptionsSize(const VisionEncoderSpec& s, const VisionItemRequest& r,
                                        const std::array<int64_t, 2>& size) {
  const int64_t h = r.height > 0 ? std::min(r.height, size[0]) : size[0];
  const int64_t w = r.width > 0 ? std::min(r.width, size[1]) : size[1];
  const int64_t factor = Mul(s.patch_size, s.spatial_merge_size);
  if (h < factor || w < factor) {
    throw InvalidArgument(r.field, "height:" + std::to_string(h) + " or width:" + std::to_string(w) +
                                       " must be larger than factor:" + std::to_string(factor) +
                                       " (transformers' video smart_resize refuses the dummy video)");
  }
  return {h, w};
}

/*! A Qwen3-VL video of \p frames frames from a \p target {height, width} as qwen3_vl.py _get_vision_info
 *  reckons it with the video processor: transformers' video smart_resize within the processor's own
 *  bounds (video_preprocessor_config.json size), then grid_t = (frames + frames % T) // T. */
struct FramesVideo {
  std::array<int64_t, 2> size{};
  int64_t patches = 0;
};

int64_t VideoTBar(const VisionEncoderSpec& s, int64_t frames) {
  const double ratio = static_cast<double>(frames) / static_cast<double>(s.temporal_patch_size);
  return Mul(static_cast<int64_t>(std::nearbyint(ratio)), s.temporal_patch_size);  // Python's round: half to even
}

FramesVideo VideoPatches(const VisionEncoderSpec& s, const std::array<int64_t, 2>& size, int64_t frames) {
  const int64_t t = s.temporal_patch_size;
  const int64_t grid_t = std::max<int64_t>((frames + frames % t) / t, 1);
  return {size, Mul(grid_t, Mul(size[0] / s.patch_size, size[1] / s.patch_size))};
}

FramesVideo VideoAtFrames(const VisionEncoderSpec& s, const std::array<int64_t, 2>& target, int64_t frames,
                          const std::string& field) {
  const int64_t factor = Mul(s.patch_size, s.spatial_merge_size);
  const std::array<int64_t, 2> size = SmartResize(target[0], target[1], factor, s.video_min_pixels, s.video_max_pixels,
                                                  field, frames, VideoTBar(s, frames));
  return VideoPatches(s, size, frames);
}

/*! The N of Qwen3VlImageBoundVideo: from 2, one more frame while its tokens stay within max_model_len
 *  (qwen2_vl.py _get_max_video_frames, start_num_frames 2 in qwen3_vl.py), at most the cap (the loop in
 *  vLLM runs on past it, but only min(N, cap) is used). One video (mm_counts {"video": 1}). */
int64_t ImageBoundFrames(const VisionEncoderSpec& s, const std::array<int64_t, 2>& target, int64_t max_model_len,
                         const std::string& field) {
  const int64_t merge2 = Mul(s.spatial_merge_size, s.spatial_merge_size);
  int64_t frames = kQwen3VlDummyVideoFrames;
  while (frames < kQwen3VlMaxFramesPerVideo &&
         VideoAtFrames(s, target, frames + 1, field).patches / merge2 <= max_model_len) {
    ++frames;
  }
  return frames;
}

VisionDummyItem FramesItem(const VisionEncoderSpec& s, int64_t patches, bool times_12_5) {
  VisionDummyItem item;
  item.patch_tokens = patches;
  item.embed_rows = patches / Mul(s.spatial_merge_size, s.spatial_merge_size);
  // int(tokens * 12.5): "one video token is converted to '<{timestamp} seconds>' (on average 9.5
  // tokens) + vision_start_token + video_token + vision_end_token" (qwen3_vl.py 0.11.0 to 0.12.0).
  item.prompt_tokens = times_12_5 ? Mul(item.embed_rows, 25) / 2 : item.embed_rows;
  item.pixel_elements = Mul(patches, Mul(Mul(s.num_channels, s.temporal_patch_size), Mul(s.patch_size, s.patch_size)));
  return item;
}

/*! The dummy video Qwen3VLDummyInputsBuilder builds under the image_bound_frames rules from its \p frames
 *  (the caller's): the size _get_vision_info gives them, the width / height options' mins, and (from
 *  0.11.1, do_resize no longer off) the processor's resize of that. */
FramesVideo ImageBoundDummy(const VisionEncoderSpec& s, const VisionItemRequest& r,
                            const std::array<int64_t, 2>& target, int64_t frames, Qwen3VlDummyVideo rule) {
  const bool reads_options = rule != Qwen3VlDummyVideo::kImageBoundFramesUnresizedX12_5;
  const FramesVideo sized = VideoAtFrames(s, target, frames, r.field);
  if (!reads_options) return sized;  // 0.11.0: hf_processor_mm_kwargs {"do_resize": False}
  // The frames are (width, height) arrays: the transposed size has the same patch count.
  return VideoAtFrames(s, DummyOptionsSize(s, r, sized.size), frames, r.field);
}

}  // namespace

bool IsSmartResizeProcessor(const VisionEncoderSpec& spec) {
  // A processor bounded by max_pixels (model_families.json vision_processors) resizes smartly.
  return spec.patch_size > 0 && spec.max_pixels > 0 && spec.spatial_merge_size > 0 && spec.temporal_patch_size > 0;
}

bool IsKimiVlProcessor(const VisionEncoderSpec& spec) {
  // MoonViT under the Kimi-VL projector, with its processor's patch budget (vision_processors).
  return spec.encoder == VisionEncoderKind::kMoonVit && spec.projector == VisionProjectorKind::kKimiVl &&
         spec.in_token_limit > 0 && spec.merge_kernel_h > 0 && spec.merge_kernel_w > 0;
}

std::optional<VisionDummyItem> Qwen3VlVideoItem(const VisionEncoderSpec& s, const VisionItemRequest& r) {
  if (!IsSmartResizeProcessor(s) || s.video_max_pixels <= 0) return std::nullopt;
  RequireTwoFrameDummy(s, r.field);
  const int64_t factor = Mul(s.patch_size, s.spatial_merge_size);
  const int64_t frames = kQwen3VlDummyVideoFrames;
  // The target under size.longest_edge // temporal_patch_size ("video_max_pixels contains the temporal
  // compression factor"), then _get_vision_info's video smart_resize at 2 frames within the video
  // processor's size merged with mm_processor_kwargs size, min_pixels and max_pixels.
  const int64_t target_bound =
      (r.size_longest_edge > 0 ? r.size_longest_edge : s.video_max_pixels) / s.temporal_patch_size;
  const int64_t max_pixels = r.max_pixels > 0 ? r.max_pixels : s.video_max_pixels;
  const int64_t min_pixels = r.min_pixels > 0 ? r.min_pixels : s.video_min_pixels;
  const int64_t t_bar = VideoTBar(s, frames);
  const std::array<int64_t, 2> target = MostFeaturesSize(target_bound, factor, r.field);
  const std::array<int64_t, 2> video =
      SmartResize(target[0], target[1], factor, min_pixels, max_pixels, r.field, frames, t_bar);
  // The dummy options only shrink it; the video processor resizes the dummy again (its frames are
  // (width, height) arrays until PR #56385: the transposed size has the same patch count).
  const std::array<int64_t, 2> dummy = DummyOptionsSize(s, r, video);
  const std::array<int64_t, 2> resized =
      SmartResize(dummy[0], dummy[1], factor, min_pixels, max_pixels, r.field, frames, t_bar);
  // get_max_video_tokens counts embeddings, not the timestamp text.
  return FramesItem(s, VideoPatches(s, resized, frames).patches, false);
}

std::optional<Qwen3VlDummyVideo> Qwen3VlDummyVideoFromName(std::string_view name) {
  static constexpr std::pair<std::string_view, Qwen3VlDummyVideo> kNames[] = {
      {"absent", Qwen3VlDummyVideo::kAbsent},
      {"image_bound_frames_unresized_x12_5", Qwen3VlDummyVideo::kImageBoundFramesUnresizedX12_5},
      {"image_bound_frames_x12_5", Qwen3VlDummyVideo::kImageBoundFramesX12_5},
      {"image_bound_frames", Qwen3VlDummyVideo::kImageBoundFrames},
      {"video_bound_2_frames", Qwen3VlDummyVideo::kVideoBound2Frames},
      {"video_bound_2_frames_kwargs", Qwen3VlDummyVideo::kVideoBound2FramesKwargs},
      {"video_bound_2_frames_pixels", Qwen3VlDummyVideo::kVideoBound2FramesPixels},
  };
  for (const auto& [rule_name, rule] : kNames) {
    if (rule_name == name) return rule;
  }
  return std::nullopt;
}

std::optional<Qwen3VlFramesVideo> Qwen3VlImageBoundVideo(const VisionEncoderSpec& s, const VisionItemRequest& r,
                                                         int64_t max_model_len, Qwen3VlDummyVideo rule,
                                                         bool factor_pair) {
  if (!IsSmartResizeProcessor(s) || s.video_max_pixels <= 0) return std::nullopt;
  RequireTwoFrameDummy(s, r.field);
  const int64_t factor = Mul(s.patch_size, s.spatial_merge_size);
  constexpr int64_t kSide = 9999999;  // the width and height get_image_size_with_most_features asked before 0.13.0
  const std::array<int64_t, 2> target = factor_pair
                                            ? MostFeaturesSize(s.max_pixels, factor, r.field)
                                            : SmartResize(kSide, kSide, factor, s.min_pixels, s.max_pixels, r.field);
  Qwen3VlFramesVideo out;
  out.frames = ImageBoundFrames(s, target, max_model_len, r.field);
  const bool times_12_5 =
      rule == Qwen3VlDummyVideo::kImageBoundFramesUnresizedX12_5 || rule == Qwen3VlDummyVideo::kImageBoundFramesX12_5;
  out.largest = FramesItem(s, VideoAtFrames(s, target, out.frames, r.field).patches, times_12_5);
  const bool reads_options = rule != Qwen3VlDummyVideo::kImageBoundFramesUnresizedX12_5;
  // The num_frames option lowers the dummy's frames (from 0.11.1), never below 2 (_get_dummy_videos).
  const int64_t dummy_frames = reads_options && r.num_frames > 0 ? std::min(out.frames, r.num_frames) : out.frames;
  out.frames = std::max(dummy_frames, kQwen3VlDummyVideoFrames);
  out.dummy = FramesItem(s, ImageBoundDummy(s, r, target, out.frames, rule).patches, times_12_5);
  return out;
}

std::vector<std::string> VisionModalities(const VisionEncoderSpec& spec) {
  // vllm qwen2_vl.py (and qwen2_5_vl.py, qwen3_vl.py) get_supported_mm_limits: {"image": None,
  // "video": None}; gemma3_mm.py, mistral3.py, llava.py, llava_next.py, mllama4.py, kimi_vl.py, internvl.py (its
  // image-only processors): {"image": None}.
  if (IsSmartResizeProcessor(spec)) return {"image", "video"};
  // gemma3n_mm.py: {"image": None, "audio": None} (its audio tower beside the vision one).
  if (spec.projector == VisionProjectorKind::kGemma3n) return {"image", "audio"};
  return {"image"};
}

ProcessorKwargEffect ClassifyProcessorKwarg(const VisionEncoderSpec& spec, std::string_view key) {
  // The smart_resize bounds (transformers Qwen2VLImageProcessor: min_pixels / max_pixels override
  // size {"shortest_edge", "longest_edge"}), which VisionItemRequest carries.
  if (IsSmartResizeProcessor(spec) && (key == "max_pixels" || key == "min_pixels" || key == "size")) {
    return ProcessorKwargEffect::kModelled;
  }
  // KimiVLImageProcessor's in_token_limit (the Hugging Face processor takes it as an override).
  if (IsKimiVlProcessor(spec) && key == "in_token_limit") return ProcessorKwargEffect::kModelled;
  // transformers' BaseImageProcessor keys that change pixel values, never a shape (rescale, normalize,
  // RGB conversion of the dummy's RGB image), and use_fast, which vLLM pops to pick the processor
  // class (vllm qwen2_vl.py get_hf_processor: use_fast=kwargs.pop("use_fast", True)).
  static constexpr std::string_view kNoEffect[] = {"do_convert_rgb", "do_normalize", "do_rescale", "image_mean",
                                                   "image_std",      "rescale_factor", "use_fast"};
  for (std::string_view k : kNoEffect) {
    if (key == k) return ProcessorKwargEffect::kNoEffect;
  }
  return ProcessorKwargEffect::kNotModelled;
}

std::optional<VisionDummyItem> LargestVisionItem(const VisionEncoderSpec& spec) { return VisionItem(spec, {}); }

std::optional<VisionDummyItem> VisionItem(const VisionEncoderSpec& spec, const VisionItemRequest& request) {
  // Gemma-3n's convolutional tower has no patches: its item needs the processor's square and the
  // tower's largest block (timm_vision_towers), which the plan's tower phase reads.
  if (spec.encoder == VisionEncoderKind::kTimm) {
    const bool known =
        spec.projector == VisionProjectorKind::kGemma3n && spec.image_size > 0 && spec.timm_block_stride > 0;
    return known ? std::optional<VisionDummyItem>(Gemma3nItem(spec)) : std::nullopt;
  }
  if (spec.patch_size <= 0) return std::nullopt;
  if (IsSmartResizeProcessor(spec)) return SmartResizeItem(spec, request);
  if (IsKimiVlProcessor(spec)) {
    return KimiVlItem(spec, request.in_token_limit > 0 ? request.in_token_limit : spec.in_token_limit);
  }
  if (spec.image_size <= 0) return std::nullopt;
  if (spec.encoder == VisionEncoderKind::kSiglip && spec.projector == VisionProjectorKind::kGemma3) {
    const VisionDummyItem item = Gemma3Item(spec);
    // The projector pools patches: more tokens than patches is no image vLLM can build.
    if (item.embed_rows > 0 && item.embed_rows <= item.patch_tokens) return item;
    return std::nullopt;
  }
  if (spec.encoder == VisionEncoderKind::kPixtral && spec.projector == VisionProjectorKind::kMistral3) {
    return Mistral3Item(spec);
  }
  if (IsClipOrSiglip(spec.encoder) && spec.projector == VisionProjectorKind::kLlava) return LlavaItem(spec);
  if (IsClipOrSiglip(spec.encoder) && spec.projector == VisionProjectorKind::kLlavaNext) return LlavaNextItem(spec);
  if (spec.encoder == VisionEncoderKind::kInternVit && spec.projector == VisionProjectorKind::kInternVl &&
      spec.max_dynamic_tiles > 0) {
    return InternVlItem(spec);
  }
  if (spec.encoder == VisionEncoderKind::kLlama4 && spec.projector == VisionProjectorKind::kLlama4 &&
      spec.max_dynamic_tiles > 0) {
    return Llama4Item(spec);
  }
  return std::nullopt;  // other processors: no rule yet (the plan keeps the caveat)
}

}  // namespace vllm_mem
