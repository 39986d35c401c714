/*!
 * \file vllm_mem/model/hybrid_spec.h
 * \brief Hybrid state-space / linear-attention models (Jamba, Bamba, Granite-4.0-H, Nemotron-H,
 *        Falcon-H1, Qwen3-Next, Qwen3.5, Mamba-2): which layers keep a per-request recurrent
 *        state and the dimensions of that state, read from config.json the way each vLLM model
 *        file reads them (get_mamba_state_shape_from_config and the layer-type rules of
 *        vllm/model_executor/models/{jamba,bamba,granitemoehybrid,nemotron_h,falcon_h1,
 *        qwen3_next,qwen3_5,mamba2}.py). The state shapes themselves are the kv_cache area's
 *        (vllm_mem/kv_cache/mamba_state.h), the weights hybrid_weights.cc's.
 */
#ifndef VLLM_MEM_MODEL_HYBRID_SPEC_H_
#define VLLM_MEM_MODEL_HYBRID_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "vllm_mem/base/json.h"

namespace vllm_mem {

struct ModelSpec;
struct WeightOptions;
struct WeightBreakdown;

/*! \brief Which recurrent mixer a hybrid's state layers run (which MambaStateShapeCalculator
 *  method vLLM sizes their state with). */
enum class RecurrentMixerKind {
  kMamba1,         //!< MambaMixer (Jamba): conv (d_conv-1, d_inner), ssm (d_inner, d_state)
  kMamba2,         //!< MambaMixer2: conv (d_conv-1+spec, (I + 2*G*N)/tp), ssm (H/tp, P, N)
  kGatedDeltaNet,  //!< Qwen3-Next / Qwen3.5 GDN: conv (k-1+spec, (2*Hk*Dk + Hv*Dv)/tp), ssm (Hv/tp, Dv, Dk)
  kShortConv,      //!< LFM2's ShortConv: conv (L_cache-1, conv_dim/tp) only, no SSM state
  /*! Kimi-Linear's Kimi Delta Attention: conv (k-1+spec, 3*H*D/tp) in the conv dtype, recurrent
   *  (H/tp, D, D) always float32 (kda_state_dtype). Its layers are otherwise DeepSeek-shaped (MLA
   *  beside it, MoE), so weights.cc counts them with the KDA mixer in place of attention. */
  kKimiDelta,
  /*! MiniMax-Text-01 / MiniMax-M1's lightning (linear) attention: one (H/tp, D, D) state per layer
   *  (MambaStateShapeCalculator.linear_attention_state_shape) in linear_attention_state_dtype (the
   *  --mamba-cache-dtype, the model dtype under auto); no conv state. Its layers are otherwise
   *  Mixtral-shaped (full attention beside it, MoE), so weights.cc counts them. */
  kLightning,
};

/*! \brief The recurrent mixer's dimensions (the fields a kind does not use stay 0). */
struct HybridSpec {
  RecurrentMixerKind kind = RecurrentMixerKind::kMamba2;
  int64_t intermediate_size = 0;  //!< Mamba d_inner (mamba_expand * hidden, or heads * head_dim)
  int64_t state_size = 0;         //!< d_state / ssm_state_size (N)
  int64_t conv_kernel = 0;        //!< d_conv / conv_kernel / linear_conv_kernel_dim
  int64_t n_groups = 0;           //!< Mamba-2 groups (G), before vLLM's TP replication
  int64_t num_heads = 0;          //!< Mamba-2 heads (H) / GDN value heads (Hv) / KDA heads
  int64_t head_dim = 0;           //!< Mamba-2 head dim (P) / GDN value head dim (Dv) / KDA head dim
  int64_t num_k_heads = 0;        //!< GDN key heads (Hk)
  int64_t head_k_dim = 0;         //!< GDN key head dim (Dk)
  int64_t chunk_size = 0;         //!< Mamba-2 SSD chunk_size (mamba_cache_mode "all" aligns to it); 0: none
  bool conv_bias = true;          //!< the conv1d has a bias (use_conv_bias / mamba_conv_bias)
  bool proj_bias = false;         //!< in/out projections have biases (use_bias / mamba_proj_bias)
  bool gated_norm = true;         //!< Mamba-2's gated RMSNorm over I (Falcon-H1: mamba_rms_norm)
  bool dt_norms = false;          //!< Mamba-1's RMSNorms on dt, B and C (Jamba)
  /*! vLLM's refusal of --mamba-cache-mode all for this family when it builds the model
   *  (Qwen3.5); "" when the family accepts it. From model_families.json. */
  std::string cache_mode_all_refusal;
  /*! The SSM-state dtype the checkpoint asks vLLM for: Nemotron-H's mamba_ssm_cache_dtype,
   *  Qwen3.5's text_config.mamba_ssm_dtype. "" when the config says nothing. */
  std::string config_ssm_cache_dtype;
  /*! Nemotron-H: vLLM's NemotronHForCausalLMConfig replaces --mamba-ssm-cache-dtype auto with
   *  the config's value (vllm/model_executor/models/config.py). */
  bool ssm_dtype_from_config = false;
  /*! Zamba2 (zamba2.py): num_mem_blocks shared transformer blocks (attention over the
   *  concatenated 2 * hidden input, gated MLP, two norms) whose weights are held once and reused
   *  by the hybrid layers in turn; each hybrid position has its own LoRA adapters of adapter_rank
   *  (the MLP's always, q/k/v's with use_shared_attention_adapter) and its own KV cache. 0: none. */
  int64_t shared_blocks = 0;
  int64_t adapter_rank = 0;
  bool shared_attention_adapters = false;
  int64_t num_state_layers = 0;   //!< layers that keep a recurrent state
  int64_t num_attention_layers = 0;  //!< layers that keep a KV cache
};

/*! \brief True for the model_types hybrid_config.cc reads (a "hybrid_layers" trait in
 *  model_families.json). */
bool IsHybridModelType(std::string_view model_type);

/*! \brief Reads the hybrid's layer types and recurrent dimensions into \p spec (spec.hybrid and
 *  every spec.layers entry: attention kind, recurrent_state, moe). \p text is the language
 *  model's config object (text_config when nested), \p top the whole document. InvalidArgument
 *  naming the field for a missing or inconsistent value. Called by ModelSpec::FromHfConfig in
 *  place of the attention-pattern rules for the model_types of IsHybridModelType. */
void ReadHybridLayers(ModelSpec& spec, const JsonValue& text, const JsonValue& top);

/*! \brief ComputeWeights for a hybrid model (spec.hybrid set): embeddings, each layer's mixer
 *  (attention or recurrent), MLP / MoE and norms as vLLM's model file allocates them per rank.
 *  weights.cc calls it when spec.hybrid is set. */
WeightBreakdown ComputeHybridWeights(const ModelSpec& spec, const WeightOptions& options);

/*! \brief The checkpoint's parameter count for a hybrid model. */
int64_t HybridNumParameters(const ModelSpec& spec);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MODEL_HYBRID_SPEC_H_
