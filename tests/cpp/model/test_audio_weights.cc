/*!
 * \file tests/cpp/model/test_audio_weights.cc
 * \brief Gemma-3n's towers: the MobileNet-V5 vision tower (a timm architecture, its count as data), the USM
 *        audio conformer (transformers Gemma3nAudioEncoder) and their Gemma3nMultimodalEmbedders (vLLM
 *        gemma3n_mm.py), against the published checkpoint's parameter count.
 */
#include <gtest/gtest.h>

#include "gemma3n_config.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/model/audio_encoder.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/vision_encoder.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {
namespace {

// Gemma3nAudioEncoder by hand (h 1536, 12 blocks, 8 heads, kernel 5, 128 mel bins -> 64 -> 32 after the
// two stride-2 convolutions): subsampling 128*9 + 128 + 32*128*9 + 32 + 32*32*1536, then per block two
// feed-forward halves 2 * (8 h^2 + 2 h), attention 5 h^2 + h / 8 + 2 h, light conv 3 h^2 + 5 h + 2 h, norm h.
constexpr int64_t kH = 1536;
constexpr int64_t kAudioTower =
    (128 * 9 + 128 + 32 * 128 * 9 + 32 + 32 * 32 * kH) +
    12 * (2 * (8 * kH * kH + 2 * kH) + (5 * kH * kH + kH / 8 + 2 * kH) + (3 * kH * kH + 5 * kH + 2 * kH) + kH);
// Gemma3nMultimodalEmbedder: 128 rows x width, two norms of width, projection width -> 2048.
constexpr int64_t Embedder(int64_t width) { return 128 * width + 2 * width + width * 2048; }
// timm's mobilenetv5_300m_enc (model_families.json timm_vision_towers).
constexpr int64_t kMobileNetV5 = 294'126'912;

TEST(AudioWeights, Gemma3nTowersMakeThePublishedCheckpointCount) {
  const ModelSpec s = ModelSpec::FromHfConfigText(testing::kGemma3nE4bConfig);
  ASSERT_TRUE(s.vision.has_value());
  ASSERT_TRUE(s.audio.has_value());
  EXPECT_EQ(s.vision->encoder, VisionEncoderKind::kTimm);
  EXPECT_EQ(s.vision->architecture, "mobilenetv5_300m_enc");
  EXPECT_EQ(VisionEncoderParameters(*s.vision), kMobileNetV5 + Embedder(2048));
  EXPECT_EQ(AudioEncoderParameters(*s.audio), kAudioTower + Embedder(kH));
  // google/gemma-3n-E4B-it: 7,849,978,192 parameters (the Hugging Face API's safetensors metadata).
  EXPECT_EQ(NumParameters(s), 7'849'978'192);
  const WeightBreakdown w = ComputeWeights(s, WeightOptions{});
  EXPECT_EQ(w.audio_encoder_parameters, kAudioTower + Embedder(kH));
  EXPECT_EQ(w.per_pp_rank[0].audio_encoder_bytes, (kAudioTower + Embedder(kH)) * 2);
}

TEST(AudioWeights, TowersStayWholeUnderTensorParallelism) {
  const ModelSpec s = ModelSpec::FromHfConfigText(testing::kGemma3nE4bConfig);
  // TP 4: each embedder's 128 rows and projection input split four ways, everything else whole.
  EXPECT_EQ(AudioEncoderBytesPerRank(*s.audio, 2, 4), (kAudioTower + (128 * kH + kH * 2048) / 4 + 2 * kH) * 2);
  EXPECT_EQ(VisionEncoderBytesPerRank(*s.vision, 2, 4), (kMobileNetV5 + (128 * 2048 + 2048 * 2048) / 4 + 2 * 2048) * 2);
}

TEST(AudioWeights, UnknownArchitectureAndBadFieldsAreRefusedByName) {
  EXPECT_THROW(ModelSpec::FromHfConfigText(R"JSON({"model_type": "gemma3n", "text_config": {"torch_dtype": "bfloat16"},
      "vision_config": {"architecture": "resnet50"}, "audio_config": {}})JSON"),
               Unsupported);
  try {
    ModelSpec::FromHfConfigText(R"JSON({"model_type": "gemma3n", "text_config": {"torch_dtype": "bfloat16"},
        "vision_config": {}, "audio_config": {"sscp_conv_kernel_size": [[3, 3]]}})JSON");
    FAIL() << "a single subsampling kernel was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "audio_config.sscp_conv_kernel_size");
  }
}

}  // namespace
}  // namespace vllm_mem
