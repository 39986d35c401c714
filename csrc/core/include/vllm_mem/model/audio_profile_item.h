/*!
 * \file vllm_mem/model/audio_profile_item.h
 * \brief The dummy audio item vLLM's start-up profile run builds for Gemma-3n's audio tower: its
 *        prompt tokens, the log-mel frames the feature extractor makes of it and the frames the
 *        conformer runs (core/model/audio_profile_item.cc).
 *
 * vLLM gemma3n_mm.py Gemma3nDummyInputsBuilder asks for audios of feature_extractor.fft_length samples
 * (1,024: transformers Gemma3nAudioFeatureExtractor, frame_length 512 at 16 kHz / 32 ms, fft_overdrive
 * doubles it), the same in every release that serves Gemma-3n; the placeholder budget is the
 * hard-coded TOKENS_PER_AUDIO (188), and the embeddings are padded or cut to audio_soft_tokens_per_image.
 */
#ifndef VLLM_MEM_MODEL_AUDIO_PROFILE_ITEM_H_
#define VLLM_MEM_MODEL_AUDIO_PROFILE_ITEM_H_

#include <cstdint>

#include "vllm_mem/model/audio_encoder.h"

namespace vllm_mem {

/*! \brief One dummy audio as the profile run builds it. */
struct AudioDummyItem {
  int64_t prompt_tokens = 0;     //!< placeholder tokens (get_max_tokens_per_item's audio count)
  int64_t embed_rows = 0;        //!< embeddings the model returns for it (kept in the encoder cache)
  int64_t mel_frames = 0;        //!< log-mel frames of input_features_padded (and of its bool mask)
  int64_t feature_elements = 0;  //!< input_features_padded elements: mel_frames x input_feat_size
  int64_t conv_frames = 0;       //!< frames after the first subsampling convolution
  int64_t tower_frames = 0;      //!< frames the conformer runs (after both convolutions)
};

/*! \brief Gemma-3n's dummy audio for \p spec (its subsampling strides). */
AudioDummyItem Gemma3nAudioItem(const AudioEncoderSpec& spec);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_AUDIO_PROFILE_ITEM_H_
