/*!
 * \file vllm_mem/model/vision_encoder.h
 * \brief A multimodal checkpoint's vision tower and projector, read from vision_config (after
 *        transformers' class defaults), and their parameter count and bytes per GPU as vLLM
 *        loads them (core/model/vision_weights.cc).
 */
#ifndef VLLM_MEM_MODEL_VISION_ENCODER_H_
#define VLLM_MEM_MODEL_VISION_ENCODER_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vllm_mem {

/*! \brief The vision transformer family (the vision_config class). */
enum class VisionEncoderKind {
  kSiglip,     //!< siglip_vision_model (Gemma-3, granite-vision)
  kClip,       //!< clip_vision_model (LLaVA-NeXT's default tower)
  kPixtral,    //!< pixtral (Mistral-Small-3.1/3.2)
  kLlama4,     //!< llama4_vision_model (Llama-4 Scout / Maverick)
  kQwen25Vl,   //!< Qwen2.5-VL's windowed ViT with its patch merger
  kMoonVit,    //!< moonvit (Kimi-VL)
  kQwen3Vl,    //!< Qwen3-VL's ViT: learned position table, patch merger and DeepStack mergers
  kInternVit,  //!< intern_vit_6b (InternVL's InternViT-300M / 6B)
  kQwen2Vl,    //!< Qwen2-VL's ViT: LayerNorm blocks, QuickGELU MLP (embed_dim x mlp_ratio), patch merger
  /*! A timm tower vision_config names by architecture (Gemma-3n's MobileNet-V5): its blocks are timm
   *  code, not config fields, so its parameter count is data (model_families.json timm_vision_towers). */
  kTimm,
};

/*! \brief The projector between the tower and the language model (the wrapper's model_type). */
enum class VisionProjectorKind {
  kGemma3,     //!< mm_input_projection_weight + mm_soft_emb_norm
  kMistral3,   //!< RMSNorm, patch merger, linear_1 / linear_2
  kLlavaNext,  //!< linear_1 / linear_2 and image_newline
  kLlama4,     //!< pixel-shuffle MLP (vision_adapter) and linear_1
  kQwen25Vl,   //!< none beyond the tower's own merger (counted with the tower)
  kKimiVl,     //!< LayerNorm, linear_1 / linear_2 over merged patches
  kLlava,      //!< linear_1 / linear_2 (LLaVA-1.5: no image_newline)
  kQwen3Vl,    //!< none beyond the tower's own mergers (counted with the tower)
  kInternVl,   //!< mlp1: LayerNorm, Linear, Linear over pixel-shuffled patches
  kGemma3n,    //!< Gemma3nMultimodalEmbedder: hard-token rows, two norms, projection to the text width
};

/*! \brief What sizes the vision tower and projector. Counts are validated when read. */
struct VisionEncoderSpec {
  std::string config_class;  //!< the transformers class model_type ("siglip_vision_model", ...)
  VisionEncoderKind encoder = VisionEncoderKind::kSiglip;
  VisionProjectorKind projector = VisionProjectorKind::kGemma3;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;          //!< in the checkpoint
  int64_t loaded_layers = 0;       //!< built by vLLM: up to the deepest feature layer (LLaVA-style)
  int64_t num_heads = 0;
  int64_t num_channels = 3;
  int64_t patch_size = 0;
  int64_t image_size = 0;          //!< 0 where the config gives none (the processor's largest image)
  int64_t tokens_per_image = 0;    //!< Gemma-3 mm_tokens_per_image (the projector's pooled output)
  int64_t temporal_patch_size = 1; //!< Qwen2.5-VL's Conv3d depth
  int64_t spatial_merge_size = 1;  //!< Qwen2.5-VL merger / Mistral-3 patch merger (per side)
  int64_t merge_kernel_h = 1;      //!< MoonViT / Kimi-VL merge kernel
  int64_t merge_kernel_w = 1;
  int64_t pos_emb_height = 0;      //!< MoonViT's learned 2-D position grid
  int64_t pos_emb_width = 0;
  int64_t out_hidden_size = 0;     //!< Qwen2.5-VL merger output width
  bool use_head = false;           //!< SigLIP attention-pooling head
  bool post_layernorm_loaded = true;  //!< vLLM skips it for LLaVA-style towers (require_post_norm=False)
  int64_t num_feature_layers = 1;  //!< vision_feature_layer list length (LLaVA-NeXT, Mistral-3)
  bool projector_bias = false;
  int64_t text_hidden_size = 0;
  int64_t vision_output_dim = 0;   //!< Llama-4
  int64_t projector_input_dim = 0; //!< Llama-4 vision_adapter
  int64_t projector_output_dim = 0;
  int64_t num_position_embeddings = 0;  //!< Qwen3-VL's learned position table rows
  int64_t num_deepstack_mergers = 0;    //!< Qwen3-VL deepstack_visual_indexes length
  bool qk_normalization = false;        //!< InternViT-6B's q/k RMSNorms over all heads
  bool rms_norm = false;                //!< InternViT norm_type "rms_norm" (else LayerNorm with bias)
  bool qkv_bias = true;                 //!< InternViT qkv_bias
  int64_t downsample_ratio_inverse = 1; //!< InternVL pixel shuffle: 1 / downsample_ratio per side
  /*! The processor's largest image area in pixels (Qwen-VL's smart_resize max_pixels, from
   *  model_families.json vision_processors); 0 when the tower's processor takes no such bound. */
  int64_t max_pixels = 0;
  /*! Its smallest area (smart_resize min_pixels, from the same table): a smaller image is scaled up. */
  int64_t min_pixels = 0;
  /*! Qwen3-VL's video processor (Qwen3VLVideoProcessor size {longest_edge, shortest_edge}, from
   *  model_families.json vision_processors video_max_pixels / video_min_pixels): the bound on all the
   *  frames of one video together (frames x height x width); 0 when the processor has none (Qwen2-VL and
   *  Qwen2.5-VL resize a video's frames with the image processor's per-frame bound). */
  int64_t video_max_pixels = 0;
  int64_t video_min_pixels = 0;
  /*! LLaVA's vision_feature_select_strategy "default": the CLS token's feature is dropped (a CLIP
   *  tower's image features are its patches only); "full" keeps every token. */
  bool feature_drops_cls = false;
  /*! LLaVA-NeXT's image_grid_pinpoints, (height, width) each: the any-resolution canvases. */
  std::vector<std::array<int64_t, 2>> image_grid_pinpoints;
  /*! Tiling processors: at most this many image_size tiles an image (InternVL's max_dynamic_patch,
   *  Llama-4's max_patches; 0 when the processor does not tile), plus a thumbnail / global tile when
   *  use_thumbnail and the image is split. */
  int64_t max_dynamic_tiles = 0;
  int64_t min_dynamic_tiles = 1;
  bool use_thumbnail = false;
  /*! kTimm: vision_config.architecture, and the tower's parameters from model_families.json
   *  timm_vision_towers (the tower is a plain torch module: whole on every tensor-parallel rank). */
  std::string architecture;
  int64_t tower_parameters = 0;
  /*! kTimm: the block whose live set is the tower's largest in the profile run (model_families.json
   *  timm_vision_towers largest_block; 0 where the table gives none): its feature map is the image side
   *  / timm_block_stride, its input timm_block_input_channels wide, its expansion
   *  timm_block_expanded_channels wide. The image side is image_size, from vision_processors. */
  int64_t timm_block_stride = 0;
  int64_t timm_block_input_channels = 0;
  int64_t timm_block_expanded_channels = 0;
  /*! kGemma3n: the embedder's hard-token rows (vision_config.vocab_size). */
  int64_t embedder_vocab_size = 0;
  /*! Kimi-VL's image processor (KimiVLImageProcessor in_token_limit, from model_families.json
   *  vision_processors): the most patches an image keeps before it is scaled down; 0: no rule. */
  int64_t in_token_limit = 0;
};

/*! \brief Parameters of the tower and projector in the checkpoint (every layer, norms, heads). */
int64_t VisionEncoderParameters(const VisionEncoderSpec& spec);

/*! \brief Bytes one tensor-parallel rank holds after vLLM loads the tower and projector in
 *  \p dtype_bytes per element: only the layers vLLM builds, linear layers split as vLLM's
 *  parallel layers split them (encoder TP mode "weights", the default), the rest replicated.
 *  InvalidArgument(tensor_parallel_size) when a split does not divide, as vLLM's divide()
 *  asserts. */
int64_t VisionEncoderBytesPerRank(const VisionEncoderSpec& spec, int64_t dtype_bytes, int64_t tensor_parallel_size);

/*! \brief "siglip", "clip", "pixtral", "llama4", "qwen2_5_vl", "moonvit", "qwen3_vl", "intern_vit", "qwen2_vl",
 *  "timm". */
const char* VisionEncoderKindName(VisionEncoderKind kind);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_VISION_ENCODER_H_
