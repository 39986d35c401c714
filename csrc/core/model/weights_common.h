/*!
 * \file core/model/weights_common.h
 * \brief What every weight count shares, dense (weights.cc) and hybrid (hybrid_weights.cc):
 *        the checks before sizing, vLLM's TP split and vocab padding, and a rank's total.
 *        Internal to the model area.
 */
#ifndef VLLM_MEM_CORE_MODEL_WEIGHTS_COMMON_H_
#define VLLM_MEM_CORE_MODEL_WEIGHTS_COMMON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {

/*! \brief Where a tensor's bytes are reported in RankWeights. */
enum class Component { kEmbedding, kLmHead, kAttention, kMlp, kNorm };

/*! \brief One linear layer as held by one tensor-parallel rank (\p copies > 1 for stacked experts). */
struct Linear {
  Component component;
  int64_t in_features;
  int64_t out_features;
  bool bias = false;
  bool quantizable = true;        //!< false: routers and gates vLLM builds with quant_config=None
  bool expert = false;            //!< a routed-expert weight (what mxfp4 quantizes)
  bool dequantized_copy = false;  //!< MLA kv_b_proj: the MLA backend keeps a dequantized copy
  int64_t copies = 1;
  int64_t element_bytes = 0;  //!< unquantized bytes per element; 0: the model dtype (a float32 router: 4)
  /*! Its names under "model.layers.<i>.": vLLM's module, then after '|' the checkpoint's shards,
   *  comma-separated ("self_attn.qkv_proj|self_attn.q_proj,self_attn.k_proj,self_attn.v_proj"; one
   *  name when vLLM's equals the checkpoint's): what a list of unquantized modules is matched
   *  against. */
  const char* modules = "";
};

/*! \brief The checkpoint names (Llama / Qwen spellings) an MLP's two linears are matched under. */
struct MlpNames {
  const char* up;
  const char* down;
};
inline constexpr const char* kQkvModules = "self_attn.qkv_proj|self_attn.q_proj,self_attn.k_proj,self_attn.v_proj";
inline constexpr MlpNames kDenseMlpNames{"mlp.gate_up_proj|mlp.gate_proj,mlp.up_proj", "mlp.down_proj"};
inline constexpr MlpNames kExpertNames{"mlp.experts", "mlp.experts"};
inline constexpr MlpNames kSharedExpertNames{
    "mlp.shared_expert.gate_up_proj|mlp.shared_expert.gate_proj,mlp.shared_expert.up_proj",
    "mlp.shared_expert.down_proj"};
inline constexpr MlpNames kSharedExpertsNames{
    "mlp.shared_experts.gate_up_proj|mlp.shared_experts.gate_proj,mlp.shared_experts.up_proj",
    "mlp.shared_experts.down_proj"};

/*! \brief Weight (with bias) and quantization-overhead bytes of one linear on one rank. */
struct LinearBytes {
  int64_t weight = 0;
  int64_t overhead = 0;
};

/*! \brief Elements of \p l (weight, bias, times its copies), as the checkpoint counts them. */
int64_t LinearElements(const Linear& l);
/*! \brief The elements of every linear in \p linears. */
int64_t LinearElements(const std::vector<Linear>& linears);

/*! \brief \p l's bytes as \p q stores it (unquantized in the model dtype when \p q is empty or
 *  \p l is not quantizable); MXFP4 kernel layouts are weights.cc's own. */
LinearBytes StoredLinearBytes(const Linear& l, const std::optional<QuantizationSpec>& q, int64_t dtype_bytes);

/*! \brief Adds to \p r (\p times over) what WeightOptions::mp_linear_kernel changes in \p linears'
 *  bytes after loading, against StoredLinearBytes' checkpoint layout (mp_linear_layout.cc): to
 *  quantization_overhead_bytes (signed: Marlin frees unused qzeros / g_idx) and, for what no
 *  checkpoint tensor holds, to kernel_layout_bytes. Nothing for an empty kernel, methods other
 *  than 4-bit AWQ / GPTQ / compressed-tensors WNA16 and unquantized linears; each Marlin linear
 *  adds its workspace; MoE experts go through AddWna16MoeLayout. InvalidArgument (mp_linear_kernel)
 *  for a kernel other than "", "marlin", "machete", (gpu_sm_count) for a count below 1. */
void AddMpLinearLayout(RankWeights& r, const std::vector<Linear>& linears, const std::optional<QuantizationSpec>& q,
                       int64_t dtype_bytes, int64_t times, const WeightOptions& options);

/*! \brief Adds to \p r (\p times over) what vLLM's WNA16 MoE method (Marlin MoE, or moe_wna16
 *  where Marlin MoE cannot take the layer) changes in the routed experts of \p linears after
 *  loading, and Marlin MoE's workspace (moe_wna16_layout.cc); nothing without
 *  WeightOptions::mp_linear_kernel. Unsupported where the layout is not modelled. Called by
 *  AddMpLinearLayout. */
void AddWna16MoeLayout(RankWeights& r, const std::vector<Linear>& linears, const std::optional<QuantizationSpec>& q,
                       int64_t dtype_bytes, int64_t times, const WeightOptions& options);

/*! \brief The WNA16 checkpoint's method family, "awq", "gptq" or "compressed-tensors", which picks
 *  the layouts its linears and experts keep; "" when it has no WNA16 linears (mp_linear_layout.cc). */
std::string Wna16Family(const QuantizationSpec& q);

/*! \brief A Marlin workspace of \p blocks_per_sm int32 per SM as the caching allocator holds it
 *  (rounded up to its 512-byte blocks): marlin_utils.py marlin_make_workspace_new. */
int64_t MarlinWorkspaceBytes(int64_t sm_count, int64_t blocks_per_sm);

/*! \brief Whether \p q's list of unquantized modules covers the linear whose shards are \p modules
 *  (Linear::modules) in each of the decoder layers \p layers (bare names when empty);
 *  Unsupported when it covers only some of those layers or shards (unquantized_modules.cc). */
bool LeftUnquantized(const QuantizationSpec& q, const char* modules, const std::vector<int64_t>& layers);

/*! \brief Marks the linears \p q's list leaves unquantized in \p layers as not quantizable. */
void ApplyUnquantizedModules(std::vector<Linear>& linears, const std::optional<QuantizationSpec>& q,
                             const std::vector<int64_t>& layers);

/*! \brief The quantization in effect: the checkpoint's, or \p requested (vLLM's --quantization)
 *  where vLLM accepts it for this checkpoint. */
std::optional<QuantizationSpec> ResolveWeightQuantization(const ModelSpec& spec, const std::string& requested);

/*! \brief The checks vLLM makes before any weight is sized: the parallel layout, the query
 *  heads dividing over TP, and the spec's layer list matching its layer count. */
void CheckWeightLayout(const ModelSpec& spec, const WeightOptions& options);

/*! \brief a / tp, or InvalidArgument(tensor_parallel_size) where vLLM's divide() would assert. */
int64_t SplitEvenly(int64_t a, int64_t tp, const std::string& what);

/*! \brief Rows of the embedding / LM head on one rank: vocab padded to a multiple of 64
 *  (vLLM's DEFAULT_VOCAB_PADDING_SIZE), then split over TP. */
int64_t VocabRowsPerRank(int64_t vocab, int64_t tp);

/*! \brief Elements of one layer's q/k norms on one rank (0 without traits.qk_norm), by
 *  traits.qk_norm_shape; \p heads and \p kv_heads are the rank's, \p tp the TP size. */
int64_t QkNormElements(const ModelSpec& spec, int64_t heads, int64_t kv_heads, int64_t tp);

/*! \brief The rotated width of a head: MLA's qk_rope_head_dim, else head_dim x partial_rotary_factor. */
int64_t RotaryDim(const ModelSpec& spec);

/*! \brief The rotary cos/sin caches one rank holds (every rank builds its layers' rope), in
 *  \p dtype_bytes per element: the global table (traits.rope_table_rows when the table's rows differ
 *  from the length, as multimodal rope's 4 x), Gemma-3's local one, longrope's short cache and
 *  DeepSeek-V3.2's indexer table; the global table at min(rows, \p max_model_len) where the family
 *  caps it (MiniMax-Text-01; 0: uncapped). Dense and hybrid counts alike. */
int64_t RotaryCacheBytes(const ModelSpec& spec, int64_t dtype_bytes, int64_t max_model_len);

/*! \brief The vision tower's and projector's parameters (0 without one). */
int64_t VisionParameters(const ModelSpec& spec);

/*! \brief The tower's bytes on every pipeline rank (the wrappers build it whatever the rank): loaded
 *  unquantized in the model dtype, its linear layers split over TP (vision_encoder.h). */
int64_t VisionRankBytes(const ModelSpec& spec, int64_t dtype_bytes, int64_t tensor_parallel_size);

/*! The audio tower and its embedder (ModelSpec::audio, Gemma-3n): parameters, and one rank's bytes
 *  (every PP rank builds them); 0 without one. */
int64_t AudioParameters(const ModelSpec& spec);
int64_t AudioRankBytes(const ModelSpec& spec, int64_t dtype_bytes, int64_t tensor_parallel_size);

/*! Vision and audio towers together: what NumParameters adds to the language model. */
int64_t EncoderParameters(const ModelSpec& spec);

/*! \brief Sums \p rank's parts into its total and appends it, keeping the fullest rank. */
void AppendRank(RankWeights rank, WeightBreakdown& out);

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_MODEL_WEIGHTS_COMMON_H_
