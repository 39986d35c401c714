/*!
 * \file core/plan/gemma3n_tower_profile.cc
 * \brief The live set of Gemma-3n's towers at their largest layer in the profile run. Both run
 *        eagerly in the model dtype (vLLM builds them with AutoModel.from_config: plain torch
 *        modules, whole on every tensor-parallel rank), and a Python local stays alive until its
 *        function returns.
 */
#include "core/plan/gemma3n_tower_profile.h"

#include <algorithm>

#include "core/base/checked_math.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "multimodal profile";
constexpr int64_t kFloat32Bytes = 4;

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kField); }
int64_t Add(int64_t a, int64_t b) { return CheckedAdd(a, b, kField); }

/*! The first subsampling block (transformers Gemma3nAudioSSCPConvBlock over [B, 1, frames, mel bins]):
 *  the convolution's output and its permuted .contiguous() copy in the model dtype, then
 *  Gemma3nAudioCumulativeGroupNorm in float32: x_calc, mask_calc (ones_like), squared_diff_from_mean
 *  (a local kept to the return), the normalized input and its scaled product, then .to(input_dtype)'s
 *  copy (none when the model is float32). Per conv_0 output element. */
int64_t SubsamplingBlockBytes(const AudioEncoderSpec& a, const AudioDummyItem& item, int64_t dtype_bytes) {
  const int64_t bins = (a.input_feat_size + 2 - a.sscp_kernel[0][1]) / a.sscp_frequency_stride[0] + 1;
  const int64_t elements = Mul(Mul(a.sscp_channels[0], item.conv_frames), bins);
  const int64_t cast_back = dtype_bytes == kFloat32Bytes ? 0 : dtype_bytes;
  const int64_t per_element = Add(Add(Mul(2, dtype_bytes), Mul(5, kFloat32Bytes)), cast_back);
  return Mul(elements, per_element);
}

/*! One conformer block's attention (Gemma3nAudioConformerAttention / Gemma3nAudioAttention) over T
 *  frames, in model-dtype rows of the conformer's width h: the block's input, its clamp and
 *  pre_attn_norm's output (3 T), q, k and v (3 T), the query blocks (U x chunk), the key blocks
 *  (U x context) and, while the value blocks are cut, the value's padded copy (T + left - 1 + right +
 *  chunk - 1) and its unfolded .contiguous() blocks (U x context), U = ceil(T / chunk), context =
 *  chunk + left - 1 + right. The logits (heads x U x chunk x context) are below a row a frame. */
int64_t AttentionBlockBytes(const AudioEncoderSpec& a, const AudioDummyItem& item, int64_t dtype_bytes) {
  const int64_t t = item.tower_frames;
  const int64_t past = std::max<int64_t>(0, a.attention_context_left - 1);
  const int64_t context = Add(Add(a.attention_chunk_size, past), a.attention_context_right);
  const int64_t blocks = CeilDiv(t, a.attention_chunk_size);
  const int64_t padded = Add(Add(t, past), Add(a.attention_context_right, a.attention_chunk_size - 1));
  const int64_t rows =
      Add(Add(Mul(6, t), Mul(blocks, a.attention_chunk_size)), Add(Mul(Mul(2, blocks), context), padded));
  return Mul(Mul(rows, a.hidden_size), dtype_bytes);
}

}  // namespace

/*! timm UniversalInvertedResidual / EdgeResidual blocks run ConvNormAct(conv, RmsNorm2dAct): while
 *  rms_norm2d computes x * weight, ConvNormAct.forward still holds the convolution's output and
 *  rms_norm2d its x * rsqrt, all expanded_channels wide; beside them the block's input (its shortcut,
 *  and the stage's Sequential argument) and dw_start's output (UIR.forward's x while pw_exp runs),
 *  input_channels wide each, all at image_size / stride a side. */
int64_t MobileNetV5BlockBytes(const VisionEncoderSpec& v, int64_t items, int64_t dtype_bytes) {
  const int64_t side = v.image_size / v.timm_block_stride;
  const int64_t channels = Add(Mul(2, v.timm_block_input_channels), Mul(3, v.timm_block_expanded_channels));
  return Mul(Mul(Mul(items, Mul(side, side)), channels), dtype_bytes);
}

int64_t Gemma3nAudioTowerBytes(const AudioEncoderSpec& a, const AudioDummyItem& item, int64_t items,
                               int64_t dtype_bytes) {
  const int64_t per_item =
      std::max(SubsamplingBlockBytes(a, item, dtype_bytes), AttentionBlockBytes(a, item, dtype_bytes));
  return Mul(items, per_item);
}

}  // namespace vllm_mem
