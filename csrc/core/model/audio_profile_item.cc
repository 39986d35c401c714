/*!
 * \file core/model/audio_profile_item.cc
 * \brief Gemma-3n's dummy audio, as vLLM's dummy builder and transformers' feature extractor and
 *        subsampling convolutions size it.
 */
#include "vllm_mem/model/audio_profile_item.h"

#include "core/base/checked_math.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "audio_config";

/*! transformers Gemma3nAudioFeatureExtractor's defaults, which google/gemma-3n-E2B-it's and -E4B-it's
 *  preprocessor_config.json keep: 16 kHz, frame_length_ms 32 (512 samples), hop_length_ms 10 (160),
 *  fft_overdrive (fft_length = 2 x 2^ceil(log2 512) = 1,024), and __call__'s pad_to_multiple_of 128. */
constexpr int64_t kFrameLengthSamples = 512;
constexpr int64_t kHopSamples = 160;
constexpr int64_t kFftLengthSamples = 1024;
constexpr int64_t kPadToMultipleOf = 128;

/*! vLLM gemma3n_mm.py TOKENS_PER_AUDIO ("we hardcode them for now"), every release from 0.10.0. */
constexpr int64_t kTokensPerAudio = 188;

/*! Frames after a subsampling convolution of time stride \p stride: Gemma3nAudioSSCPConvBlock pads
 *  the time axis by (0, kernel - 1) ("reverse causal"), so (frames + kernel - 1 - kernel) / stride + 1. */
int64_t FramesAfter(int64_t frames, int64_t stride) { return (frames - 1) / stride + 1; }

}  // namespace

AudioDummyItem Gemma3nAudioItem(const AudioEncoderSpec& spec) {
  AudioDummyItem item;
  item.prompt_tokens = kTokensPerAudio;
  // Gemma3nForConditionalGeneration._process_audio_input pads or cuts the tower's output to
  // audio_soft_tokens_per_image (188 in the published configs, the placeholder count): one cached row each.
  item.embed_rows = kTokensPerAudio;
  // The dummy's fft_length samples, padded to a multiple of 128, cut into frames of frame_length + 1
  // samples (the preemphasis sentinel) every hop: _extract_spectrogram's unfold.
  const int64_t samples = CeilDiv(kFftLengthSamples, kPadToMultipleOf) * kPadToMultipleOf;
  item.mel_frames = (samples - (kFrameLengthSamples + 1)) / kHopSamples + 1;
  item.feature_elements = CheckedMul(item.mel_frames, spec.input_feat_size, kField);
  item.conv_frames = FramesAfter(item.mel_frames, spec.sscp_time_stride[0]);
  item.tower_frames = FramesAfter(item.conv_frames, spec.sscp_time_stride[1]);
  return item;
}

}  // namespace vllm_mem
