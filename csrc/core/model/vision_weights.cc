/*!
 * \file core/model/vision_weights.cc
 * \brief Vision towers and projectors, tensor by tensor as the checkpoint holds them and as
 *        vLLM builds them (vllm/model_executor/models/siglip.py, clip.py, pixtral.py,
 *        mllama4.py, qwen2_vl.py, qwen2_5_vl.py, qwen3_vl.py (also Qwen3.5's tower, qwen3_5.py), moonvit.py,
 *        gemma3_mm.py, mistral3.py, llava_next.py, kimi_vl.py, gemma3n_mm.py; the transformers modeling_*.py
 *        files of the same names for the checkpoint; Gemma-3n's timm tower: its count as data).
 *
 * vLLM loads the tower in the model dtype, unquantized (quantized VLM checkpoints list the
 * tower in ignore / modules_to_not_convert), on every pipeline rank (the wrappers build it
 * whatever the PP rank). Under tensor parallelism its attention and MLP projections are
 * QKV/column/row-parallel layers (mm_encoder_tp_mode "weights", the default); convolutions,
 * position tables and norms are replicated.
 */
#include "core/model/vision_weights.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/checked_math.h"
#include "core/model/config_defaults.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/model/model_family.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "vision_config";

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kField); }
int64_t Add(int64_t a, int64_t b) { return CheckedAdd(a, b, kField); }

/*! How vLLM shards a tensor over tensor-parallel ranks. */
enum class Split { kReplicated, kColumn, kRow };

/*! One tensor: a [out, in] matrix (in = 1 for a vector), with an optional [out] bias. */
struct Tensor {
  int64_t out;
  int64_t in;
  bool bias = false;
  Split split = Split::kReplicated;
  bool loaded = true;  //!< false: in the checkpoint, skipped by vLLM
  int64_t copies = 1;  //!< identical encoder layers
  /*! > 0: split only when TP divides this head count, else whole on every rank (InternViT's
   *  attention falls back to InternSdpaAttention, built with plain Linears). */
  int64_t split_if_tp_divides = 0;
  /*! A VocabParallelEmbedding: its rows padded to a multiple of 64 before the column split. */
  bool vocab_parallel = false;
};

int64_t Elements(const Tensor& t) { return Mul(Add(Mul(t.out, t.in), t.bias ? t.out : 0), t.copies); }

int64_t ElementsPerRank(const Tensor& t, int64_t tp) {
  auto divide = [&](int64_t n) {
    if (n % tp != 0) {
      throw InvalidArgument("tensor_parallel_size", "the vision encoder's " + std::to_string(n) +
                                                        "-wide projection must be divisible by tensor_parallel_size (" +
                                                        std::to_string(tp) + ")");
    }
    return n / tp;
  };
  int64_t n = 0;
  const Split split = t.split_if_tp_divides > 0 && t.split_if_tp_divides % tp != 0 ? Split::kReplicated : t.split;
  switch (split) {
    case Split::kReplicated: n = Add(Mul(t.out, t.in), t.bias ? t.out : 0); break;
    case Split::kColumn: {
      const int64_t rows = t.vocab_parallel ? Mul((t.out + 63) / 64, 64) : t.out;
      n = Add(Mul(divide(rows), t.in), t.bias ? divide(rows) : 0);
      break;
    }
    // RowParallelLinear keeps the whole bias on every rank.
    case Split::kRow: n = Add(Mul(t.out, divide(t.in)), t.bias ? t.out : 0); break;
  }
  return Mul(n, t.copies);
}

/*! Pre-norm transformer layers with q/k/v/o projections and a 2-matrix (or gated 3-matrix) MLP. */
void EncoderLayers(int64_t h, int64_t inter, int64_t layers, int64_t loaded, bool bias, bool gated,
                   int64_t norm_elements_per_layer, std::vector<Tensor>& out) {
  for (int pass = 0; pass < 2; ++pass) {
    // Layers vLLM builds, then the checkpoint's remainder that it skips.
    const int64_t copies = pass == 0 ? loaded : layers - loaded;
    if (copies == 0) continue;
    const bool is_loaded = pass == 0;
    out.push_back({Mul(3, h), h, bias, Split::kColumn, is_loaded, copies});  // q, k, v
    out.push_back({h, h, bias, Split::kRow, is_loaded, copies});             // o / out_proj
    out.push_back({gated ? Mul(2, inter) : inter, h, bias, Split::kColumn, is_loaded, copies});
    out.push_back({h, inter, bias, Split::kRow, is_loaded, copies});
    out.push_back({norm_elements_per_layer, 1, false, Split::kReplicated, is_loaded, copies});
  }
}

/*! InternViT's encoder layers, built (loaded_layers) and skipped, as vLLM's InternVisionEncoder. */
void InternVitLayers(const VisionEncoderSpec& s, std::vector<Tensor>& out) {
  const int64_t h = s.hidden_size;
  const int64_t norms = Add(Add(Mul(s.rms_norm ? 2 : 4, h), Mul(2, h)), s.qk_normalization ? Mul(2, h) : 0);
  for (int pass = 0; pass < 2; ++pass) {
    const int64_t copies = pass == 0 ? s.loaded_layers : s.num_layers - s.loaded_layers;
    if (copies == 0) continue;
    const bool is_loaded = pass == 0;
    // vllm intern_vit.py _init_attn: InternParallelAttention when TP divides the heads, else
    // InternSdpaAttention (replicated).
    out.push_back({Mul(3, h), h, s.qkv_bias, Split::kColumn, is_loaded, copies, s.num_heads});
    out.push_back({h, h, true, Split::kRow, is_loaded, copies, s.num_heads});
    out.push_back({s.intermediate_size, h, true, Split::kColumn, is_loaded, copies});
    out.push_back({h, s.intermediate_size, true, Split::kRow, is_loaded, copies});
    out.push_back({norms, 1, false, Split::kReplicated, is_loaded, copies});  // norms, ls1 / ls2, q/k norms
  }
}

/*! Qwen3_VisionTransformer (vllm qwen3_vl.py): Conv3d patch embedding with bias, a learned
 *  position table (nn.Embedding, replicated), blocks of LayerNorm + qkv / proj + a plain GELU MLP
 *  (all with bias), the patch merger (LayerNorm over h) and one DeepStack merger per
 *  deepstack_visual_indexes entry (use_postshuffle_norm: LayerNorm over the merged width). */
void Qwen3VlTensors(const VisionEncoderSpec& s, std::vector<Tensor>& t) {
  const int64_t h = s.hidden_size;
  const int64_t patch_area = Mul(s.patch_size, s.patch_size);
  t.push_back({h, Mul(Mul(s.num_channels, s.temporal_patch_size), patch_area), true});
  t.push_back({s.num_position_embeddings, h});
  EncoderLayers(h, s.intermediate_size, s.num_layers, s.loaded_layers, true, false, Mul(4, h), t);
  const int64_t merged = Mul(h, Mul(s.spatial_merge_size, s.spatial_merge_size));
  t.push_back({Mul(2, h), 1});
  t.push_back({merged, merged, true, Split::kColumn});
  t.push_back({s.out_hidden_size, merged, true, Split::kRow});
  if (s.num_deepstack_mergers > 0) {
    t.push_back({Mul(2, merged), 1, false, Split::kReplicated, true, s.num_deepstack_mergers});
    t.push_back({merged, merged, true, Split::kColumn, true, s.num_deepstack_mergers});
    t.push_back({s.out_hidden_size, merged, true, Split::kRow, true, s.num_deepstack_mergers});
  }
}

/*! Qwen2_5_VisionTransformer (vllm qwen2_5_vl.py): the Conv3d patch embedding without bias, blocks
 *  of norm1 + norm2 (RMSNorm) with qkv / proj / gate / up / down all biased, and the patch merger:
 *  ln_q (RMSNorm), then an MLP over spatial_merge_size^2 merged patches. */
void Qwen25VlTensors(const VisionEncoderSpec& s, std::vector<Tensor>& t) {
  const int64_t h = s.hidden_size;
  t.push_back({h, Mul(Mul(s.num_channels, s.temporal_patch_size), Mul(s.patch_size, s.patch_size)), false});
  EncoderLayers(h, s.intermediate_size, s.num_layers, s.loaded_layers, true, true, Mul(2, h), t);
  const int64_t merged = Mul(h, Mul(s.spatial_merge_size, s.spatial_merge_size));
  t.push_back({h, 1});
  t.push_back({merged, merged, true, Split::kColumn});
  t.push_back({s.out_hidden_size, merged, true, Split::kRow});
}

/*! Qwen2VisionTransformer (vllm qwen2_vl.py): the patch embedding as a ReplicatedLinear without
 *  bias over C x T x p x p, blocks of LayerNorm (weight + bias) + qkv / proj + fc1 / fc2 (QuickGELU),
 *  all with bias, and the patch merger: ln_q (LayerNorm) and mlp.0 / mlp.2 over the merged width. */
void Qwen2VlTensors(const VisionEncoderSpec& s, std::vector<Tensor>& t) {
  const int64_t h = s.hidden_size;
  t.push_back({h, Mul(Mul(s.num_channels, s.temporal_patch_size), Mul(s.patch_size, s.patch_size)), false});
  EncoderLayers(h, s.intermediate_size, s.num_layers, s.loaded_layers, true, false, Mul(4, h), t);
  const int64_t merged = Mul(h, Mul(s.spatial_merge_size, s.spatial_merge_size));
  t.push_back({Mul(2, h), 1});
  t.push_back({merged, merged, true, Split::kColumn});
  t.push_back({s.out_hidden_size, merged, true, Split::kRow});
}

/*! The tower's tensors: patch embedding, positions, layers, final norms (and heads / adapters). */
void EncoderTensors(const VisionEncoderSpec& s, std::vector<Tensor>& t) {
  const int64_t h = s.hidden_size;
  const int64_t patch_area = Mul(s.patch_size, s.patch_size);
  // A timm tower has its processor's image_size but no patches: no grid.
  const int64_t grid = s.patch_size > 0 ? Mul(s.image_size / s.patch_size, s.image_size / s.patch_size) : 0;
  switch (s.encoder) {
    case VisionEncoderKind::kSiglip:
      t.push_back({h, Mul(s.num_channels, patch_area), true});  // patch_embedding Conv2d
      t.push_back({grid, h});                                    // position_embedding
      EncoderLayers(h, s.intermediate_size, s.num_layers, s.loaded_layers, true, false, Mul(4, h), t);
      t.push_back({Mul(2, h), 1, false, Split::kReplicated, s.post_layernorm_loaded});  // post_layernorm
      if (s.use_head) {
        // SiglipMultiheadAttentionPoolingHead: probe, nn.MultiheadAttention, LayerNorm, MLP.
        t.push_back({h, 1});
        t.push_back({Mul(3, h), h, true});
        t.push_back({h, h, true});
        t.push_back({Mul(2, h), 1});
        t.push_back({s.intermediate_size, h, true, Split::kColumn});
        t.push_back({h, s.intermediate_size, true, Split::kRow});
      }
      break;
    case VisionEncoderKind::kClip:
      t.push_back({h, 1});                                        // class_embedding
      t.push_back({h, Mul(s.num_channels, patch_area), false});   // patch_embedding Conv2d, no bias
      t.push_back({Add(grid, 1), h});                             // position_embedding (+ class token)
      t.push_back({Mul(2, h), 1});                                // pre_layrnorm
      EncoderLayers(h, s.intermediate_size, s.num_layers, s.loaded_layers, true, false, Mul(4, h), t);
      t.push_back({Mul(2, h), 1, false, Split::kReplicated, s.post_layernorm_loaded});
      break;
    case VisionEncoderKind::kPixtral:
      t.push_back({h, Mul(s.num_channels, patch_area), false});  // patch_conv, no bias
      t.push_back({h, 1});                                        // ln_pre (RMSNorm)
      // attention_norm + ffn_norm (RMSNorm); projections without bias; gated SiLU MLP.
      EncoderLayers(h, s.intermediate_size, s.num_layers, s.loaded_layers, false, true, Mul(2, h), t);
      break;
    case VisionEncoderKind::kLlama4:
      // Llama4UnfoldConvolution: a column-parallel Linear over unfolded patches, no bias.
      t.push_back({h, Mul(s.num_channels, patch_area), false, Split::kColumn});
      t.push_back({h, 1});                 // class_embedding
      t.push_back({Add(grid, 1), h});      // positional_embedding_vlm
      t.push_back({Mul(4, h), 1});         // layernorm_pre + layernorm_post
      EncoderLayers(h, s.intermediate_size, s.num_layers, s.loaded_layers, true, false, Mul(4, h), t);
      // vision_adapter (pixel-shuffle MLP): fc1 [projector_input_dim, intermediate], fc2 square.
      t.push_back({s.projector_input_dim, s.intermediate_size, false, Split::kColumn});
      t.push_back({s.projector_output_dim, s.projector_output_dim, false, Split::kRow});
      break;
    case VisionEncoderKind::kQwen25Vl:
      Qwen25VlTensors(s, t);
      break;
    case VisionEncoderKind::kMoonVit:
      t.push_back({h, Mul(s.num_channels, patch_area), true});             // patch_embed.proj
      t.push_back({Mul(s.pos_emb_height, s.pos_emb_width), h});           // learnable 2-D position grid
      // norm0 + norm1 are LayerNorms (weight + bias); wqkv / wo / fc0 / fc1 with bias. vLLM
      // builds them as ReplicatedLinear (vllm/model_executor/models/moonvit.py).
      EncoderLayers(h, s.intermediate_size, s.num_layers, s.loaded_layers, true, false, Mul(4, h), t);
      for (Tensor& x : t) x.split = Split::kReplicated;
      t.push_back({Mul(2, h), 1});  // final_layernorm
      break;
    case VisionEncoderKind::kQwen3Vl:
      Qwen3VlTensors(s, t);
      break;
    case VisionEncoderKind::kQwen2Vl:
      Qwen2VlTensors(s, t);
      break;
    case VisionEncoderKind::kTimm:
      // A timm tower (model_families.json timm_vision_towers): a plain torch module, whole on every rank.
      t.push_back({s.tower_parameters, 1});
      break;
    case VisionEncoderKind::kInternVit:
      // InternVisionModel (vllm intern_vit.py): class token, Conv2d patch embedding with bias,
      // position table of grid + 1 rows; each layer qkv (qkv_bias) / proj (bias), optional q/k
      // RMSNorms over the whole width, norm1 / norm2 (RMSNorm, or LayerNorm with bias), the layer
      // scales ls1 / ls2, fc1 / fc2 with bias. No post-norm.
      t.push_back({h, 1});
      t.push_back({h, Mul(s.num_channels, patch_area), true});
      t.push_back({Add(grid, 1), h});
      InternVitLayers(s, t);
      break;
  }
}

/*! Gemma3nMultimodalEmbedder (vllm gemma3n_mm.py): a VocabParallelEmbedding of vocab x width (rows split
 *  over TP), hard_embedding_norm and soft_embedding_norm (RMSNorm over the width), embedding_projection
 *  (RowParallelLinear width -> text width, no bias); embedding_post_projection_norm has no weight. */
void GemmaEmbedderTensors(int64_t width, int64_t vocab, int64_t text_width, std::vector<Tensor>& t) {
  Tensor rows{vocab, width, false, Split::kColumn};
  rows.vocab_parallel = true;
  t.push_back(rows);
  t.push_back({Mul(2, width), 1});
  t.push_back({text_width, width, false, Split::kRow});
}

/*! The projector's tensors into the language model's width. */
void ProjectorTensors(const VisionEncoderSpec& s, std::vector<Tensor>& t) {
  const int64_t h = s.hidden_size;
  switch (s.projector) {
    case VisionProjectorKind::kGemma3:
      t.push_back({h, s.text_hidden_size});  // mm_input_projection_weight, a plain Parameter
      t.push_back({h, 1});                   // mm_soft_emb_norm
      break;
    case VisionProjectorKind::kGemma3n:
      GemmaEmbedderTensors(h, s.embedder_vocab_size, s.text_hidden_size, t);
      break;
    case VisionProjectorKind::kMistral3:
      t.push_back({h, 1});                                                          // norm (RMSNorm)
      t.push_back({h, Mul(h, Mul(s.spatial_merge_size, s.spatial_merge_size))});   // patch_merger.merging_layer
      t.push_back({s.text_hidden_size, Mul(h, s.num_feature_layers), s.projector_bias, Split::kColumn});
      t.push_back({s.text_hidden_size, s.text_hidden_size, s.projector_bias, Split::kRow});
      break;
    case VisionProjectorKind::kLlavaNext:
      t.push_back({s.text_hidden_size, Mul(h, s.num_feature_layers), s.projector_bias, Split::kColumn});
      t.push_back({s.text_hidden_size, s.text_hidden_size, s.projector_bias, Split::kRow});
      t.push_back({s.text_hidden_size, 1});  // image_newline
      break;
    case VisionProjectorKind::kLlama4:
      t.push_back({s.text_hidden_size, s.vision_output_dim, s.projector_bias, Split::kColumn});
      break;
    case VisionProjectorKind::kQwen25Vl:
    case VisionProjectorKind::kQwen3Vl:
      break;
    case VisionProjectorKind::kLlava:
      // LlavaMultiModalProjector (vllm llava.py): linear_1 over the concatenated feature layers,
      // linear_2; no image_newline (that is LLaVA-NeXT's).
      t.push_back({s.text_hidden_size, Mul(h, s.num_feature_layers), s.projector_bias, Split::kColumn});
      t.push_back({s.text_hidden_size, s.text_hidden_size, s.projector_bias, Split::kRow});
      break;
    case VisionProjectorKind::kInternVl: {
      // mlp1 (vllm internvl.py _init_mlp1): LayerNorm, Linear, GELU, Linear over the pixel-shuffled
      // width h / downsample_ratio^2; plain (replicated) layers.
      const int64_t shuffled = Mul(h, Mul(s.downsample_ratio_inverse, s.downsample_ratio_inverse));
      t.push_back({Mul(2, shuffled), 1});
      t.push_back({s.text_hidden_size, shuffled, true});
      t.push_back({s.text_hidden_size, s.text_hidden_size, true});
      break;
    }
    case VisionProjectorKind::kKimiVl: {
      const int64_t merged = Mul(h, Mul(s.merge_kernel_h, s.merge_kernel_w));
      t.push_back({Mul(2, h), 1});                  // pre_norm (LayerNorm)
      t.push_back({merged, merged, true});          // linear_1
      t.push_back({s.text_hidden_size, merged, true});  // linear_2
      break;
    }
  }
}

std::vector<Tensor> Describe(const VisionEncoderSpec& s) {
  std::vector<Tensor> t;
  EncoderTensors(s, t);
  ProjectorTensors(s, t);
  return t;
}

/*! A positive integer field of vision_config (one of \p keys), bounded. */
int64_t VisionInt(const JsonValue& v, std::initializer_list<const char*> keys, int64_t bound) {
  std::string names;
  for (const char* key : keys) {
    names += (names.empty() ? "" : " / ") + std::string("vision_config.") + key;
    const JsonValue* x = v.Find(key);
    if (x == nullptr || x->IsNull()) continue;
    const std::string field = std::string("vision_config.") + key;
    if (!x->IsNumber() || !x->AsNumber().integer) {
      throw InvalidArgument(field, "must be a positive integer, got " + x->KindName());
    }
    RequirePositiveAtMost(*x->AsNumber().integer, bound, field.c_str(),
                          "vllm_mem/base/limits.h: 100x beyond real vision towers");
    return *x->AsNumber().integer;
  }
  throw InvalidArgument(names, "required field missing from vision_config");
}

bool VisionBool(const JsonValue& v, const char* key, bool fallback) {
  const JsonValue* x = v.Find(key);
  if (x == nullptr || x->IsNull()) return fallback;
  if (!x->IsBool()) throw InvalidArgument(std::string("vision_config.") + key, "must be true or false, got " + x->KindName());
  return x->AsBool();
}

/*! vision_feature_layer (int or list): how many layers the projector concatenates, and how many
 *  layers vLLM builds (init_vision_tower_for_llava: up to the deepest one, a negative index
 *  counting from num_hidden_layers + 1). */
void ReadFeatureLayers(const JsonValue& config, VisionEncoderSpec& s) {
  const JsonValue* f = config.Find("vision_feature_layer");
  std::vector<int64_t> indices;
  if (f == nullptr || f->IsNull()) return;
  if (f->IsNumber() && f->AsNumber().integer) {
    indices.push_back(*f->AsNumber().integer);
  } else if (f->IsArray() && !f->AsArray().empty() && static_cast<int64_t>(f->AsArray().size()) <= s.num_layers) {
    for (const JsonValue& e : f->AsArray()) {
      if (!e.IsNumber() || !e.AsNumber().integer) {
        throw InvalidArgument("vision_feature_layer", "entries must be integers, got " + e.KindName());
      }
      indices.push_back(*e.AsNumber().integer);
    }
  } else {
    throw InvalidArgument("vision_feature_layer", "must be an integer or a list of at most vision num_hidden_layers (" +
                                                      std::to_string(s.num_layers) + ") integers");
  }
  int64_t deepest = 0;
  for (int64_t idx : indices) {
    if (idx < -s.num_layers || idx > s.num_layers) {
      throw InvalidArgument("vision_feature_layer", "must index one of the vision tower's " +
                                                        std::to_string(s.num_layers) + " layers, got " + std::to_string(idx));
    }
    deepest = std::max(deepest, idx < 0 ? s.num_layers + idx + 1 : idx);
  }
  s.loaded_layers = std::max<int64_t>(deepest, 1);
  s.num_feature_layers = static_cast<int64_t>(indices.size());
  s.post_layernorm_loaded = false;  // require_post_norm=False for LLaVA-style towers
}

/*! A true / false field of the wrapper's own config (not vision_config). */
bool WrapperBool(const JsonValue& config, const char* key, bool fallback) {
  const JsonValue* x = config.Find(key);
  if (x == nullptr || x->IsNull()) return fallback;
  if (!x->IsBool()) throw InvalidArgument(key, "must be true or false, got " + x->KindName());
  return x->AsBool();
}

/*! A whole-number wrapper field in [1, 256] (InternVL's tile counts). */
int64_t TileCount(const JsonValue& config, const char* key, int64_t fallback) {
  const JsonValue* x = config.Find(key);
  if (x == nullptr || x->IsNull()) return fallback;
  if (!x->IsNumber() || !x->AsNumber().integer) throw InvalidArgument(key, "must be an integer, got " + x->KindName());
  RequirePositiveAtMost(*x->AsNumber().integer, 256, key, "InternVL's tiles an image");
  return *x->AsNumber().integer;
}

/*! InternVL's dynamic tiling (vllm internvl.py resolve_internvl_min_max_num: min / max_dynamic_patch
 *  when dynamic_image_size, else one tile; a thumbnail tile when use_thumbnail and the image is
 *  split). Absent: InternVLChatConfig's defaults (config_defaults.json internvl_chat). */
void ReadInternVlTiling(const JsonValue& config, VisionEncoderSpec& s) {
  const bool dynamic = WrapperBool(config, "dynamic_image_size", false);
  s.use_thumbnail = WrapperBool(config, "use_thumbnail", false);
  s.min_dynamic_tiles = dynamic ? TileCount(config, "min_dynamic_patch", 1) : 1;
  s.max_dynamic_tiles = dynamic ? TileCount(config, "max_dynamic_patch", 6) : 1;
  if (s.min_dynamic_tiles > s.max_dynamic_tiles) {
    throw InvalidArgument("min_dynamic_patch", "must be at most max_dynamic_patch (" +
                                                   std::to_string(s.max_dynamic_tiles) + "), got " +
                                                   std::to_string(s.min_dynamic_tiles));
  }
}

/*! InternViT's switches and InternVL's select_layer / downsample_ratio (configuration_intern_vit.py,
 *  configuration_internvl_chat.py; vllm internvl.py builds num_hidden_layers + select_layer + 1
 *  layers for a negative select_layer, select_layer + 1 otherwise). */
void ReadInternVit(const JsonValue& config, const JsonValue& v, VisionEncoderSpec& s) {
  // Absent: InternVisionConfig's defaults (config_defaults.json intern_vit_6b fills them first).
  s.qk_normalization = VisionBool(v, "qk_normalization", true);
  s.qkv_bias = VisionBool(v, "qkv_bias", false);
  const JsonValue* norm = v.Find("norm_type");
  const std::string norm_type = norm != nullptr && norm->IsString() ? norm->AsString() : "rms_norm";
  if (norm_type != "rms_norm" && norm_type != "layer_norm") {
    throw InvalidArgument("vision_config.norm_type", "must be rms_norm or layer_norm (InternViT's NORM2FN), got " +
                                                         EchoValue(norm_type.substr(0, 40)));
  }
  s.rms_norm = norm_type == "rms_norm";
  const JsonValue* select = config.Find("select_layer");
  int64_t layer = -1;
  if (select != nullptr && !select->IsNull()) {
    if (!select->IsNumber() || !select->AsNumber().integer) {
      throw InvalidArgument("select_layer", "must be an integer, got " + select->KindName());
    }
    layer = *select->AsNumber().integer;
  }
  if (layer < -s.num_layers || layer >= s.num_layers) {
    throw InvalidArgument("select_layer", "must index one of the vision tower's " + std::to_string(s.num_layers) +
                                              " layers, got " + std::to_string(layer));
  }
  s.loaded_layers = layer < 0 ? s.num_layers + layer + 1 : layer + 1;
  // downsample_ratio 0.5: the pixel shuffle folds 2 x 2 patches (vllm: int(1 / downsample_ratio)).
  const JsonValue* ratio = config.Find("downsample_ratio");
  const double r = ratio != nullptr && ratio->IsNumber() ? ratio->AsNumber().value : 0.5;
  if (!(r > 0.0 && r <= 1.0)) {
    throw InvalidArgument("downsample_ratio", "must be a number in (0, 1] (InternVL's pixel-shuffle ratio)");
  }
  s.downsample_ratio_inverse = static_cast<int64_t>(1.0 / r);
  ReadInternVlTiling(config, s);
}

/*! Qwen3-VL's deepstack_visual_indexes: one DeepStack merger per entry, each a tower layer. */
int64_t DeepstackMergers(const JsonValue& v, int64_t num_layers) {
  const JsonValue* list = v.Find("deepstack_visual_indexes");
  if (list == nullptr || list->IsNull()) return 0;
  if (!list->IsArray() || static_cast<int64_t>(list->AsArray().size()) > num_layers) {
    throw InvalidArgument("vision_config.deepstack_visual_indexes",
                          "must be a list of at most depth (" + std::to_string(num_layers) + ") layer indices");
  }
  for (const JsonValue& e : list->AsArray()) {
    if (!e.IsNumber() || !e.AsNumber().integer || *e.AsNumber().integer < 0 || *e.AsNumber().integer >= num_layers) {
      throw InvalidArgument("vision_config.deepstack_visual_indexes",
                            "entries must be layer indices in [0, " + std::to_string(num_layers) + ")");
    }
  }
  return static_cast<int64_t>(list->AsArray().size());
}

/*! The tower and projector kinds of a vision_config class under a wrapper; false when either
 *  has no rules. */
bool SelectKinds(const std::string& cls, const std::string& wrapper, VisionEncoderSpec& s) {
  const struct { const char* name; VisionEncoderKind kind;
  } kEncoders[] = {{"siglip_vision_model", VisionEncoderKind::kSiglip},
                   {"clip_vision_model", VisionEncoderKind::kClip},
                   {"pixtral", VisionEncoderKind::kPixtral},
                   {"llama4_vision_model", VisionEncoderKind::kLlama4},
                   {"qwen2_5_vl_vision", VisionEncoderKind::kQwen25Vl},
                   {"moonvit", VisionEncoderKind::kMoonVit},
                   {"qwen3_vl_vision", VisionEncoderKind::kQwen3Vl},
                   // Qwen3.5 / Qwen3.6: vllm qwen3_5.py builds qwen3_vl.py's Qwen3_VisionTransformer.
                   {"qwen3_5_vision", VisionEncoderKind::kQwen3Vl},
                   {"intern_vit_6b", VisionEncoderKind::kInternVit},
                   {"qwen2_vl_vision", VisionEncoderKind::kQwen2Vl},
                   {"gemma3n_vision", VisionEncoderKind::kTimm}};
  const struct { const char* name; VisionProjectorKind kind;
  } kProjectors[] = {{"gemma3", VisionProjectorKind::kGemma3},        {"mistral3", VisionProjectorKind::kMistral3},
                     {"llava_next", VisionProjectorKind::kLlavaNext}, {"llama4", VisionProjectorKind::kLlama4},
                     {"qwen2_5_vl", VisionProjectorKind::kQwen25Vl},  {"kimi_vl", VisionProjectorKind::kKimiVl},
                     {"llava", VisionProjectorKind::kLlava},          {"internvl_chat", VisionProjectorKind::kInternVl},
                     {"qwen3_vl", VisionProjectorKind::kQwen3Vl},     {"qwen3_vl_moe", VisionProjectorKind::kQwen3Vl},
                     {"qwen3_5", VisionProjectorKind::kQwen3Vl},      {"qwen3_5_moe", VisionProjectorKind::kQwen3Vl},
                     {"qwen2_vl", VisionProjectorKind::kQwen25Vl},  // Qwen2-VL: no projector beyond the tower's merger
                     {"gemma3n", VisionProjectorKind::kGemma3n}};
  bool encoder = false;
  bool projector = false;
  for (const auto& e : kEncoders) {
    if (cls != e.name) continue;
    s.encoder = e.kind;
    encoder = true;
  }
  for (const auto& p : kProjectors) {
    if (wrapper != p.name) continue;
    s.projector = p.kind;
    projector = true;
  }
  return encoder && projector;
}

/*! Qwen2-VL's MLP width: int(embed_dim * mlp_ratio) (vllm qwen2_vl.py Qwen2VisionBlock). */
int64_t MlpRatioWidth(const JsonValue& v, int64_t dim) {
  const JsonValue* r = v.Find("mlp_ratio");
  if (r == nullptr || !r->IsNumber() || !(r->AsNumber().value > 0.0 && r->AsNumber().value <= 64.0)) {
    throw InvalidArgument("vision_config.mlp_ratio",
                          "must be a number in (0, 64] (Qwen2-VL's MLP width over embed_dim)");
  }
  const double width = std::floor(static_cast<double>(dim) * r->AsNumber().value);
  RequirePositiveAtMost(static_cast<int64_t>(width), kMaxIntermediateSize, "vision_config.mlp_ratio",
                        "vllm_mem/base/limits.h: 100x beyond real vision towers");
  return static_cast<int64_t>(width);
}

/*! The sizes every tower has, and the image size of towers with learned position tables. */
void ReadTowerDimensions(const JsonValue& v, VisionEncoderSpec& s) {
  if (s.encoder == VisionEncoderKind::kQwen2Vl) {
    // Qwen2VLVisionConfig: embed_dim is the tower's width, hidden_size the merger's output.
    s.hidden_size = VisionInt(v, {"embed_dim"}, kMaxHiddenSize);
    s.intermediate_size = MlpRatioWidth(v, s.hidden_size);
  } else {
    s.hidden_size = VisionInt(v, {"hidden_size", "embed_dim"}, kMaxHiddenSize);
    s.intermediate_size = VisionInt(v, {"intermediate_size"}, kMaxIntermediateSize);
  }
  s.num_layers = VisionInt(v, {"num_hidden_layers", "depth"}, kMaxNumLayers);
  s.num_heads = VisionInt(v, {"num_attention_heads", "num_heads"}, kMaxAttentionHeads);
  s.patch_size = VisionInt(v, {"patch_size"}, kMaxHeadDim);
  s.num_channels = s.encoder == VisionEncoderKind::kMoonVit
                       ? 3
                       : VisionInt(v, {"num_channels", "in_channels", "in_chans"}, kMaxHeadDim);
  if (s.hidden_size % s.num_heads != 0) {
    throw InvalidArgument("vision_config.num_attention_heads", "must divide vision hidden_size (" +
                                                                   std::to_string(s.hidden_size) + "), got " +
                                                                   std::to_string(s.num_heads));
  }
  s.loaded_layers = s.num_layers;
  // Towers with a learned position table need image_size; Pixtral's is the processor's largest
  // image (the multimodal profile run's dummy item, vision_profile_item.h).
  const bool reads_image_size = s.encoder == VisionEncoderKind::kSiglip || s.encoder == VisionEncoderKind::kClip ||
                                s.encoder == VisionEncoderKind::kLlama4 || s.encoder == VisionEncoderKind::kInternVit ||
                                s.encoder == VisionEncoderKind::kPixtral;
  if (reads_image_size) {
    s.image_size = VisionInt(v, {"image_size"}, kMaxHiddenSize);
    if (s.image_size < s.patch_size) {
      throw InvalidArgument("vision_config.image_size", "must be at least patch_size (" + std::to_string(s.patch_size) +
                                                            "), got " + std::to_string(s.image_size));
    }
  }
}

/*! Llama-4's pixel_shuffle_ratio (Llama4VisionConfig default 0.5): vLLM's pixel_shuffle folds
 *  1 / ratio patches a side into one (mllama4.py pixel_shuffle reshapes by int(width * ratio)), and
 *  Mllama4ProcessingInfo.get_patch_per_chunk divides a tile's patches by round(1 / ratio^2). A
 *  ratio whose inverse is not a whole number folds no whole patches: refused. Read into
 *  downsample_ratio_inverse (per side), as InternVL's downsample_ratio. */
void ReadPixelShuffleRatio(const JsonValue& v, VisionEncoderSpec& s) {
  const JsonValue* x = v.Find("pixel_shuffle_ratio");
  if (x == nullptr || x->IsNull()) {
    s.downsample_ratio_inverse = 2;  // Llama4VisionConfig's 0.5 (config_defaults.json fills it first)
    return;
  }
  const double r = x->IsNumber() ? x->AsNumber().value : 0.0;
  const double inverse = r > 0.0 ? 1.0 / r : 0.0;
  if (!(r > 0.0 && r <= 1.0) || std::fabs(inverse - std::round(inverse)) > 1e-9) {
    throw InvalidArgument("vision_config.pixel_shuffle_ratio",
                          "must be 1 / n for a whole n (Llama-4's pixel shuffle folds n x n patches), got " +
                              (x->IsNumber() ? std::to_string(r) : x->KindName()));
  }
  s.downsample_ratio_inverse = static_cast<int64_t>(std::round(inverse));
}

/*! MoonViT's merge_kernel_size: two positive integers. */
void ReadMergeKernel(const JsonValue& v, VisionEncoderSpec& s) {
  const JsonValue* k = v.Find("merge_kernel_size");
  if (k == nullptr || !k->IsArray() || k->AsArray().size() != 2 || !k->AsArray()[0].IsNumber() ||
      !k->AsArray()[1].IsNumber() || !k->AsArray()[0].AsNumber().integer || !k->AsArray()[1].AsNumber().integer) {
    throw InvalidArgument("vision_config.merge_kernel_size", "must be a list of two positive integers");
  }
  s.merge_kernel_h = *k->AsArray()[0].AsNumber().integer;
  s.merge_kernel_w = *k->AsArray()[1].AsNumber().integer;
  RequirePositiveAtMost(s.merge_kernel_h, kMaxHeadDim, "vision_config.merge_kernel_size", "a kernel of patches");
  RequirePositiveAtMost(s.merge_kernel_w, kMaxHeadDim, "vision_config.merge_kernel_size", "a kernel of patches");
}

/*! The fields only one tower kind has. */
void ReadEncoderExtras(const JsonValue& config, const JsonValue& v, VisionEncoderSpec& s) {
  switch (s.encoder) {
    case VisionEncoderKind::kSiglip:
      s.use_head = VisionBool(v, "vision_use_head", true);
      break;
    case VisionEncoderKind::kQwen25Vl:
      s.temporal_patch_size = VisionInt(v, {"temporal_patch_size"}, kMaxHeadDim);
      s.spatial_merge_size = VisionInt(v, {"spatial_merge_size"}, kMaxHeadDim);
      s.out_hidden_size = VisionInt(v, {"out_hidden_size"}, kMaxHiddenSize);
      break;
    case VisionEncoderKind::kQwen2Vl:
      s.temporal_patch_size = VisionInt(v, {"temporal_patch_size"}, kMaxHeadDim);
      s.spatial_merge_size = VisionInt(v, {"spatial_merge_size"}, kMaxHeadDim);
      s.out_hidden_size = VisionInt(v, {"hidden_size"}, kMaxHiddenSize);
      break;
    case VisionEncoderKind::kQwen3Vl:
      s.temporal_patch_size = VisionInt(v, {"temporal_patch_size"}, kMaxHeadDim);
      s.spatial_merge_size = VisionInt(v, {"spatial_merge_size"}, kMaxHeadDim);
      s.out_hidden_size = VisionInt(v, {"out_hidden_size"}, kMaxHiddenSize);
      s.num_position_embeddings = VisionInt(v, {"num_position_embeddings"}, kMaxModelLenTokens);
      s.num_deepstack_mergers = DeepstackMergers(v, s.num_layers);
      break;
    case VisionEncoderKind::kInternVit:
      ReadInternVit(config, v, s);
      break;
    case VisionEncoderKind::kMoonVit:
      s.pos_emb_height = VisionInt(v, {"init_pos_emb_height"}, kMaxHeadDim);
      s.pos_emb_width = VisionInt(v, {"init_pos_emb_width"}, kMaxHeadDim);
      ReadMergeKernel(v, s);
      break;
    case VisionEncoderKind::kLlama4:
      // vLLM asserts whole patches per tile (Mllama4ProcessingInfo.get_patch_per_chunk), with its message.
      if (s.image_size % s.patch_size != 0) {
        throw InvalidArgument("vision_config.image_size",
                              "chunk size " + std::to_string(s.image_size) + " should be multiple of ");
      }
      ReadPixelShuffleRatio(v, s);
      s.vision_output_dim = VisionInt(v, {"vision_output_dim"}, kMaxHiddenSize);
      s.projector_input_dim = VisionInt(v, {"projector_input_dim"}, kMaxHiddenSize);
      s.projector_output_dim = VisionInt(v, {"projector_output_dim"}, kMaxHiddenSize);
      s.projector_bias = VisionBool(v, "multi_modal_projector_bias", false);
      break;
    default:
      break;
  }
}

/*! Mistral-3's spatial_merge_size. Absent or null: Mistral3Config's default, 2. Anything else
 *  must be a whole number: a 2.5 (or a string) once fell back to 2 here, sizing a projector
 *  vLLM cannot build. */
int64_t ReadSpatialMergeSize(const JsonValue& config) {
  const JsonValue* m = config.Find("spatial_merge_size");
  int64_t size = 2;
  if (m != nullptr && !m->IsNull()) {
    if (!m->IsNumber()) throw InvalidArgument("spatial_merge_size", "must be a positive integer, got " + m->KindName());
    const auto& n = m->AsNumber();
    if (n.integer) {
      size = *n.integer;
    } else if (n.value >= 1 && n.value <= static_cast<double>(kMaxHeadDim) && n.value == std::floor(n.value)) {
      size = static_cast<int64_t>(n.value);  // 2.0: integral, as model_spec.cc accepts
    } else {
      std::ostringstream got;
      got << n.value;
      throw InvalidArgument("spatial_merge_size", "must be a positive integer, got " + got.str());
    }
  }
  RequirePositiveAtMost(size, kMaxHeadDim, "spatial_merge_size", "a merge of patches per side");
  return size;
}

/*! LLaVA's vision_feature_select_strategy: "default" drops the CLS token's feature, "full" keeps
 *  it (vllm llava.py _apply_feature_select_strategy; LlavaConfig's default "default", filled by
 *  config_defaults.json). */
bool ReadDropsClsToken(const JsonValue& config) {
  const JsonValue* strategy = config.Find("vision_feature_select_strategy");
  if (strategy == nullptr || strategy->IsNull()) return true;
  if (!strategy->IsString() || (strategy->AsString() != "default" && strategy->AsString() != "full")) {
    throw InvalidArgument("vision_feature_select_strategy", "must be \"default\" or \"full\" (vLLM's llava.py), got " +
                                                                strategy->KindName());
  }
  return strategy->AsString() == "default";
}

/*! LLaVA-NeXT's image_grid_pinpoints: a non-empty list of [height, width] pairs of positive
 *  integers (LlavaNextConfig's default list is filled by config_defaults.json). */
std::vector<std::array<int64_t, 2>> ReadGridPinpoints(const JsonValue& config) {
  const JsonValue* list = config.Find("image_grid_pinpoints");
  std::vector<std::array<int64_t, 2>> out;
  if (list == nullptr || list->IsNull()) return out;
  const char* what = "must be a list of at most 256 [height, width] pairs of positive integers";
  if (!list->IsArray() || list->AsArray().size() > 256) throw InvalidArgument("image_grid_pinpoints", what);
  for (const JsonValue& pair : list->AsArray()) {
    if (!pair.IsArray() || pair.AsArray().size() != 2) throw InvalidArgument("image_grid_pinpoints", what);
    std::array<int64_t, 2> hw{};
    for (size_t i = 0; i < 2; ++i) {
      const JsonValue& x = pair.AsArray()[i];
      if (!x.IsNumber() || !x.AsNumber().integer) throw InvalidArgument("image_grid_pinpoints", what);
      hw[i] = *x.AsNumber().integer;
      RequirePositiveAtMost(hw[i], kMaxHiddenSize, "image_grid_pinpoints", "a canvas side in pixels");
    }
    out.push_back(hw);
  }
  return out;
}

/*! LLaVA-style projectors (Mistral-3, LLaVA, LLaVA-NeXT): feature layers, bias, Mistral-3's merge,
 *  LLaVA's feature strategy and LLaVA-NeXT's canvases. */
void ReadLlavaProjector(const JsonValue& config, VisionEncoderSpec& s) {
  ReadFeatureLayers(config, s);
  const JsonValue* bias = config.Find("multimodal_projector_bias");
  s.projector_bias = bias != nullptr && bias->IsBool() ? bias->AsBool() : s.projector != VisionProjectorKind::kMistral3;
  if (s.projector == VisionProjectorKind::kMistral3) {
    s.spatial_merge_size = ReadSpatialMergeSize(config);
    return;
  }
  s.feature_drops_cls = ReadDropsClsToken(config);
  if (s.projector == VisionProjectorKind::kLlavaNext) s.image_grid_pinpoints = ReadGridPinpoints(config);
}

/*! Gemma-3's mm_tokens_per_image (Gemma3Config default 256, filled by config_defaults.json): the
 *  projector average-pools the image's patches to this many embeddings (vision_profile_item.cc
 *  has no item when it exceeds the patch count). */
int64_t ReadTokensPerImage(const JsonValue& config) {
  const JsonValue* t = config.Find("mm_tokens_per_image");
  if (t == nullptr || !t->IsNumber() || !t->AsNumber().integer) {
    throw InvalidArgument("mm_tokens_per_image", "must be a positive integer (Gemma-3's pooled image tokens)");
  }
  RequirePositiveAtMost(*t->AsNumber().integer, kMaxModelLenTokens, "mm_tokens_per_image",
                        "image tokens fit in a prompt");
  return *t->AsNumber().integer;
}

/*! A timm tower (Gemma3nVisionConfig): vision_config.architecture names it; its parameters come from
 *  model_families.json timm_vision_towers, an architecture not listed is refused by name, and so is
 *  model_args (keyword arguments to timm.create_model that would change the blocks). hidden_size must
 *  be the tower's output width (vLLM reshapes the tower's output by it); vocab_size sizes the embedder. */
void ReadTimmTower(const JsonValue& v, VisionEncoderSpec& s) {
  const JsonValue* arch = v.Find("architecture");
  if (arch == nullptr || !arch->IsString()) {
    throw InvalidArgument(
        "vision_config.architecture",
        "must be a timm architecture name, got " + (arch == nullptr ? std::string("nothing") : arch->KindName()));
  }
  const JsonValue* tower = TimmVisionTower(arch->AsString());
  if (tower == nullptr) {
    throw Unsupported("vision_config.architecture " + EchoValue(arch->AsString().substr(0, 80)) +
                      ": no parameter count for this timm vision tower (model_families.json timm_vision_towers "
                      "lists mobilenetv5_300m_enc)");
  }
  if (const JsonValue* args = v.Find("model_args"); args != nullptr && !args->IsNull()) {
    throw Unsupported(
        "vision_config.model_args: keyword arguments to timm.create_model change the tower's "
        "blocks, which are counted for the architecture's defaults only");
  }
  s.architecture = arch->AsString();
  s.tower_parameters = *tower->Find("parameters")->AsNumber().integer;
  if (const JsonValue* block = tower->Find("largest_block")) {
    s.timm_block_stride = *block->Find("stride")->AsNumber().integer;
    s.timm_block_input_channels = *block->Find("input_channels")->AsNumber().integer;
    s.timm_block_expanded_channels = *block->Find("expanded_channels")->AsNumber().integer;
  }
  s.hidden_size = VisionInt(v, {"hidden_size"}, kMaxHiddenSize);
  const int64_t out_channels = *tower->Find("out_channels")->AsNumber().integer;
  if (s.hidden_size != out_channels) {
    throw InvalidArgument("vision_config.hidden_size", "must be " + s.architecture + "'s output width (" +
                                                           std::to_string(out_channels) + "), got " +
                                                           std::to_string(s.hidden_size));
  }
  s.embedder_vocab_size = VisionInt(v, {"vocab_size"}, kMaxVocabSize);
}

}  // namespace

const char* VisionEncoderKindName(VisionEncoderKind kind) {
  switch (kind) {
    case VisionEncoderKind::kSiglip: return "siglip";
    case VisionEncoderKind::kClip: return "clip";
    case VisionEncoderKind::kPixtral: return "pixtral";
    case VisionEncoderKind::kLlama4: return "llama4";
    case VisionEncoderKind::kQwen25Vl: return "qwen2_5_vl";
    case VisionEncoderKind::kMoonVit: return "moonvit";
    case VisionEncoderKind::kQwen3Vl: return "qwen3_vl";
    case VisionEncoderKind::kInternVit: return "intern_vit";
    case VisionEncoderKind::kTimm:
      return "timm";
    case VisionEncoderKind::kQwen2Vl:
      return "qwen2_vl";
  }
  return "unknown";  // unreachable: every enumerator is handled above
}

/*! The processor's bound (model_families.json vision_processors, checked when the file is read):
 *  smart_resize's max_pixels and min_pixels (and Qwen3-VL's video processor's video_max_pixels /
 *  video_min_pixels), a tiling processor's max_tiles (Llama-4's max_patches), Kimi-VL's in_token_limit, or
 *  a resizing processor's square image_size (Gemma-3n's). */
void ReadProcessorBound(const JsonValue& processor, VisionEncoderSpec& s) {
  if (const JsonValue* max_pixels = processor.Find("max_pixels")) s.max_pixels = *max_pixels->AsNumber().integer;
  if (const JsonValue* min_pixels = processor.Find("min_pixels")) s.min_pixels = *min_pixels->AsNumber().integer;
  if (const JsonValue* video_max = processor.Find("video_max_pixels")) {
    s.video_max_pixels = *video_max->AsNumber().integer;
  }
  if (const JsonValue* video_min = processor.Find("video_min_pixels")) {
    s.video_min_pixels = *video_min->AsNumber().integer;
  }
  if (const JsonValue* max_tiles = processor.Find("max_tiles")) s.max_dynamic_tiles = *max_tiles->AsNumber().integer;
  if (const JsonValue* limit = processor.Find("in_token_limit")) s.in_token_limit = *limit->AsNumber().integer;
  if (const JsonValue* side = processor.Find("image_size")) s.image_size = *side->AsNumber().integer;
}

std::optional<VisionEncoderSpec> ReadVisionEncoder(const JsonValue& config, int64_t text_hidden_size) {
  const std::string cls = VisionConfigClass(config);
  if (cls.empty()) return std::nullopt;
  const JsonValue& v = *config.Find("vision_config");
  const JsonValue* wrapper_type = config.Find("model_type");
  const std::string wrapper = (wrapper_type != nullptr && wrapper_type->IsString()) ? wrapper_type->AsString() : "";
  VisionEncoderSpec s;
  s.config_class = cls;
  // mllama and other towers or wrappers without rules: none, the multimodal caveat stays.
  if (!SelectKinds(cls, wrapper, s)) return std::nullopt;
  s.text_hidden_size = text_hidden_size;
  if (s.encoder == VisionEncoderKind::kTimm) {
    ReadTimmTower(v, s);
    // The processor's square (Gemma-3n's SiglipImageProcessorFast), from preprocessor_config.json.
    if (const JsonValue* processor = VisionProcessorTraits(cls)) ReadProcessorBound(*processor, s);
    VisionEncoderParameters(s);
    return s;
  }
  ReadTowerDimensions(v, s);
  ReadEncoderExtras(config, v, s);
  // The processor's largest image, from the published preprocessor_config.json (not in config.json).
  if (const JsonValue* processor = VisionProcessorTraits(cls)) ReadProcessorBound(*processor, s);
  if (s.projector == VisionProjectorKind::kMistral3 || s.projector == VisionProjectorKind::kLlavaNext ||
      s.projector == VisionProjectorKind::kLlava) {
    ReadLlavaProjector(config, s);
  }
  if (s.projector == VisionProjectorKind::kGemma3) s.tokens_per_image = ReadTokensPerImage(config);
  // Every tensor is computed once here, so a shape that overflows is refused while reading.
  VisionEncoderParameters(s);
  return s;
}

int64_t VisionEncoderParameters(const VisionEncoderSpec& spec) {
  int64_t n = 0;
  for (const Tensor& t : Describe(spec)) n = Add(n, Elements(t));
  return n;
}

int64_t MultimodalEmbedderParameters(int64_t width, int64_t vocab, int64_t text_width) {
  std::vector<Tensor> t;
  GemmaEmbedderTensors(width, vocab, text_width, t);
  int64_t n = 0;
  for (const Tensor& x : t) n = Add(n, Elements(x));
  return n;
}

int64_t MultimodalEmbedderElementsPerRank(int64_t width, int64_t vocab, int64_t text_width,
                                          int64_t tensor_parallel_size) {
  RequirePositive(tensor_parallel_size, "tensor_parallel_size");
  std::vector<Tensor> t;
  GemmaEmbedderTensors(width, vocab, text_width, t);
  int64_t n = 0;
  for (const Tensor& x : t) n = Add(n, ElementsPerRank(x, tensor_parallel_size));
  return n;
}

int64_t VisionEncoderBytesPerRank(const VisionEncoderSpec& spec, int64_t dtype_bytes, int64_t tensor_parallel_size) {
  RequirePositive(tensor_parallel_size, "tensor_parallel_size");
  int64_t n = 0;
  for (const Tensor& t : Describe(spec)) {
    if (t.loaded) n = Add(n, ElementsPerRank(t, tensor_parallel_size));
  }
  return Mul(n, dtype_bytes);
}

}  // namespace vllm_mem
