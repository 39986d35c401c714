/*!
 * \file tests/cpp/model/test_gemma3n_profile_items.cc
 * \brief Gemma-3n's dummy image and dummy audio in vLLM's start-up profile run (vllm gemma3n_mm.py
 *        Gemma3nDummyInputsBuilder, Gemma3nProcessingInfo.get_max_tokens_per_item), by hand.
 */
#include <optional>

#include <gtest/gtest.h>

#include "gemma3n_config.h"
#include "vllm_mem/model/audio_profile_item.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/vision_profile_item.h"

namespace vllm_mem {
namespace {

// The image: image_processor.size, 768 x 768 (preprocessor_config.json, model_families.json
// vision_processors.gemma3n_vision); TOKENS_PER_IMAGE = 256 placeholders and 256 embeddings (the fusion
// adapter's 16 x 16); MobileNet-V5's largest block from timm_vision_towers: stage 1's first UIR at 768 / 4.
TEST(Gemma3nProfileItems, ImageFromTheProcessorSquare) {
  const ModelSpec s = ModelSpec::FromHfConfigText(testing::kGemma3nE4bConfig);
  ASSERT_TRUE(s.vision.has_value() && s.audio.has_value());
  EXPECT_TRUE(s.caveats.empty());  // both towers' profile runs have rules: no caveat left
  const VisionEncoderSpec& v = *s.vision;
  EXPECT_EQ(v.image_size, 768);
  EXPECT_EQ(v.timm_block_stride, 4);
  EXPECT_EQ(v.timm_block_input_channels, 128);
  EXPECT_EQ(v.timm_block_expanded_channels, 768);
  const std::optional<VisionDummyItem> item = LargestVisionItem(v);
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(item->prompt_tokens, 256);
  EXPECT_EQ(item->embed_rows, 256);
  EXPECT_EQ(item->pixel_elements, 3 * 768 * 768);
  EXPECT_EQ(VisionModalities(v), (std::vector<std::string>{"image", "audio"}));
  // A timm tower without its largest block in the table has no item (the profiling caveat would stay).
  VisionEncoderSpec unknown = v;
  unknown.timm_block_stride = 0;
  EXPECT_FALSE(LargestVisionItem(unknown).has_value());
}

// The audio: feature_extractor.fft_length = 1,024 samples (2 x 512), padded to a multiple of 128 (1,024),
// unfolded in frames of 513 every 160: (1024 - 513) // 160 + 1 = 4 log-mel frames of 128 bins. The two
// subsampling convolutions (time stride 2, padding (0, 2)) leave (4 - 1) // 2 + 1 = 2, then 1 frame.
// TOKENS_PER_AUDIO = 188 placeholders; the embeddings are padded to audio_soft_tokens_per_image = 188.
TEST(Gemma3nProfileItems, AudioFromTheFeatureExtractor) {
  const ModelSpec s = ModelSpec::FromHfConfigText(testing::kGemma3nE4bConfig);
  ASSERT_TRUE(s.audio.has_value());
  EXPECT_EQ(s.audio->attention_chunk_size, 12);  // Gemma3nAudioConfig's defaults
  EXPECT_EQ(s.audio->attention_context_left, 13);
  EXPECT_EQ(s.audio->attention_context_right, 0);
  const AudioDummyItem a = Gemma3nAudioItem(*s.audio);
  EXPECT_EQ(a.prompt_tokens, 188);
  EXPECT_EQ(a.embed_rows, 188);
  EXPECT_EQ(a.mel_frames, 4);
  EXPECT_EQ(a.feature_elements, 4 * 128);
  EXPECT_EQ(a.conv_frames, 2);
  EXPECT_EQ(a.tower_frames, 1);
  // Time strides of 1: every frame stays.
  AudioEncoderSpec unstrided = *s.audio;
  unstrided.sscp_time_stride = {1, 1};
  EXPECT_EQ(Gemma3nAudioItem(unstrided).tower_frames, 4);
}

}  // namespace
}  // namespace vllm_mem
