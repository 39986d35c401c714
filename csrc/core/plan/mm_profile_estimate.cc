/*!
 * \file core/plan/mm_profile_estimate.cc
 * \brief The encoder budget and the dummy encoder batch of vLLM's profile run, term by term.
 */
#include "vllm_mem/plan/mm_profile_estimate.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "core/base/checked_math.h"
#include "core/plan/gemma3n_tower_profile.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/model/audio_profile_item.h"
#include "vllm_mem/model/dtype.h"
#include "vllm_mem/model/model_family.h"
#include "vllm_mem/model/vision_profile_item.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "multimodal profile";

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kField); }
int64_t Add(int64_t a, int64_t b) { return CheckedAdd(a, b, kField); }

/*! Elements per patch token of the tower's largest layer on one TP rank (mm_encoder_tp_mode
 *  "weights", the default: projections split over tp, the residual stream replicated). The
 *  tower runs eagerly (it is not torch.compile'd), so vLLM's custom ops take their
 *  forward_native path under the compiled engine's default custom_ops "none" and materialize
 *  their temporaries.
 *  - SigLIP (vllm siglip.py SiglipEncoderLayer): the residual and the normed input (2 h), fc1's
 *    output and its GELU (2 I), or attention's qkv, rotated-free q/k/v views, output (4 h);
 *  - Pixtral (vllm pixtral.py PixtralHFTransformerBlock / PixtralHFMLP), at a layer past the
 *    first: the layer input, the attention output, their sum and the normed input, the
 *    transformer's own input (PixtralHFVisionModel.forward's patch_embeds, also held by
 *    PixtralHFTransformer.forward's hidden_states_pool = [x]) and the patch convolution's outputs
 *    the forward keeps in patch_embeds_list (6 h); the rotary cos and sin in the model dtype
 *    (PixtralRotaryEmbedding, head_dim each); and the MLP's merged gate_up (2 I) with
 *    SiluAndMul.forward_native's silu(x[:d]) (I) and its product (I): 4 I. */
int64_t LayerElementsPerToken(const VisionEncoderSpec& v, int64_t tp) {
  const int64_t h = v.hidden_size;
  const int64_t inter = CeilDiv(v.intermediate_size, tp);
  if (v.encoder == VisionEncoderKind::kPixtral) {
    const int64_t rotary = v.num_heads > 0 ? Mul(2, h / v.num_heads) : 0;
    return Add(Add(Mul(6, h), Mul(4, inter)), rotary);
  }
  return Add(Mul(2, h), std::max(Mul(2, inter), CeilDiv(Mul(4, h), tp)));
}

/*! The largest live set per tower token of one layer past the first, in model-dtype elements, on one
 *  TP rank, of the towers that rotate q and k through float32 complex products: Llama4VisionModel
 *  (vllm mllama4.py) and MoonViT (vllm moonvit.py MoonVitEncoderLayer, whose apply_rope is the same
 *  float() / view_as_complex / type_as sequence, and whose MLP2 is fc0, GELU-tanh, fc1). Both run
 *  eagerly, and a Python argument stays alive until its call returns. Beside every layer: the tower's
 *  own input (Llama-4's layernorm_pre output, which Llama4VisionModel.forward keeps as hidden_state;
 *  MoonVitPretrainedModel.forward's patch_embed output, held while self.encoder runs) (h), and the
 *  layer's input, also the residual (h).
 *  - attention: input_layernorm's output (h), the qkv projection (3 h / tp) and, inside
 *    Llama4VisionRotaryEmbedding.forward_native (forward_cuda calls it), query.float() and
 *    key.float() (float32: 2 x 2 h / tp), their complex64 products with the frequencies (2 x 2 h / tp)
 *    and the two .type_as copies back to the model dtype (2 h / tp): 3 h + 13 h / tp; the
 *    encoder attention's flash-attention backend materializes no score matrix;
 *  - MLP (Llama4VisionMLP: fc1, nn.GELU, fc2): the attention sum and post_attention_layernorm's output
 *    (2 h), then fc1's output with GELU's (2 I / tp), or GELU's with fc2's output (I / tp + h):
 *    4 h + max(2 I / tp, I / tp + h). */
int64_t ComplexRopeLayerElementsPerToken(const VisionEncoderSpec& v, int64_t tp) {
  const int64_t h = v.hidden_size;
  const int64_t inter = CeilDiv(v.intermediate_size, tp);
  const int64_t attention = Add(Mul(3, h), CeilDiv(Mul(13, h), tp));
  const int64_t mlp = Add(Mul(4, h), std::max(Mul(2, inter), Add(inter, h)));
  return std::max(attention, mlp);
}

/*! The Qwen-VL towers' largest live set per patch token of one block, in model-dtype elements,
 *  on one TP rank (vllm qwen2_vl.py, qwen2_5_vl.py, qwen3_vl.py; run eagerly, custom ops native,
 *  and a Python argument stays alive until its call returns). Attention (Qwen2_5_VisionAttention,
 *  the three towers' pattern): the block input and norm1's output (2 h), the qkv projection
 *  (3 h / tp), torch.cat([q, k]) for the rotary (2 h / tp), its rotated copy (2 h / tp), the
 *  flash-attention output (h / tp) and proj's output (h): 3 h + 8 h / tp; flash-attention
 *  materializes no [N, N] score (FLASH_ATTN, vLLM's vision backend on Hopper). MLP:
 *  - Qwen2.5-VL (RMSNorm with residual, gated SiLU): the input, the attention output, norm2's output
 *    and its residual (4 h), gate_up (2 I / tp), SiluAndMul.forward_native's silu and product
 *    (2 I / tp): 4 h + 4 I / tp; RMSNorm.forward_native's float32 sum of x and the residual, with
 *    both float32 copies, beside the input and the attention output: 8 h;
 *  - Qwen2-VL (LayerNorm, fc1 + QuickGELU x * sigmoid(1.702 x)): input and norm2's output (2 h),
 *    fc1's output, sigmoid's and the product (3 I / tp);
 *  - Qwen3-VL (LayerNorm, fc1 + GELU-tanh): the input, norm2's output and the interpolated position
 *    embeddings the tower's forward keeps as a local through every block (3 h), fc1's output and the
 *    activation (2 I / tp); its attention phase holds those embeddings too (+ h). */
int64_t QwenBlockElementsPerToken(const VisionEncoderSpec& v, int64_t tp) {
  const int64_t h = v.hidden_size;
  const int64_t inter = CeilDiv(v.intermediate_size, tp);
  const int64_t attention = Add(Mul(3, h), CeilDiv(Mul(8, h), tp));
  switch (v.encoder) {
    case VisionEncoderKind::kQwen25Vl:
      return std::max({attention, Mul(8, h), Add(Mul(4, h), Mul(4, inter))});
    case VisionEncoderKind::kQwen3Vl:
      return std::max(Add(attention, h), Add(Mul(3, h), Mul(2, inter)));
    default:  // Qwen2-VL
      return std::max(attention, Add(Mul(2, h), Mul(3, inter)));
  }
}

constexpr int64_t kFloat32Bytes = 4;

/*! Qwen2_5_VisionAttention's working set per patch while it rotates q and k, in bytes, in the releases
 *  whose forward (qwen2_5_vl.py of September 2025) copies q, k and v
 *  (rearrange(...).contiguous(): vllm_versions.json qwen25_vision_qkv_copies) and rotates
 *  torch.cat([q, k]) through float32 (qwen2_vl.py apply_rotary_pos_emb_vision: t.float(),
 *  freqs.cos() and freqs.sin(), the flash-attention rotary kernel's output, .type_as(t):
 *  qwen25_vision_fp32_rotary). At the copy back, in the model dtype: the block input and norm1's
 *  output, which the call keeps (2 h), qkv (3 h / tp), the q, k, v copies (3 h / tp), the
 *  concatenation (2 h / tp) and the copy back (2 h / tp); in float32: the q / k copy (2 h / tp), the
 *  kernel's output (2 h / tp), cos and sin (head_dim). A float32 model makes neither the .float()
 *  nor the .type_as copy. With the copies, split_qkv at TP > 1 first all-gathers every rank's qkv
 *  (3 h) and concatenates it (3 h) beside the local qkv and the two inputs: 8 h + 3 h / tp. */
int64_t Qwen25RotaryAttentionBytes(const VisionEncoderSpec& v, int64_t tp, int64_t dtype_bytes,
                                   const MmProfileOptions& o) {
  const int64_t h = v.hidden_size;
  const bool float32_copies = o.qwen25_vision_fp32_rotary && dtype_bytes != kFloat32Bytes;
  const int64_t copy_back = o.qwen25_vision_fp32_rotary && !float32_copies ? 0 : 2;
  const int64_t model_per_rank = 3 + (o.qwen25_vision_qkv_copies ? 3 : 0) + 2 + copy_back;
  const int64_t model_dtype = Add(Mul(2, h), CeilDiv(Mul(model_per_rank, h), tp));
  const int64_t float32 =
      o.qwen25_vision_fp32_rotary ? Add(CeilDiv(Mul(float32_copies ? 4 : 2, h), tp), h / v.num_heads) : 0;
  const int64_t rotary = Add(Mul(model_dtype, dtype_bytes), Mul(float32, kFloat32Bytes));
  if (tp == 1 || !o.qwen25_vision_qkv_copies) return rotary;
  return std::max(rotary, Mul(Add(Mul(8, h), CeilDiv(Mul(3, h), tp)), dtype_bytes));
}

/*! The Qwen-VL towers' encoder working set over \p patches: the block's live set, the rotary table
 *  every block reads ((patches, head_dim / 2) float32: Qwen2_5_VisionRotaryEmbedding's frequencies
 *  indexed per patch), and Qwen3-VL's DeepStack features, each (patches / merge^2, out_hidden_size),
 *  kept from their layer to the tower's end (all of them at the last blocks). */
int64_t QwenEncoderLayerBytes(const VisionEncoderSpec& v, int64_t patches, int64_t dtype_bytes,
                              const MmProfileOptions& o) {
  const int64_t tp = o.tensor_parallel_size;
  int64_t block_per_patch = Mul(QwenBlockElementsPerToken(v, tp), dtype_bytes);
  // Qwen3-VL's blocks reuse Qwen2_5_VisionAttention (qwen3_vl.py Qwen3_VisionBlock), beside the
  // interpolated position embeddings its forward keeps (h).
  const bool qwen25_copies = o.qwen25_vision_qkv_copies || o.qwen25_vision_fp32_rotary;
  if (qwen25_copies && (v.encoder == VisionEncoderKind::kQwen25Vl || v.encoder == VisionEncoderKind::kQwen3Vl)) {
    const int64_t kept = v.encoder == VisionEncoderKind::kQwen3Vl ? Mul(v.hidden_size, dtype_bytes) : 0;
    block_per_patch = std::max(block_per_patch, Add(Qwen25RotaryAttentionBytes(v, tp, dtype_bytes, o), kept));
  }
  const int64_t block = Mul(patches, block_per_patch);
  const int64_t rotary = Mul(Mul(patches, (v.hidden_size / v.num_heads) / 2), kFloat32Bytes);
  const int64_t merged_rows = patches / Mul(v.spatial_merge_size, v.spatial_merge_size);
  const int64_t deepstack = Mul(Mul(Mul(v.num_deepstack_mergers, merged_rows), v.out_hidden_size), dtype_bytes);
  return Add(Add(block, rotary), deepstack);
}

bool IsQwenVlTower(VisionEncoderKind kind) {
  return kind == VisionEncoderKind::kQwen2Vl || kind == VisionEncoderKind::kQwen25Vl ||
         kind == VisionEncoderKind::kQwen3Vl;
}

/*! vLLM qwen2_vl.py _MAX_FRAMES_PER_VIDEO ("For profile run", 14 at commit 002d181 of
 *  vllm/model_executor/models/qwen2_vl.py): get_num_frames_with_most_features caps each dummy video
 *  at it. Other revisions carried other caps, so a plan whose frames the cap decides is refused. */
constexpr int64_t kQwenVlMaxFramesPerVideo = 14;

/*! vLLM refuses the multimodal settings on a text model (vllm/config.py
 *  ModelConfig._init_multimodal_config: "`limit_mm_per_prompt` is only supported for multimodal
 *  models."). A multimodal checkpoint whose tower has no rules has no vision spec but carries the
 *  multimodal caveat: vLLM takes the settings there, and so does the plan. */
void RefuseOnTextModel(const ModelSpec& spec, const MmProfileOptions& o) {
  // Unset settings first: a text model's plan in a loop pays two comparisons, not the caveat search.
  if (!o.limit_mm_per_prompt.IsSet() && !o.mm_processor_kwargs.IsSet()) return;
  const auto has = [&](const std::string& caveat) {
    return std::find(spec.caveats.begin(), spec.caveats.end(), caveat) != spec.caveats.end();
  };
  // A multimodal checkpoint whose towers are a caveat (the generic one, or its family's: Gemma-3n's).
  const JsonValue* traits = FamilyTraits(spec.model_type);
  const JsonValue* own = traits != nullptr ? traits->Find("multimodal_caveat") : nullptr;
  if (spec.vision || has(MultimodalCaveat()) || (own != nullptr && has(own->AsString()))) return;
  for (const auto& [field, set] : {std::pair{"limit_mm_per_prompt", o.limit_mm_per_prompt.IsSet()},
                                   std::pair{"mm_processor_kwargs", o.mm_processor_kwargs.IsSet()}}) {
    if (set) throw InvalidArgument(field, std::string("`") + field + "` is only supported for multimodal models.");
  }
}

bool Takes(const std::vector<std::string>& modalities, std::string_view m) {
  return std::find(modalities.begin(), modalities.end(), m) != modalities.end();
}

/*! Each modality the mapping names is one the processor takes, with options the release takes. */
void CheckModalities(const std::vector<std::string>& modalities, const MmProfileOptions& o) {
  for (const MmModalityLimit& m : o.limit_mm_per_prompt.modalities) {
    const std::string field = "limit_mm_per_prompt." + m.modality;
    if (!Takes(modalities, m.modality)) {
      std::string takes;
      for (const std::string& t : modalities) takes += (takes.empty() ? "" : ", ") + t;
      throw InvalidArgument(field, "the model's multimodal processor takes no " + EchoValue(m.modality) +
                                       " items (its modalities: " + takes + ")");
    }
    if (m.HasDummyOptions() && !o.mm_dummy_options) {
      throw InvalidArgument(field, "must be an integer count in this release (limit_per_prompt: dict[str, int]; "
                                   "the per-modality options arrived in 0.11.1, vllm_versions.json mm_dummy_options)");
    }
  }
}

/*! The processor's bounds from --mm-processor-kwargs (transformers Qwen2VLImageProcessor: size
 *  {"shortest_edge", "longest_edge"}, min_pixels / max_pixels overriding it; KimiVLImageProcessor's
 *  in_token_limit); every other key is listed when it changes no tensor's size, and refused by name
 *  when it may. The release's way to the largest image (MmProfileOptions::qwen_vl_image_factor_pair)
 *  travels with them. */
VisionItemRequest ProcessorBounds(const VisionEncoderSpec& v, const MmProfileOptions& o, MmProfileBreakdown& m) {
  const MmProcessorKwargs& k = o.mm_processor_kwargs;
  for (const std::string& key : k.keys) {
    const ProcessorKwargEffect effect = ClassifyProcessorKwarg(v, key);
    if (effect == ProcessorKwargEffect::kNoEffect) m.no_effect_kwargs.push_back(key);
    if (effect == ProcessorKwargEffect::kNotModelled) {
      throw Unsupported("mm_processor_kwargs." + key + ": what it does to the " +
                        std::string(VisionEncoderKindName(v.encoder)) +
                        " processor's profile item is not modelled (planned: max_pixels, min_pixels and size for the "
                        "Qwen-VL processors, in_token_limit for Kimi-VL's; do_convert_rgb, do_normalize, do_rescale, "
                        "image_mean, image_std, rescale_factor and use_fast change no size)");
    }
  }
  if ((k.longest_edge > 0) != (k.shortest_edge > 0)) {
    throw InvalidArgument("mm_processor_kwargs.size", "size must contain 'shortest_edge' and 'longest_edge' keys.");
  }
  VisionItemRequest r;
  r.max_pixels = k.max_pixels > 0 ? k.max_pixels : k.longest_edge;
  r.min_pixels = k.min_pixels > 0 ? k.min_pixels : k.shortest_edge;
  r.size_longest_edge = k.longest_edge;
  r.in_token_limit = k.in_token_limit;
  r.factor_pair = o.qwen_vl_image_factor_pair;
  return r;
}

/*! The dummy video's frames (vllm qwen2_vl.py get_num_frames_with_most_features(max_model_len,
 *  {"video": 1}), as MultiModalBudget and _get_mm_dummy_batch ask it): the most frames whose
 *  tokens fit max_model_len (_get_max_video_frames, from 1), at most the cap. */
int64_t QwenVideoFrames(const VisionEncoderSpec& v, VisionItemRequest r, int64_t max_model_len) {
  int64_t frames = 1;
  while (frames <= kQwenVlMaxFramesPerVideo) {
    r.num_frames = frames + 1;
    if (VisionItem(v, r)->prompt_tokens > max_model_len) return frames;
    ++frames;
  }
  throw Unsupported("limit_mm_per_prompt.video: the dummy video's frames are capped by the release's "
                    "_MAX_FRAMES_PER_VIDEO (vLLM qwen2_vl.py; 14 at the revision read, other revisions differ), "
                    "which is not recorded per release: limit video to 0, or shorten max_model_len below " +
                    std::to_string(VisionItem(v, r)->prompt_tokens) + " tokens");
}

/*! One modality's largest item (what the budget and the pick read) and its dummy (what is encoded:
 *  the dummy options shrink it, not the budget's item: get_mm_max_tokens_per_item reads no option). */
struct ModalityItems {
  std::string modality;
  VisionDummyItem largest;
  VisionDummyItem dummy;
  int64_t frames = 0;
};

/*! Refusals before Qwen3-VL's video rule reads --mm-processor-kwargs (0.17.0): a release without
 *  Qwen3-VL, and processor bounds, which those releases' processor instance does not take for the
 *  budget's item (cached_processor_from_config drops the call-time keys) while the processor call does. */
void CheckQwen3VlVideoRule(const VisionEncoderSpec& v, const VisionItemRequest& r, const MmProfileOptions& o) {
  if (o.qwen3_vl_dummy_video == Qwen3VlDummyVideo::kAbsent || v.video_max_pixels <= 0) {
    throw Unsupported(
        "limit_mm_per_prompt.video: this vLLM release has no Qwen3-VL dummy video rule here (qwen3_vl.py "
        "arrived in 0.11.0; vllm_versions.json qwen3_vl_dummy_video): limit video to 0 ({\"video\": 0}) for a plan");
  }
  const bool bounds = r.max_pixels > 0 || r.min_pixels > 0 || r.size_longest_edge > 0;
  const bool reads_kwargs = o.qwen3_vl_dummy_video == Qwen3VlDummyVideo::kVideoBound2FramesKwargs ||
                            o.qwen3_vl_dummy_video == Qwen3VlDummyVideo::kVideoBound2FramesPixels;
  if (bounds && !reads_kwargs) {
    throw Unsupported(
        "limit_mm_per_prompt.video: before vLLM 0.17.0 Qwen3-VL's video budget reads the checkpoint's "
        "processor sizes while the processor call takes --mm-processor-kwargs' (vllm_versions.json "
        "qwen3_vl_dummy_video); that split is not modelled: limit video to 0 ({\"video\": 0}) for a plan");
  }
}

/*! Qwen3-VL's (and Qwen3.5's) dummy video by the release's rule (vllm_versions.json qwen3_vl_dummy_video):
 *  before 0.15.0 at the image's size with frames by max_model_len (Qwen3VlImageBoundVideo), from 0.15.0
 *  two frames at its video processor's bound (Qwen3VlVideoItem), whatever max_model_len; the width /
 *  height options shrink the dummy, num_frames lowers the frames (never below 2). */
ModalityItems Qwen3VlVideoItems(const VisionEncoderSpec& v, VisionItemRequest r, const MmProfileOptions& o) {
  CheckQwen3VlVideoRule(v, r, o);
  ModalityItems out;
  out.modality = "video";
  const MmModalityLimit* options = o.limit_mm_per_prompt.Find("video");
  const bool has_options = options != nullptr && options->HasDummyOptions();
  const Qwen3VlDummyVideo rule = o.qwen3_vl_dummy_video;
  if (rule != Qwen3VlDummyVideo::kVideoBound2Frames && rule != Qwen3VlDummyVideo::kVideoBound2FramesKwargs &&
      rule != Qwen3VlDummyVideo::kVideoBound2FramesPixels) {
    r.num_frames = has_options ? options->num_frames : 0;
    r.width = has_options ? options->width : 0;
    r.height = has_options ? options->height : 0;
    const Qwen3VlFramesVideo video = *Qwen3VlImageBoundVideo(v, r, o.max_model_len, rule, r.factor_pair);
    out.frames = video.frames;
    out.largest = video.largest;
    out.dummy = video.dummy;
    return out;
  }
  // 0.32.0 folds max_pixels into the video size before the target reads size["longest_edge"]
  // (qwen2_vl.py _get_vision_size: "max_pixels override the corresponding size edges"); r.max_pixels is
  // max_pixels, else size.longest_edge. Before, the target read the size dict alone.
  if (rule == Qwen3VlDummyVideo::kVideoBound2FramesPixels && r.max_pixels > 0) r.size_longest_edge = r.max_pixels;
  out.frames = kQwen3VlDummyVideoFrames;
  out.largest = *Qwen3VlVideoItem(v, r);
  if (has_options) {
    r.width = options->width;
    r.height = options->height;
  }
  out.dummy = *Qwen3VlVideoItem(v, r);
  return out;
}

/*! Gemma-3n's dummy audio (audio_profile_item.h) in the item's terms: its placeholders and cached rows,
 *  its log-mel features as the "pixels", the conformer's frames as the tower's sequence. */
VisionDummyItem AudioAsItem(const AudioDummyItem& a) {
  VisionDummyItem item;
  item.prompt_tokens = a.prompt_tokens;
  item.embed_rows = a.embed_rows;
  item.pixel_elements = a.feature_elements;
  item.patch_tokens = a.tower_frames;
  return item;
}

ModalityItems ItemsFor(const ModelSpec& spec, const std::string& modality, const VisionItemRequest& bounds,
                       const MmProfileOptions& o) {
  const VisionEncoderSpec& v = *spec.vision;
  ModalityItems out;
  out.modality = modality;
  VisionItemRequest r = bounds;
  r.field = "limit_mm_per_prompt." + modality;
  const MmModalityLimit* options = o.limit_mm_per_prompt.Find(modality);
  if (modality == "audio" && spec.audio) {
    if (options != nullptr && options->HasDummyOptions()) {
      throw Unsupported(r.field + ": a dummy audio's options for Gemma-3n's feature extractor are not modelled");
    }
    out.largest = AudioAsItem(Gemma3nAudioItem(*spec.audio));
    out.dummy = out.largest;
    return out;
  }
  if (modality == "video") {
    if (v.encoder == VisionEncoderKind::kQwen3Vl) return Qwen3VlVideoItems(v, r, o);
    r.num_frames = QwenVideoFrames(v, r, o.max_model_len);
    out.frames = r.num_frames;
  }
  out.largest = *VisionItem(v, r);
  if (options != nullptr && options->HasDummyOptions()) {
    // Gemma-3n's SiglipImageProcessorFast resizes every image to its square: a smaller dummy changes no tensor.
    if (v.encoder == VisionEncoderKind::kTimm && modality == "image") {
      out.dummy = out.largest;
      return out;
    }
    if (!IsSmartResizeProcessor(v)) {
      throw Unsupported(r.field + ": a dummy size for the " + std::string(VisionEncoderKindName(v.encoder)) +
                        " processor is not modelled (the Qwen-VL processors' is)");
    }
    r.width = options->width;
    r.height = options->height;
    if (options->num_frames > 0) r.num_frames = std::min(r.num_frames, options->num_frames);
    out.frames = modality == "video" ? r.num_frames : 0;
  }
  out.dummy = *VisionItem(v, r);
  return out;
}

/*! The modality vLLM profiles (MultiModalBudget.get_modality_with_max_tokens): of those whose limit
 *  is above 0, the one with the most tokens per item. A tie goes to the first in
 *  get_mm_max_tokens_per_item's order (image) before 0.17.0, to the later name (video over image, image
 *  over audio) from 0.17.0 (max by (tokens, name): vllm_versions.json mm_modality_tie_by_name). */
std::optional<ModalityItems> ProfiledModality(const ModelSpec& spec, const VisionItemRequest& bounds,
                                              const MmProfileOptions& o) {
  const VisionEncoderSpec& v = *spec.vision;
  std::optional<ModalityItems> best;
  for (const std::string& modality : VisionModalities(v)) {
    if (o.limit_mm_per_prompt.Count(modality) == 0) continue;
    ModalityItems items = ItemsFor(spec, modality, bounds, o);
    const int64_t tokens = items.largest.prompt_tokens;
    const bool wins =
        !best || tokens > best->largest.prompt_tokens ||
        (o.mm_modality_tie_by_name && tokens == best->largest.prompt_tokens && items.modality > best->modality);
    if (wins) best = std::move(items);
  }
  return best;
}

/*! MoonViT's rotary tables, in bytes (vllm moonvit.py Rope2DPosEmb, complex64 = 8 bytes a value):
 *  precomputed_freqs_cis, a cached_property of (512, 512, head_dim / 2) built on the GPU at the first
 *  forward (the profile run's) and kept, and the (patches, head_dim / 2) rows the encoder gathers for
 *  the batch and every block reads. */
int64_t MoonVitRopeBytes(const VisionEncoderSpec& v, int64_t patches) {
  constexpr int64_t kComplex64Bytes = 8;
  constexpr int64_t kMaxGridSide = 512;  // MoonVitEncoder: Rope2DPosEmb(head_dim, 512, 512)
  const int64_t half_head = (v.hidden_size / v.num_heads) / 2;
  return Mul(Mul(Add(Mul(kMaxGridSide, kMaxGridSide), patches), half_head), kComplex64Bytes);
}

/*! MoonViT's layer on releases that run its attention through torch SDPA (vllm moonvit.py
 *  sdpa_attention, taken when the flash_attn package does not import: vLLM's default installation).
 *  q, k, v reach F.scaled_dot_product_attention as 3-D (heads, N, head_dim) over the N patches of the
 *  whole batch, which no fused kernel takes (PyTorch's sdp checks ask for 4-D inputs), so the math
 *  path runs: float32 copies of q, k, v and the scaled q (8 h elements a token beside the block
 *  input, the tower input, norm0's output, qkv and the rotated q / k: 16 h), the float32 scores
 *  (heads, N, N), and in _safe_softmax its output, the -inf test (bool) and torch.where's result:
 *  (4 + 4 + 1 + 4) x heads x N^2 bytes. The masks (the [1, N, N] bool block mask and SDPA's additive
 *  copy in the model dtype) are the caller's attention_mask_bytes. */
int64_t MoonVitSdpaLayerBytes(const VisionEncoderSpec& v, int64_t patches, int64_t dtype_bytes) {
  constexpr int64_t kScoreBytesPerHead = 4 + 4 + 1 + 4;
  const int64_t per_token = Mul(Mul(patches, Mul(16, v.hidden_size)), dtype_bytes);
  const int64_t scores = Mul(Mul(Mul(kScoreBytesPerHead, v.num_heads), patches), patches);
  const int64_t mlp = Mul(Mul(patches, ComplexRopeLayerElementsPerToken(v, 1)), dtype_bytes);
  return std::max(Add(per_token, scores), mlp);
}

/*! The tower's largest layer over \p patches tower tokens, in bytes. MoonViT's linears are taken
 *  replicated on every TP rank, as the weights are (core/model/vision_weights.cc), and its attention
 *  by the release's rule (MmProfileOptions::moonvit_dense_attention_mask). */
int64_t EncoderLayerBytes(const VisionEncoderSpec& v, int64_t patches, const MmProfileOptions& o, int64_t dtype_bytes) {
  const int64_t tp = o.tensor_parallel_size;
  if (IsQwenVlTower(v.encoder)) return QwenEncoderLayerBytes(v, patches, dtype_bytes, o);
  if (v.encoder == VisionEncoderKind::kMoonVit) {
    const int64_t layer = o.moonvit_dense_attention_mask
                              ? MoonVitSdpaLayerBytes(v, patches, dtype_bytes)
                              : Mul(Mul(patches, ComplexRopeLayerElementsPerToken(v, 1)), dtype_bytes);
    return Add(layer, MoonVitRopeBytes(v, patches));
  }
  const int64_t per_token =
      v.encoder == VisionEncoderKind::kLlama4 ? ComplexRopeLayerElementsPerToken(v, tp) : LayerElementsPerToken(v, tp);
  return Mul(Mul(patches, per_token), dtype_bytes);
}

/*! The dense attention masks the release builds over every patch of the batch, in bytes: Pixtral's
 *  (transformers' generate_block_attention_mask: torch.full((N, N), finfo.min) in the patch
 *  embeddings' dtype, expanded, not copied, to the heads) and MoonViT's (sdpa_attention's [1, N, N]
 *  bool mask, and SDPA's convert_boolean_attn_mask copy of it in the query's dtype). */
int64_t AttentionMaskBytes(const VisionEncoderSpec& v, int64_t patches, const MmProfileOptions& o,
                           int64_t dtype_bytes) {
  const int64_t square = Mul(patches, patches);
  if (v.encoder == VisionEncoderKind::kPixtral && o.pixtral_dense_block_mask) return Mul(square, dtype_bytes);
  if (v.encoder == VisionEncoderKind::kMoonVit && o.moonvit_dense_attention_mask) {
    return Mul(square, Add(1, dtype_bytes));
  }
  return 0;
}

/*! The profiled tower's largest layer: Gemma-3n's MobileNet-V5 or USM conformer
 *  (gemma3n_tower_profile.h) per dummy item, every other tower per patch token. */
int64_t TowerLayerBytes(const ModelSpec& spec, const MmProfileBreakdown& m, int64_t patches, const MmProfileOptions& o,
                        int64_t dtype_bytes) {
  const VisionEncoderSpec& v = *spec.vision;
  if (m.modality == "audio" && spec.audio) {
    return Gemma3nAudioTowerBytes(*spec.audio, Gemma3nAudioItem(*spec.audio), m.items, dtype_bytes);
  }
  if (v.encoder == VisionEncoderKind::kTimm) return MobileNetV5BlockBytes(v, m.items, dtype_bytes);
  return EncoderLayerBytes(v, patches, o, dtype_bytes);
}

}  // namespace

bool MmAllModalitiesOff(const ModelSpec& spec, const MmLimitPerPrompt& limit) {
  if (!limit.IsSet()) return false;
  if (!spec.vision) return limit.images == 0;
  for (const std::string& modality : VisionModalities(*spec.vision)) {
    if (limit.Count(modality) > 0) return false;
  }
  return true;
}

MmEncoderBudget ComputeMmEncoderBudget(const MmBudgetOptions& o) {
  RequirePositive(o.max_tokens_per_item, "max_tokens_per_item");
  RequirePositive(o.max_num_batched_tokens, "max_num_batched_tokens");
  RequirePositive(o.max_num_seqs, "max_num_seqs");
  RequirePositive(o.max_model_len, "max_model_len");
  RequireNonNegative(o.limit_per_prompt, "limit_mm_per_prompt");
  MmEncoderBudget b;
  // A modality limited to 0 is not a tower modality: no budget, no profile run ("All non-text
  // modalities supported by the model have been explicitly disabled via limit_mm_per_prompt").
  if (o.limit_per_prompt == 0) return b;
  b.encoder_compute_budget_tokens = std::max(o.max_num_batched_tokens, o.max_tokens_per_item);
  b.encoder_cache_size_tokens = b.encoder_compute_budget_tokens;
  b.encoder_budget_tokens = std::min(b.encoder_compute_budget_tokens, b.encoder_cache_size_tokens);
  const int64_t encoder_items = b.encoder_budget_tokens / o.max_tokens_per_item;
  b.max_items_per_prompt = std::max<int64_t>(1, std::min(o.limit_per_prompt, o.max_model_len / o.max_tokens_per_item));
  int64_t requests = o.max_num_seqs;
  if (!o.chunked_prefill) requests = std::min(requests, o.max_num_batched_tokens / o.max_tokens_per_item);
  const int64_t decoder_items = Mul(requests, b.max_items_per_prompt);
  b.max_items_per_batch = std::max<int64_t>(1, std::min(encoder_items, decoder_items));
  return b;
}

MmProfileBreakdown EstimateMmProfile(const ModelSpec& spec, const MmProfileOptions& o) {
  MmProfileBreakdown m;
  RefuseOnTextModel(spec, o);
  if (!spec.vision || !LargestVisionItem(*spec.vision)) return m;
  const VisionEncoderSpec& v = *spec.vision;
  m.modelled = true;
  CheckModalities(VisionModalities(v), o);
  const VisionItemRequest bounds = ProcessorBounds(v, o, m);
  if (o.skip_mm_profiling || o.language_model_only) return m;
  const std::optional<ModalityItems> profiled = ProfiledModality(spec, bounds, o);
  if (!profiled) return m;  // every modality limited to 0
  RequirePositive(o.tensor_parallel_size, "tensor_parallel_size");
  MmBudgetOptions bo;
  bo.max_tokens_per_item = profiled->largest.prompt_tokens;
  bo.max_num_batched_tokens = o.max_num_batched_tokens;
  bo.max_num_seqs = o.max_num_seqs;
  bo.max_model_len = o.max_model_len;
  bo.limit_per_prompt = o.limit_mm_per_prompt.Count(profiled->modality);
  m.budget = ComputeMmEncoderBudget(bo);
  if (m.budget.encoder_budget_tokens == 0) return m;
  m.runs = true;
  m.modality = profiled->modality;
  m.video_frames = profiled->frames;
  m.items = m.budget.max_items_per_batch;
  const VisionDummyItem& item = profiled->dummy;
  const int64_t dtype_bytes =
      DTypeSizeBytes(ResolveModelDType(o.dtype.empty() ? "auto" : o.dtype, spec.dtype, "dtype"));
  const int64_t patches = Mul(m.items, item.patch_tokens);
  m.pixel_bytes = Mul(Mul(m.items, item.pixel_elements), dtype_bytes);
  if (m.modality == "audio") {
    // input_features_mask beside the padded features: one bool a log-mel frame.
    m.pixel_bytes = Add(m.pixel_bytes, Mul(m.items, Gemma3nAudioItem(*spec.audio).mel_frames));
  }
  // Qwen3-VL's tower returns its merger output and one DeepStack feature per
  // deepstack_visual_indexes entry side by side (torch.cat(..., dim=1)), and the encoder cache keeps
  // that whole row: (1 + len(deepstack_visual_indexes)) text-width embeddings per token.
  const int64_t embeds_per_row = Add(1, v.num_deepstack_mergers);
  m.encoder_output_bytes = Mul(Mul(Mul(Mul(m.items, item.embed_rows), embeds_per_row), spec.hidden_size), dtype_bytes);
  m.attention_mask_bytes = AttentionMaskBytes(v, patches, o, dtype_bytes);
  m.encoder_layer_bytes = TowerLayerBytes(spec, m, patches, o, dtype_bytes);
  m.encoder_phase_bytes = Add(Add(m.pixel_bytes, m.attention_mask_bytes), m.encoder_layer_bytes);
  m.resident_bytes = Add(m.pixel_bytes, m.encoder_output_bytes);
  return m;
}

}  // namespace vllm_mem
