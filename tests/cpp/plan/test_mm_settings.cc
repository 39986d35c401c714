// --limit-mm-per-prompt and --mm-processor-kwargs read as vLLM spells them
// (vllm/config/multimodal.py MultiModalConfig: limit_per_prompt, its DummyOptions classes, and
// mm_processor_kwargs), and what they do to the Qwen-VL dummy item (vision_profile_item.h).

#include <gtest/gtest.h>

#include "expect_invalid_argument.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/model/vision_profile_item.h"
#include "vllm_mem/plan/mm_settings.h"
#include "vllm_mem/plan/plan_request.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "limit_mm_per_prompt";

MmLimitPerPrompt Limit(const char* json) { return ReadMmLimitPerPrompt(ParseJson(json), kField); }

VisionEncoderSpec Qwen25VlTower() {
  // Qwen/Qwen2.5-VL-7B-Instruct: patch 14, merge 2, temporal patch 2; preprocessor_config.json
  // min_pixels 3136, max_pixels 12845056.
  VisionEncoderSpec v;
  v.encoder = VisionEncoderKind::kQwen25Vl;
  v.patch_size = 14;
  v.spatial_merge_size = 2;
  v.temporal_patch_size = 2;
  v.max_pixels = 12845056;
  v.min_pixels = 3136;
  return v;
}

}  // namespace

TEST(MmLimitPerPrompt, LegacyCountsAndVllmsDefault) {
  const MmLimitPerPrompt l = Limit(R"({"image": 2, "video": 0})");
  EXPECT_EQ(l.Count("image"), 2);
  EXPECT_EQ(l.Count("video"), 0);
  EXPECT_EQ(l.Count("audio"), 999);  // MultiModalConfig.get_limit_per_prompt: 999 when left out
  EXPECT_FALSE(l.Find("image")->HasDummyOptions());
  EXPECT_EQ(MmLimitPerPromptJson(l), R"({"image": 2, "video": 0})");
  EXPECT_FALSE(MmLimitPerPrompt{}.IsSet());
  EXPECT_EQ(MmLimitPerPrompt{}.Count("video"), 999);
}

TEST(MmLimitPerPrompt, IntFormIsImagesWithEveryOtherModalityOff) {
  MmLimitPerPrompt l;
  l.images = 3;
  EXPECT_EQ(l.Count("image"), 3);
  EXPECT_EQ(l.Count("video"), 0);
  EXPECT_EQ(MmLimitPerPromptJson(l), "3");
}

TEST(MmLimitPerPrompt, DummyOptionsAsVllmsClassesTakeThem) {
  const MmLimitPerPrompt l =
      Limit(R"({"image": {"count": 1, "width": 512, "height": 512}, "video": {"num_frames": 8}})");
  const MmModalityLimit& image = *l.Find("image");
  EXPECT_EQ(image.count, 1);
  EXPECT_EQ(image.width, 512);
  EXPECT_EQ(image.height, 512);
  EXPECT_EQ(l.Find("video")->count, 999);  // BaseDummyOptions.count defaults to 999
  EXPECT_EQ(l.Find("video")->num_frames, 8);
  EXPECT_EQ(MmLimitPerPromptJson(l),
            R"({"image": {"count": 1, "width": 512, "height": 512}, "video": {"count": 999, "num_frames": 8}})");
}

TEST(MmLimitPerPrompt, RefusesWhatVllmsValidatorRefusesByKey) {
  testing::ExpectInvalidArgument([] { Limit(R"({"image": -1})"); }, "limit_mm_per_prompt.image");
  testing::ExpectInvalidArgument([] { Limit(R"({"image": true})"); }, "limit_mm_per_prompt.image");
  testing::ExpectInvalidArgument([] { Limit(R"({"image": 1.5})"); }, "limit_mm_per_prompt.image");
  // ImageDummyOptions forbids extra keys; num_frames is a video option only.
  testing::ExpectInvalidArgument([] { Limit(R"({"image": {"num_frames": 4}})"); },
                                 "limit_mm_per_prompt.image.num_frames");
  testing::ExpectInvalidArgument([] { Limit(R"({"image": {"width": 0}})"); }, "limit_mm_per_prompt.image.width");
  testing::ExpectInvalidArgument([] { Limit("[1]"); }, "limit_mm_per_prompt");
}

TEST(MmLimitPerPrompt, TheRowBoundsEveryCount) {
  const SettingRow& row = *FindSettingRow("limit_mm_per_prompt");
  EXPECT_EQ(row.kind, SettingKind::kMapping);
  EXPECT_EQ(SettingKindName(row.kind), "mapping");
  testing::ExpectInvalidArgument([&] { ValidateSetting(row, Limit(R"({"video": 2000000})")); },
                                 "limit_mm_per_prompt.video");
}

TEST(MmProcessorKwargs, ReadsTheBoundsAndKeepsEveryKey) {
  const MmProcessorKwargs k = ReadMmProcessorKwargs(
      ParseJson(R"({"max_pixels": 1003520, "do_normalize": false, "size": {"longest_edge": 1, "shortest_edge": 2}})"),
      "mm_processor_kwargs");
  EXPECT_EQ(k.max_pixels, 1003520);
  EXPECT_EQ(k.longest_edge, 1);
  EXPECT_EQ(k.shortest_edge, 2);
  EXPECT_EQ(k.keys, (std::vector<std::string>{"do_normalize", "max_pixels", "size"}));
  testing::ExpectInvalidArgument(
      [] { ReadMmProcessorKwargs(ParseJson(R"({"max_pixels": "big"})"), "mm_processor_kwargs"); },
      "mm_processor_kwargs.max_pixels");
  testing::ExpectInvalidArgument(
      [] { ReadMmProcessorKwargs(ParseJson(R"({"size": {"height": 5}})"), "mm_processor_kwargs"); },
      "mm_processor_kwargs.size.height");
}

TEST(QwenVlDummyItem, ADummySizeIsResizedByTheProcessor) {
  // vLLM keeps min(3584, 512); transformers' smart_resize(512, 512, factor 28): round(512 / 28 =
  // 18.29) = 18 -> 504, 504^2 within [3136, 12845056]: 36^2 = 1,296 patches, 324 tokens.
  VisionItemRequest r;
  r.width = 512;
  r.height = 512;
  const VisionDummyItem item = *VisionItem(Qwen25VlTower(), r);
  EXPECT_EQ(item.patch_tokens, 36 * 36);
  EXPECT_EQ(item.prompt_tokens, 324);
  EXPECT_EQ(item.pixel_elements, int64_t{1296} * 3 * 2 * 14 * 14);
  // A 28 x 28 dummy is below min_pixels 3136 = 56^2: beta = sqrt(3136 / 784) = 2, ceil(28 x 2 / 28)
  // x 28 = 56 a side: 4 x 4 patches.
  r.width = 28;
  r.height = 28;
  EXPECT_EQ(VisionItem(Qwen25VlTower(), r)->patch_tokens, 16);
  // transformers refuses an aspect ratio above 200 (3584 / 14 = 256).
  r.width = 14;
  r.height = 0;
  testing::ExpectInvalidArgument([&] { VisionItem(Qwen25VlTower(), r); }, "limit_mm_per_prompt.image");
}

TEST(QwenVlDummyItem, VideoFramesArePaddedToTheTemporalPatch) {
  // _get_vision_info: padded = frames + frames % 2, grid_t = padded // 2: 1 and 2 frames are one
  // temporal patch (the image's 65,536 patches), 3 frames two.
  VisionItemRequest r;
  for (const auto& [frames, grid_t] : {std::pair{1, 1}, {2, 1}, {3, 2}, {14, 7}}) {
    r.num_frames = frames;
    EXPECT_EQ(VisionItem(Qwen25VlTower(), r)->patch_tokens, grid_t * 65536) << frames;
    EXPECT_EQ(VisionItem(Qwen25VlTower(), r)->prompt_tokens, grid_t * 16384) << frames;
  }
}

TEST(QwenVlDummyItem, ProcessorKwargsReplaceThePublishedBound) {
  VisionItemRequest r;
  r.max_pixels = 1003520;  // 1280 x 28 x 28 -> a 980^2 image (test_vision_profile_item.cc)
  EXPECT_EQ(VisionItem(Qwen25VlTower(), r)->patch_tokens, 70 * 70);
  // From 0.13.0 (qwen_vl_image_factor_pair) the 1,280 merged patches split 32 x 40 (35, 34, 33 do not
  // divide 1,280): 896 x 1120 = 1,003,520 pixels, which smart_resize keeps: 64 x 80 patches, 1,280 tokens.
  r.factor_pair = true;
  EXPECT_EQ(VisionItem(Qwen25VlTower(), r)->patch_tokens, 64 * 80);
  EXPECT_EQ(VisionItem(Qwen25VlTower(), r)->prompt_tokens, 1280);
  r.max_pixels = 700;  // under one 28 x 28 merged patch: vLLM's factor pair would be empty
  testing::ExpectInvalidArgument([&] { VisionItem(Qwen25VlTower(), r); }, "limit_mm_per_prompt.image");
  r = {};
  EXPECT_EQ(ClassifyProcessorKwarg(Qwen25VlTower(), "max_pixels"), ProcessorKwargEffect::kModelled);
  EXPECT_EQ(ClassifyProcessorKwarg(Qwen25VlTower(), "do_normalize"), ProcessorKwargEffect::kNoEffect);
  EXPECT_EQ(ClassifyProcessorKwarg(Qwen25VlTower(), "fps"), ProcessorKwargEffect::kNotModelled);
  VisionEncoderSpec gemma;
  gemma.patch_size = 14;
  gemma.image_size = 896;
  EXPECT_EQ(ClassifyProcessorKwarg(gemma, "max_pixels"), ProcessorKwargEffect::kNotModelled);
  EXPECT_EQ(VisionModalities(gemma), std::vector<std::string>{"image"});
  EXPECT_EQ(VisionModalities(Qwen25VlTower()), (std::vector<std::string>{"image", "video"}));
}

}  // namespace vllm_mem
