/*!
 * \file vllm_mem/model/audio_encoder.h
 * \brief A multimodal checkpoint's audio tower and its embedder, read from audio_config (after
 *        transformers' class defaults), and their parameter count and bytes per GPU as vLLM loads
 *        them (core/model/audio_weights.cc). Today: Gemma-3n's USM conformer (transformers
 *        Gemma3nAudioEncoder) and its Gemma3nMultimodalEmbedder.
 */
#ifndef VLLM_MEM_MODEL_AUDIO_ENCODER_H_
#define VLLM_MEM_MODEL_AUDIO_ENCODER_H_

#include <array>
#include <cstdint>
#include <string>

namespace vllm_mem {

/*! \brief What sizes Gemma-3n's audio tower and embedder. Counts are validated when read. */
struct AudioEncoderSpec {
  std::string config_class;      //!< the transformers class model_type ("gemma3n_audio")
  int64_t hidden_size = 0;       //!< the conformer's width
  int64_t num_layers = 0;        //!< conf_num_hidden_layers
  int64_t num_heads = 0;         //!< conf_num_attention_heads (divides hidden_size)
  int64_t conv_kernel_size = 0;  //!< conf_conv_kernel_size: the light conv1d's depthwise kernel
  int64_t input_feat_size = 0;   //!< mel bins into the subsampling convolutions
  /*! The two subsampling convolutions: output channels, kernel (time, frequency), frequency stride. */
  std::array<int64_t, 2> sscp_channels{};
  std::array<std::array<int64_t, 2>, 2> sscp_kernel{};
  std::array<int64_t, 2> sscp_frequency_stride{};
  std::array<int64_t, 2> sscp_time_stride{};
  /*! The conformer's chunked local attention (Gemma3nAudioAttention): query blocks of
   *  conf_attention_chunk_size frames, each attending to conf_attention_context_left - 1 frames before
   *  and conf_attention_context_right after. */
  int64_t attention_chunk_size = 0;
  int64_t attention_context_left = 0;
  int64_t attention_context_right = 0;
  int64_t embedder_vocab_size = 0;  //!< the embedder's hard-token rows (audio_config.vocab_size)
  int64_t text_hidden_size = 0;     //!< the embedder projects into the language model's width
};

/*! \brief Parameters of the audio tower and its embedder in the checkpoint. */
int64_t AudioEncoderParameters(const AudioEncoderSpec& spec);

/*! \brief Bytes one tensor-parallel rank holds in \p dtype_bytes per element: the tower whole (a
 *  transformers module vLLM builds with AutoModel.from_config), the embedder's rows and projection
 *  split (VocabParallelEmbedding, RowParallelLinear), its norms whole. */
int64_t AudioEncoderBytesPerRank(const AudioEncoderSpec& spec, int64_t dtype_bytes, int64_t tensor_parallel_size);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_AUDIO_ENCODER_H_
