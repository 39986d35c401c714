/*!
 * \file core/model/audio_weights.cc
 * \brief Gemma-3n's audio tower and embedder, tensor by tensor as transformers' modeling_gemma3n.py
 *        builds them (Gemma3nAudioEncoder: Gemma3nAudioSubSampleConvProjection and
 *        conf_num_hidden_layers Gemma3nAudioConformerBlock) and as vLLM gemma3n_mm.py holds them.
 *
 * vLLM builds the tower with AutoModel.from_config(config.audio_config), a plain transformers
 * module: whole on every tensor-parallel rank, in the model dtype, on every pipeline rank (the
 * wrapper builds it whatever the rank). Its embedder (Gemma3nMultimodalEmbedder) splits its rows
 * and projection over tensor-parallel ranks (vision_weights.h).
 */
#include "core/model/audio_weights.h"

#include <array>
#include <string>

#include "core/base/checked_math.h"
#include "core/model/config_defaults.h"
#include "core/model/vision_weights.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "audio_config";

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kField); }
int64_t Add(int64_t a, int64_t b) { return CheckedAdd(a, b, kField); }

std::string FieldName(const char* key) { return std::string("audio_config.") + key; }

/*! A positive integer, at most \p bound, named \p field when it is not. */
int64_t PositiveInt(const JsonValue* x, const std::string& field, int64_t bound) {
  if (x == nullptr || x->IsNull()) throw InvalidArgument(field, "required field missing from audio_config");
  if (!x->IsNumber() || !x->AsNumber().integer) {
    throw InvalidArgument(field, "must be a positive integer, got " + x->KindName());
  }
  RequirePositiveAtMost(*x->AsNumber().integer, bound, field.c_str(),
                        "vllm_mem/base/limits.h: 100x beyond real audio towers");
  return *x->AsNumber().integer;
}

int64_t AudioInt(const JsonValue& a, const char* key, int64_t bound) {
  return PositiveInt(a.Find(key), FieldName(key), bound);
}

/*! A count that may be 0 (the attention's right context: 0 in the published configs). */
int64_t AudioNonNegativeInt(const JsonValue& a, const char* key, int64_t bound) {
  const JsonValue* x = a.Find(key);
  if (x != nullptr && x->IsNumber() && x->AsNumber().integer && *x->AsNumber().integer == 0) return 0;
  return PositiveInt(x, FieldName(key), bound);
}

/*! A list of exactly two entries: Gemma3nAudioSubSampleConvProjection builds conv_0 and conv_1 only
 *  and sizes its projection from the last entry, so another length cannot be built. */
const JsonArray& PairList(const JsonValue& a, const char* key) {
  const JsonValue* x = a.Find(key);
  if (x == nullptr || !x->IsArray() || x->AsArray().size() != 2) {
    throw InvalidArgument(FieldName(key), "must be a list of two entries (the two subsampling convolutions)");
  }
  return x->AsArray();
}

/*! sscp_conv_kernel_size / sscp_conv_stride_size entry i: a [time, frequency] pair of positive integers. */
std::array<int64_t, 2> IntPair(const JsonValue& entry, const char* key) {
  if (!entry.IsArray() || entry.AsArray().size() != 2) {
    throw InvalidArgument(FieldName(key), "entries must be [time, frequency] pairs of positive integers");
  }
  return {PositiveInt(&entry.AsArray()[0], FieldName(key), kMaxHeadDim),
          PositiveInt(&entry.AsArray()[1], FieldName(key), kMaxHeadDim)};
}

void ReadSubsampling(const JsonValue& a, AudioEncoderSpec& s) {
  const JsonArray& channels = PairList(a, "sscp_conv_channel_size");
  const JsonArray& kernels = PairList(a, "sscp_conv_kernel_size");
  const JsonArray& strides = PairList(a, "sscp_conv_stride_size");
  for (size_t i = 0; i < 2; ++i) {
    s.sscp_channels[i] = PositiveInt(&channels[i], FieldName("sscp_conv_channel_size"), kMaxHiddenSize);
    s.sscp_kernel[i] = IntPair(kernels[i], "sscp_conv_kernel_size");
    const std::array<int64_t, 2> stride = IntPair(strides[i], "sscp_conv_stride_size");
    s.sscp_time_stride[i] = stride[0];
    s.sscp_frequency_stride[i] = stride[1];
  }
}

/*! The mel bins left after conv i: (bins + 2 - kernel) / stride + 1 (one bin of padding each side). */
int64_t FrequencyBinsAfter(const AudioEncoderSpec& s, int64_t bins, size_t i) {
  const int64_t padded = Add(bins, 2);
  if (padded < s.sscp_kernel[i][1]) {
    throw InvalidArgument(FieldName("input_feat_size"), "leaves fewer frequency bins than the subsampling kernel");
  }
  return (padded - s.sscp_kernel[i][1]) / s.sscp_frequency_stride[i] + 1;
}

/*! The tower alone: subsampling convolutions with their cumulative group norms and input
 *  projection, then per conformer block two feed-forward halves (8 h^2 + 2 h each), attention
 *  (q, k, v, post and the relative-position projection, per_dim_scale, two norms), the light
 *  conv1d (linear_start 2 h^2, depthwise kernel, linear_end, two norms) and the block norm. */
int64_t TowerParameters(const AudioEncoderSpec& s) {
  const int64_t h = s.hidden_size;
  const int64_t c0 = s.sscp_channels[0];
  const int64_t c1 = s.sscp_channels[1];
  const int64_t bins = FrequencyBinsAfter(s, FrequencyBinsAfter(s, s.input_feat_size, 0), 1);
  int64_t n = Add(Mul(c0, Mul(s.sscp_kernel[0][0], s.sscp_kernel[0][1])), c0);
  n = Add(n, Add(Mul(Mul(c1, c0), Mul(s.sscp_kernel[1][0], s.sscp_kernel[1][1])), c1));
  n = Add(n, Mul(Mul(c1, bins), h));
  const int64_t h2 = Mul(h, h);
  const int64_t feed_forward = Add(Mul(8, h2), Mul(2, h));
  const int64_t attention = Add(Add(Mul(5, h2), h / s.num_heads), Mul(2, h));
  const int64_t light_conv = Add(Add(Mul(3, h2), Mul(h, s.conv_kernel_size)), Mul(2, h));
  const int64_t block = Add(Add(Add(Mul(2, feed_forward), attention), light_conv), h);
  return Add(n, Mul(block, s.num_layers));
}

}  // namespace

std::optional<AudioEncoderSpec> ReadAudioEncoder(const JsonValue& config, int64_t text_hidden_size) {
  const std::string cls = AudioConfigClass(config);
  if (cls != "gemma3n_audio") return std::nullopt;
  const JsonValue& a = *config.Find("audio_config");
  AudioEncoderSpec s;
  s.config_class = cls;
  s.text_hidden_size = text_hidden_size;
  s.hidden_size = AudioInt(a, "hidden_size", kMaxHiddenSize);
  s.num_layers = AudioInt(a, "conf_num_hidden_layers", kMaxNumLayers);
  s.num_heads = AudioInt(a, "conf_num_attention_heads", kMaxAttentionHeads);
  if (s.hidden_size % s.num_heads != 0) {
    throw InvalidArgument(
        FieldName("conf_num_attention_heads"),
        "must divide audio hidden_size (" + std::to_string(s.hidden_size) + "), got " + std::to_string(s.num_heads));
  }
  s.conv_kernel_size = AudioInt(a, "conf_conv_kernel_size", kMaxHeadDim);
  s.input_feat_size = AudioInt(a, "input_feat_size", kMaxHiddenSize);
  s.embedder_vocab_size = AudioInt(a, "vocab_size", kMaxVocabSize);
  s.attention_chunk_size = AudioInt(a, "conf_attention_chunk_size", kMaxHeadDim);
  s.attention_context_left = AudioInt(a, "conf_attention_context_left", kMaxHeadDim);
  s.attention_context_right = AudioNonNegativeInt(a, "conf_attention_context_right", kMaxHeadDim);
  ReadSubsampling(a, s);
  // Every count is computed once here, so a shape that overflows is refused while reading.
  AudioEncoderParameters(s);
  return s;
}

int64_t AudioEncoderParameters(const AudioEncoderSpec& spec) {
  return Add(TowerParameters(spec),
             MultimodalEmbedderParameters(spec.hidden_size, spec.embedder_vocab_size, spec.text_hidden_size));
}

int64_t AudioEncoderBytesPerRank(const AudioEncoderSpec& spec, int64_t dtype_bytes, int64_t tensor_parallel_size) {
  const int64_t embedder = MultimodalEmbedderElementsPerRank(spec.hidden_size, spec.embedder_vocab_size,
                                                             spec.text_hidden_size, tensor_parallel_size);
  return Mul(Add(TowerParameters(spec), embedder), dtype_bytes);
}

}  // namespace vllm_mem
