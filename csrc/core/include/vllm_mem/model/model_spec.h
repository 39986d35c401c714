/*!
 * \file vllm_mem/model/model_spec.h
 * \brief What the sizing code needs to know about a model, read from a Hugging Face
 *        config.json: dimensions, per-layer attention kind, MLA, MoE and quantization.
 *
 * Field resolution follows vLLM's ModelArchConfigConvertor: the text config of multimodal
 * models (text_config), the usual spellings of each field, head_dim when given else
 * hidden_size / num_attention_heads, and the total KV-head count from the first present of
 * n_head_kv, num_kv_heads, num_key_value_heads, multi_query_group_num, num_attention_groups.
 */
#ifndef VLLM_MEM_MODEL_MODEL_SPEC_H_
#define VLLM_MEM_MODEL_MODEL_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vllm_mem/base/json.h"
#include "vllm_mem/model/audio_encoder.h"
#include "vllm_mem/model/dtype.h"
#include "vllm_mem/model/hybrid_spec.h"
#include "vllm_mem/model/vision_encoder.h"

namespace vllm_mem {

/*! \brief How to read a config.json. */
struct ModelReadOptions {
  /*! Size a model_type without rules (or with a part not modelled) as a generic transformer,
   *  recording why in ModelSpec::generic_estimate_reason, instead of refusing it. */
  bool allow_unknown = false;
};

/*! \brief How one decoder layer attends, which decides its KV-cache spec. */
enum class AttentionKind {
  kFull,           //!< full causal attention over the whole context
  kSlidingWindow,  //!< attends to the last `sliding_window` tokens only
  kMla,            //!< multi-head latent attention (DeepSeek-V2/V3): one latent per token
  kNone,           //!< no KV cache (room for Mamba / linear-attention layers later)
};

/*! \brief One decoder layer. */
struct LayerSpec {
  AttentionKind attention = AttentionKind::kFull;
  int64_t sliding_window_tokens = 0;  //!< for kSlidingWindow
  /*! For kFull layers that attend within fixed chunks (Llama-4's attention_chunk_size on its
   *  RoPE layers): vLLM's ChunkedLocalAttentionSpec. 0: not chunked. */
  int64_t attention_chunk_size_tokens = 0;
  bool moe = false;                   //!< the layer's MLP is a mixture of experts
  /*! Hybrids (vllm_mem/model/hybrid_spec.h): the layer keeps a per-request recurrent state
   *  (Mamba / linear attention: vLLM's MambaSpec), alone or beside attention (Falcon-H1). */
  bool recurrent_state = false;
  bool mlp = true;                    //!< has an MLP / MoE block (Nemotron-H's M and * layers do not)
  /*! Attends with an earlier layer's keys and values (vLLM's kv_sharing_target_layer_name: Gemma-3n's
   *  last num_kv_shared_layers layers): the layer allocates no KV cache of its own. */
  bool kv_shared = false;
  /*! This layer's MLP width when the config lists one per layer and they differ (Gemma-3n
   *  MatFormer sub-models); 0: ModelSpec::intermediate_size. */
  int64_t intermediate_size = 0;
};

/*! \brief Multi-head latent attention dimensions (DeepSeek-V2/V3 family). */
struct MlaSpec {
  int64_t kv_lora_rank = 0;
  int64_t q_lora_rank = 0;  //!< 0: queries are projected directly (no q LoRA)
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  /*! DeepSeek-V3.2's sparse-attention indexer (model_families.json sparse_indexer): its query heads
   *  (index_n_heads) and their width (index_head_dim); 0: no indexer. Each MLA layer then holds the
   *  indexer's weights and a second, fp8 key cache (vLLM deepseek_v2.py Indexer, DeepseekV32IndexerCache). */
  int64_t index_n_heads = 0;
  int64_t index_head_dim = 0;
  int64_t index_topk = 0;  //!< tokens each query attends to (no memory of its own here)
};

/*! \brief Mixture-of-experts MLP dimensions. */
struct MoeSpec {
  int64_t num_experts = 0;               //!< routed experts
  int64_t num_experts_per_token = 0;     //!< top-k
  int64_t expert_intermediate_size = 0;  //!< per routed expert
  int64_t num_shared_experts = 0;        //!< DeepSeek n_shared_experts (each expert-sized)
  int64_t shared_expert_intermediate_size = 0;  //!< Qwen-MoE style single shared expert
  bool shared_expert_gate = false;       //!< Qwen-MoE: sigmoid gate on the shared expert
  bool router_bias = false;              //!< e_score_correction_bias (DeepSeek-V3) / gpt-oss
  /*! Bytes per element of e_score_correction_bias: 4 (float32: DeepSeek-V3, MiniMax-M2); 0: the model
   *  dtype (ERNIE-4.5-MoE's torch.empty under vLLM's default dtype). */
  int64_t score_bias_element_bytes = 4;
  /*! Bytes per element of the router's weight: 0: the model dtype; 4: float32 (GLM-4-MoE, MiniMax-M2). */
  int64_t router_element_bytes = 0;
};

/*! \brief A checkpoint's quantization_config, reduced to what changes weight bytes. */
struct QuantizationSpec {
  std::string method;     //!< "fp8", "awq", "gptq", "compressed-tensors", "bitsandbytes", ...
  int64_t weight_bits = 16;
  int64_t group_size = -1;    //!< -1: per-channel (no groups)
  bool zero_point = false;    //!< asymmetric 4-bit schemes store zero points
  bool per_tensor_scale = false;  //!< 8-bit: one scale per tensor instead of one per channel
  int64_t block_out = 0;      //!< fp8 weight_block_size [out, in] (DeepSeek-V3); 0: no blocks
  int64_t block_in = 0;
  bool desc_act = false;      //!< GPTQ act-order: g_idx is kept after loading
  /*! GPTQ `sym` (default true): the kernels read no zero points, though the checkpoint carries
   *  qzeros (zero_point); vLLM's gptq_marlin takes symmetric checkpoints only. */
  bool gptq_symmetric = true;
  bool experts_only = false;  //!< only MoE expert weights are quantized (mxfp4 in gpt-oss)
  /*! NVFP4 (compressed-tensors nvfp4-pack-quantized, ModelOpt quant_algo NVFP4): two e2m1 values a
   *  byte, one float8_e4m3 scale per 16 inputs, float32 global scales per shard. */
  bool nvfp4 = false;
  /*! The checkpoint's list of modules left unquantized, as written (compressed-tensors `ignore`,
   *  ModelOpt `exclude_modules`, AWQ `modules_to_not_convert`), matched as the method's vLLM config
   *  matches a layer's name (UnquantizedMatch). */
  std::vector<std::string> unquantized_modules;
};

/*! \brief The weights of a per-head q/k norm (ArchitectureTraits::qk_norm). */
enum class QkNormShape {
  kHeadDim,     //!< one head_dim weight each for q and k, shared by every head (Qwen3, Gemma-3)
  kPerHead,     //!< a head_dim weight per head, split over TP with the heads (Cohere's use_qk_norm)
  kProjection,  //!< one weight over the whole q / k projection, replicated on every rank (OLMo-2, OLMoE)
  kAllHeads,    //!< one weight over all heads' q / k, split evenly over TP (MiniMax-M2's MiniMaxText01RMSNormTP)
};

/*! \brief Architecture details that change the parameter count but not the KV cache. */
struct ArchitectureTraits {
  bool qkv_bias = false;          //!< biases on q, k, v projections (Qwen2, Phi)
  bool attention_out_bias = false;//!< bias on o_proj / dense (Phi)
  bool mlp_bias = false;          //!< biases on MLP projections (Phi, llama mlp_bias)
  bool gated_mlp = true;          //!< SwiGLU-style gate+up+down (3 matrices) vs up+down (2)
  bool norm_bias = false;         //!< LayerNorm with bias vs RMSNorm
  bool lm_head_bias = false;      //!< Phi
  bool qk_norm = false;           //!< q/k norms before rotary (Qwen3, Gemma3, OLMo-2, Cohere's use_qk_norm)
  QkNormShape qk_norm_shape = QkNormShape::kHeadDim;  //!< the shape of those norms' weights
  int64_t norms_per_layer = 2;    //!< input + post-attention (Gemma-2/3 have 4)
  bool parallel_block = false;    //!< attention and MLP share one input norm (Phi)
  bool attention_sinks = false;   //!< one learned sink logit per query head (gpt-oss)
  bool router_bias = false;       //!< the MoE router Linear has a bias (gpt-oss)
  bool attn_output_gate = false;  //!< q_proj also emits a sigmoid output gate (Qwen3-Next, Qwen3.5)
  double partial_rotary_factor = 1.0;  //!< fraction of head_dim that is rotated (Phi: 0.4-0.5)
  int64_t rope_cache_positions = 0;    //!< rows of vLLM's cos/sin cache; 0: no rotary embedding
  /*! Rows of that cache when the family's attention passes get_rope a length other than the
   *  config's (Cohere: model_max_length, which vLLM's max_model_len ignores as the larger of
   *  its length keys). 0: rope_cache_positions. */
  int64_t rope_table_rows = 0;
  /*! The family's model passes get_rope min(max_position_embeddings, max_model_len) (MiniMax-
   *  Text-01: 10,240,000 positions, a float32 table of 2.44 GiB at the config's length), so the
   *  table's rows follow the served length (WeightOptions::max_model_len). */
  bool rope_rows_capped_by_max_model_len = false;
  /*! Rows of a second cos/sin cache for sliding layers with their own rope (Gemma-3's
   *  rope_local_base_freq, unscaled): vLLM's get_rope keys caches by (head_size, rotary_dim,
   *  max_position, base, rope_scaling), so a different base or scaling is a second cache.
   *  0: none, or the same key as the global cache (shared). */
  int64_t local_rope_cache_positions = 0;
  /*! Rows of longrope's short-factor cache (Phi-3's original_max_position_embeddings): vLLM's
   *  Phi3LongRoPEScaledRotaryEmbedding concatenates it before the long cache of
   *  rope_cache_positions rows in one buffer. 0: no longrope. */
  int64_t short_rope_cache_positions = 0;
  /*! Rows of a learned absolute position table (OPT: max_position_embeddings + 2), replicated on
   *  every tensor-parallel rank. 0: none. */
  int64_t learned_position_rows = 0;
  /*! Width of the token embedding and LM head when it differs from hidden_size (OPT's
   *  word_embed_proj_dim), with replicated project_in / project_out between the two. 0: hidden_size. */
  int64_t embed_dim = 0;
  bool final_norm = true;  //!< the norm after the last layer (OPT's post-LN variants have none)
  /*! The embedding side (token and position tables, projections, final norm, an untied LM head)
   *  is built on every pipeline rank, not only the first / last (vLLM's OPTDecoder). */
  bool embeddings_on_every_pp_rank = false;
  /*! Gemma-3n's per-layer embeddings (vLLM gemma3n.py): a vocab-parallel table of
   *  per_layer_input_vocab_size rows x (num_layers x per_layer_input_size), the column-parallel
   *  per_layer_model_projection and its norm, and in each layer the replicated per_layer_input_gate /
   *  per_layer_projection. 0: none. */
  int64_t per_layer_input_size = 0;
  int64_t per_layer_input_vocab_size = 0;
  /*! Gemma-3n's AltUp streams (altup_num_inputs): each layer's router and coefficient matrices, the
   *  model's altup_num_inputs - 1 projections in and out. 0: none. */
  int64_t altup_num_inputs = 0;
  int64_t laurel_rank = 0;  //!< Gemma-3n's LAuReL low-rank residual per layer; 0: none
  /*! The model class allocates a buffer of max_num_batched_tokens x num_layers x per_layer_input_size
   *  in the model dtype while it is built (vLLM gemma3n_mm.py per_layer_embeddings). */
  bool per_layer_embedding_buffer = false;
};

/*! \brief A model as the sizing code sees it. */
struct ModelSpec {
  std::string model_type;
  std::vector<std::string> architectures;
  DType dtype = DType::kBFloat16;  //!< checkpoint dtype (torch_dtype / dtype)

  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_kv_heads = 0;   //!< total, before tensor parallelism
  int64_t head_dim = 0;       //!< attention head size (q/k/v) for non-MLA layers
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;  //!< 0 when the config does not say
  bool tie_word_embeddings = false;

  std::optional<MlaSpec> mla;
  std::optional<MoeSpec> moe;
  std::optional<QuantizationSpec> quantization;
  ArchitectureTraits traits;
  std::vector<LayerSpec> layers;  //!< num_layers entries
  /*! Set for hybrid state-space / linear-attention models (hybrid_spec.h): the recurrent
   *  mixer's dimensions; layers[i].recurrent_state says which layers keep its state. */
  std::optional<HybridSpec> hybrid;
  /*! The vision tower and projector of a multimodal checkpoint with rules for them
   *  (vision_encoder.h); nullopt for a text model, or when the tower is a caveat instead. */
  std::optional<VisionEncoderSpec> vision;
  /*! The audio tower and its embedder (audio_encoder.h: Gemma-3n's); nullopt for a model without one,
   *  or when it is a caveat instead. */
  std::optional<AudioEncoderSpec> audio;
  /*! The checkpoint's KV-cache quantization (quantization_config.kv_cache_scheme): "fp8" when
   *  the checkpoint ships KV scales, so vLLM's "auto" KV dtype becomes fp8; "" otherwise. */
  std::string checkpoint_kv_cache_dtype;

  /*! Empty when the core has exact rules for this model; otherwise why the figures are a
   *  generic transformer estimate (read with ModelReadOptions::allow_unknown). Every report
   *  of such a spec says so. */
  std::string generic_estimate_reason;
  /*! What the figures leave out although the family is supported (e.g. a multimodal
   *  checkpoint's vision tower); every report lists them. */
  std::vector<std::string> caveats;

  /*! \brief Parses a config.json document. InvalidArgument naming the field when a required
   *  field is missing, not a positive integer, or inconsistent; InvalidArgument (model_type)
   *  for a family with no rules and Unsupported for one whose memory is known not to be
   *  modelled yet (model_family.h), unless \p options.allow_unknown asks for a labelled
   *  generic estimate. */
  static ModelSpec FromHfConfig(const JsonValue& config, const ModelReadOptions& options = {});
  /*! \brief Same, from JSON text. */
  static ModelSpec FromHfConfigText(std::string_view json_text, const ModelReadOptions& options = {});
  /*! \brief True when the figures come from rules for this model (no generic estimate). */
  bool HasExactRules() const { return generic_estimate_reason.empty(); }

  bool UsesMla() const { return mla.has_value(); }
  /*! \brief Number of layers of each attention kind. */
  int64_t CountLayers(AttentionKind kind) const;
};

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_MODEL_SPEC_H_
