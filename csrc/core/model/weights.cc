/*!
 * \file core/model/weights.cc
 * \brief Parameter counts and weight bytes per GPU, tensor by tensor as vLLM's model code
 *        allocates them: vocab-parallel embeddings padded to 64 rows, QKVParallelLinear with KV
 *        heads replicated when tp exceeds them, column/row-parallel MLPs and experts, replicated
 *        norms and routers, the rotary cos/sin cache, and the storage of each quantization
 *        method (packed weights, scales, zero points).
 */
#include "vllm_mem/model/weights.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "core/model/config_readers.h"
#include "core/model/parallelism.h"
#include "core/model/weights_common.h"
#include "vllm_mem/model/audio_encoder.h"
#include "vllm_mem/model/hybrid_spec.h"
#include "vllm_mem/model/vision_encoder.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "weights";  // overflow errors name the computation
/*! vLLM's DEFAULT_VOCAB_PADDING_SIZE: embedding and LM-head rows are padded to a multiple. */
constexpr int64_t kVocabPadding = 64;
/*! Scales of 8-bit and bitsandbytes schemes are float32. */
constexpr int64_t kFloat32Bytes = 4;
/*! bitsandbytes 4-bit: one float32 absmax per 64 weights. */
constexpr int64_t kBnbBlock = 64;

/*! A 1-D parameter (norm weight / bias, attention sinks, score-correction bias). */
struct Vector {
  Component component;
  int64_t elements;
  int64_t element_bytes = 0;  //!< 0: the model dtype
};

struct Tensors {
  std::vector<Linear> linears;
  std::vector<Vector> vectors;
};

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kField); }
int64_t Add(int64_t a, int64_t b) { return CheckedAdd(a, b, kField); }

/*! DeepSeek-V3.2's Indexer as vLLM 0.19 holds it (deepseek_v2.py), whole on every TP rank: wq_b from
 *  the query LoRA, quantized with the checkpoint; wk and weights_proj fused into one wk_weights_proj
 *  built with quant_config=None (an fp8 wk is upcast to the model dtype when loaded, PR #38684);
 *  k_norm a LayerNorm whose weight and bias are float32 (layers/layernorm.py LayerNorm). */
void DescribeSparseIndexer(const MlaSpec& m, int64_t hidden, Tensors& out) {
  constexpr int64_t kFloat32LayerNormBytes = 4;
  out.linears.push_back({Component::kAttention, m.q_lora_rank, Mul(m.index_n_heads, m.index_head_dim)});  // wq_b
  Linear wk_weights_proj{Component::kAttention, hidden, Add(m.index_head_dim, m.index_n_heads)};
  wk_weights_proj.quantizable = false;
  out.linears.push_back(wk_weights_proj);
  out.vectors.push_back({Component::kAttention, Mul(2, m.index_head_dim), kFloat32LayerNormBytes});  // k_norm
}

/*! Attention projections of one layer on one rank. */
void DescribeAttention(const ModelSpec& spec, int64_t tp, Tensors& out) {
  const auto& t = spec.traits;
  const int64_t h = spec.hidden_size;
  const int64_t heads = AttentionHeadsPerRank(spec.num_attention_heads, tp);
  auto& lin = out.linears;
  if (spec.mla) {
    // DeepseekV2MLAAttention: the low-rank down projections are replicated, the up
    // projections column-parallel over heads, o_proj row-parallel.
    const MlaSpec& m = *spec.mla;
    const int64_t qk_head = m.qk_nope_head_dim + m.qk_rope_head_dim;
    if (m.q_lora_rank > 0) {
      lin.push_back({Component::kAttention, h, m.q_lora_rank, false, true, false, false, 1, 0, "self_attn.q_a_proj"});
      out.vectors.push_back({Component::kAttention, m.q_lora_rank});               // q_a_layernorm
      lin.push_back({Component::kAttention, m.q_lora_rank, Mul(heads, qk_head), false, true, false, false, 1, 0,
                     "self_attn.q_b_proj"});
    } else {
      lin.push_back({Component::kAttention, h, Mul(heads, qk_head), false, true, false, false, 1, 0, "self_attn.q_proj"});
    }
    lin.push_back({Component::kAttention, h, m.kv_lora_rank + m.qk_rope_head_dim, false, true, false, false, 1, 0,
                   "self_attn.kv_a_proj_with_mqa"});
    out.vectors.push_back({Component::kAttention, m.kv_lora_rank});                  // kv_a_layernorm
    Linear kv_b{Component::kAttention, m.kv_lora_rank, Mul(heads, m.qk_nope_head_dim + m.v_head_dim)};
    kv_b.dequantized_copy = true;
    kv_b.modules = "self_attn.kv_b_proj";
    lin.push_back(kv_b);
    lin.push_back({Component::kAttention, Mul(heads, m.v_head_dim), h, t.attention_out_bias, true, false, false, 1, 0,
                   "self_attn.o_proj"});
    if (m.index_head_dim > 0) DescribeSparseIndexer(m, h, out);
    return;
  }
  // QKVParallelLinear: KV heads are split, or replicated one per rank when tp > KV heads.
  const int64_t kv_heads = KvHeadsPerRank(spec.num_kv_heads, tp);
  lin.push_back({Component::kAttention, h, Mul(heads + 2 * kv_heads, spec.head_dim), t.qkv_bias, true, false, false, 1,
                 0, kQkvModules});
  // RowParallelLinear keeps the full bias on every rank.
  lin.push_back({Component::kAttention, Mul(heads, spec.head_dim), h, t.attention_out_bias, true, false, false, 1, 0,
                 "self_attn.o_proj"});
  if (t.qk_norm) out.vectors.push_back({Component::kAttention, QkNormElements(spec, heads, kv_heads, tp)});
  if (t.attention_sinks) out.vectors.push_back({Component::kAttention, heads});
}

/*! How far vLLM pads routed-expert weights when it creates them (mxfp4 kernels); 1: none. */
struct ExpertPadding {
  int64_t intermediate = 1;  //!< per-rank intermediate size rounded up to a multiple
  int64_t hidden = 1;
};

int64_t RoundUp(int64_t a, int64_t multiple) { return Mul(CeilDiv(a, multiple), multiple); }

/*! What vLLM 0.19 holds for the MXFP4 experts of one backend once process_weights_after_loading
 *  has run, i.e. when it prints "Model loading took" (fused_moe/oracle/mxfp4.py
 *  convert_to_mxfp4_moe_kernel_format; quantization/mxfp4.py Mxfp4MoEMethod._setup_kernel). */
struct Mxfp4Layout {
  ExpertPadding creation;          //!< mxfp4_round_up_hidden_size_and_intermediate_size
  int64_t bias_element_bytes = 0;  //!< 4: the backend replaces the bf16 expert biases by float32 ones
  /*! triton_kernels' Hopper layouts (third_party/triton_kernels in the 0.19 wheel,
   *  tensor_details/layout_details/hopper_{value,scale}.py): the values are replaced by a copy
   *  whose (K/2, N) storage is padded to multiples of 64 bytes; the scales get a swizzled copy
   *  with rows (N) padded to 2 * num_warps(8) * 2 * 8 = 256 and columns to 2, while the loaded
   *  w13/w2_weight_scale parameters stay registered on the layer. */
  bool hopper_swizzle = false;
  bool scale_copy = false;  //!< a same-size swizzled copy of the scales (ROCm gfx950 CDNA4MXScaleLayout)
  int64_t value_align = 64;  //!< WeightOptions::mxfp4_hopper_value_align
};

/*! A gated (gate_up + down) or plain (fc1 + fc2) MLP of \p intermediate, TP-split. */
void DescribeMlp(const ModelSpec& spec, int64_t intermediate, int64_t tp, int64_t copies, bool expert,
                 const char* what, const MlpNames& names, Tensors& out, const ExpertPadding& pad = {}) {
  const auto& t = spec.traits;
  const int64_t per_rank = RoundUp(SplitEvenly(intermediate, tp, what), pad.intermediate);
  const int64_t hidden = RoundUp(spec.hidden_size, pad.hidden);
  const int64_t up = t.gated_mlp ? 2 * per_rank : per_rank;
  Linear up_proj{Component::kMlp, hidden, up, t.mlp_bias};
  Linear down_proj{Component::kMlp, per_rank, hidden, t.mlp_bias};
  up_proj.copies = down_proj.copies = copies;
  up_proj.expert = down_proj.expert = expert;
  up_proj.modules = names.up;
  down_proj.modules = names.down;
  out.linears.push_back(up_proj);
  out.linears.push_back(down_proj);
}

void DescribeMoe(const ModelSpec& spec, int64_t tp, Tensors& out, const ExpertPadding& pad) {
  const MoeSpec& moe = *spec.moe;
  // FusedMoE without expert parallelism: every rank holds every expert, each TP-split.
  DescribeMlp(spec, moe.expert_intermediate_size, tp, moe.num_experts, true, "moe_intermediate_size", kExpertNames, out,
              pad);
  Linear router{Component::kMlp, spec.hidden_size, moe.num_experts, spec.traits.router_bias};
  router.quantizable = false;  // vLLM builds the gate with quant_config=None
  router.modules = "mlp.gate";
  // GLM-4-MoE and MiniMax-M2 build their gate in float32 (model_families.json router_dtype).
  router.element_bytes = moe.router_element_bytes;
  out.linears.push_back(router);
  if (moe.router_bias && !spec.traits.router_bias) {
    // e_score_correction_bias: float32 in DeepSeek-V3 / GLM-4-MoE / MiniMax-M2, the model dtype in ERNIE-4.5-MoE.
    out.vectors.push_back({Component::kMlp, moe.num_experts, moe.score_bias_element_bytes});
  }
  if (moe.num_shared_experts > 0) {
    DescribeMlp(spec, Mul(moe.num_shared_experts, moe.expert_intermediate_size), tp, 1, false,
                "n_shared_experts * moe_intermediate_size", kSharedExpertsNames, out);
  }
  if (moe.shared_expert_intermediate_size > 0) {
    DescribeMlp(spec, moe.shared_expert_intermediate_size, tp, 1, false, "shared_expert_intermediate_size",
                kSharedExpertNames, out);
    if (moe.shared_expert_gate) {
      Linear gate{Component::kMlp, spec.hidden_size, 1};
      gate.quantizable = false;  // a plain torch.nn.Linear in vLLM's Qwen2-MoE
      gate.modules = "mlp.shared_expert_gate";
      out.linears.push_back(gate);
    }
  }
}

/*! Kimi-Linear's KimiDeltaAttention on one rank (vllm layers/kda.py): q/k/v, f_b, g_b and b column-
 *  parallel, f_a and g_a replicated, o_proj row-parallel; the three short-conv weights
 *  (ColumnParallelLinear with params_dtype float32 and no quant_config), dt_bias and A_log in float32;
 *  the gated output RMSNorm over one head (replicated). */
void DescribeKimiDelta(const ModelSpec& spec, int64_t tp, Tensors& out) {
  const HybridSpec& k = *spec.hybrid;
  const int64_t h = spec.hidden_size;
  const int64_t heads = SplitEvenly(k.num_heads, tp, "linear_attn_config.num_heads");
  const int64_t proj = Mul(heads, k.head_dim);  // head_dim * num_heads / tp
  constexpr int64_t kFloat32 = 4;
  auto& lin = out.linears;
  for (int i = 0; i < 3; ++i) lin.push_back({Component::kAttention, h, proj});  // q_proj, k_proj, v_proj
  lin.push_back({Component::kAttention, h, k.head_dim});                         // f_a_proj
  lin.push_back({Component::kAttention, k.head_dim, proj});                      // f_b_proj
  lin.push_back({Component::kAttention, h, heads});                              // b_proj
  lin.push_back({Component::kAttention, h, k.head_dim});                         // g_a_proj
  lin.push_back({Component::kAttention, k.head_dim, proj});                      // g_b_proj
  lin.push_back({Component::kAttention, proj, h});                               // o_proj
  Linear conv{Component::kAttention, k.conv_kernel, proj};                       // q/k/v_conv1d
  conv.quantizable = false;
  conv.copies = 3;
  conv.element_bytes = kFloat32;
  lin.push_back(conv);
  out.vectors.push_back({Component::kAttention, proj, kFloat32});   // dt_bias
  out.vectors.push_back({Component::kAttention, heads, kFloat32});  // A_log
  out.vectors.push_back({Component::kAttention, k.head_dim});       // o_norm
}

/*! MiniMax-Text-01's MiniMaxText01LinearAttention on one rank (vllm layers/mamba/linear_attn.py):
 *  qkv_proj (3 x heads x head_dim) and output_gate column-parallel, out_proj row-parallel, all without
 *  bias and with the quant_config; its MiniMaxText01RMSNormTP holds heads x head_dim / tp. */
void DescribeLightning(const ModelSpec& spec, int64_t tp, Tensors& out) {
  const HybridSpec& k = *spec.hybrid;
  const int64_t h = spec.hidden_size;
  const int64_t inner = Mul(SplitEvenly(k.num_heads, tp, "num_attention_heads"), k.head_dim);
  out.linears.push_back({Component::kAttention, h, Mul(3, inner)});  // qkv_proj
  out.linears.push_back({Component::kAttention, h, inner});          // output_gate
  out.linears.push_back({Component::kAttention, inner, h});          // out_proj
  out.vectors.push_back({Component::kAttention, inner});             // norm
}

/*! Gemma-3n's additions to a decoder layer (vLLM gemma3n.py Gemma3nDecoderLayer), reported with the
 *  MLP (RankWeights has no slot of their own): AltUp's replicated correction_coefs (n x n),
 *  prediction_coefs (n x n^2) and modality_router (hidden x n), its router_norm and float32
 *  correct_output_scale; LAuReL's column-parallel linear_left and row-parallel linear_right of
 *  laurel_rank and its post_laurel_norm; the replicated per_layer_input_gate and
 *  per_layer_projection (post_per_layer_input_norm is one of the family's norms_per_layer). */
void DescribeLayerExtras(const ModelSpec& spec, int64_t tp, Tensors& out) {
  constexpr int64_t kFloat32Bytes = 4;
  const ArchitectureTraits& t = spec.traits;
  const int64_t h = spec.hidden_size;
  auto& lin = out.linears;
  if (t.altup_num_inputs > 0) {
    const int64_t n = t.altup_num_inputs;
    lin.push_back({Component::kMlp, n, n, false, true, false, false, 1, 0, "altup.correction_coefs"});
    lin.push_back({Component::kMlp, n, Mul(n, n), false, true, false, false, 1, 0, "altup.prediction_coefs"});
    lin.push_back({Component::kMlp, h, n, false, true, false, false, 1, 0, "altup.modality_router"});
    out.vectors.push_back({Component::kNorm, h});                 // altup.router_norm
    out.vectors.push_back({Component::kNorm, h, kFloat32Bytes});  // altup.correct_output_scale
  }
  if (t.laurel_rank > 0) {
    const int64_t rank = SplitEvenly(t.laurel_rank, tp, "laurel_rank");
    lin.push_back({Component::kMlp, h, rank, false, true, false, false, 1, 0, "laurel.linear_left"});
    lin.push_back({Component::kMlp, rank, h, false, true, false, false, 1, 0, "laurel.linear_right"});
    out.vectors.push_back({Component::kNorm, h});  // laurel.post_laurel_norm
  }
  if (t.per_layer_input_size > 0) {
    const int64_t p = t.per_layer_input_size;
    lin.push_back({Component::kMlp, h, p, false, true, false, false, 1, 0, "per_layer_input_gate"});
    lin.push_back({Component::kMlp, p, h, false, true, false, false, 1, 0, "per_layer_projection"});
  }
}

/*! Everything one decoder layer holds on one tensor-parallel rank: its token mixer (attention, or
 *  a recurrent mixer where the layer keeps a state), its MLP or MoE, its norms. */
Tensors DescribeLayer(const ModelSpec& spec, const LayerSpec& layer, int64_t tp, const ExpertPadding& pad = {}) {
  Tensors out;
  if (layer.recurrent_state && spec.hybrid->kind == RecurrentMixerKind::kLightning) {
    DescribeLightning(spec, tp, out);
  } else if (layer.recurrent_state) {
    DescribeKimiDelta(spec, tp, out);
  } else {
    DescribeAttention(spec, tp, out);
  }
  if (layer.moe && spec.moe) {
    DescribeMoe(spec, tp, out, pad);
  } else {
    const int64_t width = layer.intermediate_size > 0 ? layer.intermediate_size : spec.intermediate_size;
    DescribeMlp(spec, width, tp, 1, false, "intermediate_size", kDenseMlpNames, out);
  }
  const int64_t norm_elements = Mul(spec.traits.norms_per_layer, spec.hidden_size);
  out.vectors.push_back({Component::kNorm, spec.traits.norm_bias ? 2 * norm_elements : norm_elements});
  DescribeLayerExtras(spec, tp, out);
  return out;
}

/*! Decoder layers come in few kinds (MLP or MoE, attention or a recurrent mixer): each kind is
 *  described once and counted times its layers, so a sizing call does not describe every layer. */
constexpr int kLayerKinds = 4;
int KindOf(const ModelSpec& spec, const LayerSpec& layer) {
  return (layer.moe && spec.moe ? 1 : 0) + (layer.recurrent_state ? 2 : 0);
}
LayerSpec LayerOfKind(int kind) {
  LayerSpec layer;
  layer.moe = (kind & 1) != 0;
  layer.recurrent_state = (kind & 2) != 0;
  return layer;
}
bool IsMoeKind(int kind) { return (kind & 1) != 0; }

/*! How many layers of each kind [begin, end) holds. */
std::array<int64_t, kLayerKinds> CountKinds(const ModelSpec& spec, int64_t begin, int64_t end) {
  std::array<int64_t, kLayerKinds> counts{};
  for (int64_t i = begin; i < end; ++i) ++counts[KindOf(spec, spec.layers[static_cast<size_t>(i)])];
  return counts;
}

/*! Whether some layer's MLP width is its own (Gemma-3n MatFormer sub-models): such a model is
 *  described layer by layer, the kinds above not knowing widths. */
bool LayersDifferInWidth(const ModelSpec& spec) {
  return std::any_of(spec.layers.begin(), spec.layers.end(),
                     [](const LayerSpec& l) { return l.intermediate_size > 0; });
}

int64_t CountElements(const Tensors& tensors) {
  int64_t n = LinearElements(tensors.linears);
  for (const Vector& v : tensors.vectors) n = Add(n, v.elements);
  return n;
}

/*! One MXFP4 expert linear (E copies of an N x K weight: uint8 values holding two 4-bit values,
 *  one e8m0 scale byte per 32 inputs, a bias of N) as \p mx leaves it after loading. */
LinearBytes Mxfp4ExpertBytes(const Linear& l, const Mxfp4Layout& mx, int64_t dtype_bytes) {
  const int64_t n = l.out_features;
  const int64_t k_bytes = CeilDiv(l.in_features, 2);
  const int64_t scales = Mul(n, CeilDiv(l.in_features, 32));
  LinearBytes b;
  // HopperMXValueLayout.swizzle_data: storage padded to the release's alignment, then to the
  // mma tile (16 rows of N x 32 bytes of K once transposed), a no-op after 64.
  const int64_t k_align = mx.value_align > 0 ? mx.value_align : 32;
  const int64_t n_align = mx.value_align > 0 ? mx.value_align : 16;
  b.weight = mx.hopper_swizzle ? Mul(RoundUp(k_bytes, k_align), RoundUp(n, n_align)) : Mul(n, k_bytes);
  if (l.bias) b.weight = Add(b.weight, Mul(n, mx.bias_element_bytes > 0 ? mx.bias_element_bytes : dtype_bytes));
  b.overhead = scales;
  if (mx.hopper_swizzle) b.overhead = Add(b.overhead, Mul(RoundUp(n, 256), RoundUp(CeilDiv(l.in_features, 32), 2)));
  if (mx.scale_copy) b.overhead = Add(b.overhead, scales);
  b.weight = Mul(b.weight, l.copies);
  b.overhead = Mul(b.overhead, l.copies);
  return b;
}

/*! Scales (and zero points, g_idx) a quantized \p l holds beside its values, per copy. */
int64_t QuantizationOverhead(const Linear& l, const QuantizationSpec& q, int64_t dtype_bytes) {
  const int64_t elements = Mul(l.in_features, l.out_features);
  if (q.weight_bits >= 8) {
    // fp8 / int8 / bitsandbytes 8-bit: float32 scales per block, per tensor or per channel.
    if (q.block_out > 0) {
      return Mul(Mul(CeilDiv(l.out_features, q.block_out), CeilDiv(l.in_features, q.block_in)), kFloat32Bytes);
    }
    return q.per_tensor_scale ? kFloat32Bytes : Mul(l.out_features, kFloat32Bytes);
  }
  if (q.method == "bitsandbytes") return Mul(CeilDiv(elements, kBnbBlock), kFloat32Bytes);  // float32 absmax per block
  if (q.method == "mxfp4") return CeilDiv(elements, q.group_size);  // one e8m0 byte per 32 weights
  if (q.nvfp4) {
    // One float8_e4m3 scale per 16 inputs, which process_weights_after_loading replaces by the
    // swizzled layout of the CUTLASS / FlashInfer FP4 GEMMs and MoE kernels: rows padded to 128,
    // scale columns to 4 (vLLM quantization/utils/nvfp4_utils.py swizzle_blockscale). The float32
    // global scales and alphas (a few per layer) are not counted.
    return Mul(RoundUp(l.out_features, 128), RoundUp(CeilDiv(l.in_features, q.group_size), 4));
  }
  // AWQ / GPTQ / compressed-tensors WNA16: model-dtype scales per (group, output channel),
  // zero points packed at weight_bits, GPTQ act-order keeps an int32 g_idx per input.
  const int64_t groups = q.group_size > 0 ? CeilDiv(l.in_features, q.group_size) : 1;
  int64_t overhead = Mul(Mul(groups, l.out_features), dtype_bytes);
  if (q.zero_point) overhead = Add(overhead, CeilDiv(Mul(Mul(groups, l.out_features), q.weight_bits), 8));
  if (q.desc_act) overhead = Add(overhead, Mul(l.in_features, 4));
  return overhead;
}

LinearBytes StoredBytes(const Linear& l, const std::optional<QuantizationSpec>& q, int64_t dtype_bytes,
                        const Mxfp4Layout* mx = nullptr) {
  if (mx != nullptr && q && q->method == "mxfp4" && l.expert) return Mxfp4ExpertBytes(l, *mx, dtype_bytes);
  LinearBytes b;
  const int64_t elements = Mul(l.in_features, l.out_features);
  const int64_t bias = l.bias ? Mul(l.out_features, dtype_bytes) : 0;  // biases stay in the model dtype
  const bool quantized = q && l.quantizable && (!q->experts_only || l.expert);
  if (!quantized) {
    b.weight = Add(Mul(elements, l.element_bytes > 0 ? l.element_bytes : dtype_bytes), bias);
  } else {
    b.weight = Add(CeilDiv(Mul(elements, q->weight_bits), 8), bias);
    b.overhead = QuantizationOverhead(l, *q, dtype_bytes);
    if (l.dequantized_copy) b.overhead = Add(b.overhead, Mul(elements, dtype_bytes));
  }
  b.weight = Mul(b.weight, l.copies);
  b.overhead = Mul(b.overhead, l.copies);
  return b;
}

int64_t& Slot(RankWeights& r, Component c) {
  switch (c) {
    case Component::kEmbedding: return r.embedding_bytes;
    case Component::kLmHead: return r.lm_head_bytes;
    case Component::kAttention: return r.attention_bytes;
    case Component::kMlp: return r.mlp_bytes;
    case Component::kNorm: return r.norm_bytes;
  }
  return r.norm_bytes;  // unreachable: every enumerator is handled above
}

void AddBytes(RankWeights& r, const Tensors& tensors, const std::optional<QuantizationSpec>& q,
              int64_t dtype_bytes, int64_t times, const Mxfp4Layout* mx = nullptr) {
  for (const Linear& l : tensors.linears) {
    const LinearBytes b = StoredBytes(l, q, dtype_bytes, mx);
    int64_t& slot = Slot(r, l.component);
    slot = Add(slot, Mul(b.weight, times));
    r.quantization_overhead_bytes = Add(r.quantization_overhead_bytes, Mul(b.overhead, times));
  }
  for (const Vector& v : tensors.vectors) {
    int64_t& slot = Slot(r, v.component);
    slot = Add(slot, Mul(Mul(v.elements, v.element_bytes > 0 ? v.element_bytes : dtype_bytes), times));
  }
}

/*! What \p mx adds to \p tensors' MXFP4 experts after loading, beyond the tensors as created. */
int64_t LayoutExtraBytes(const Tensors& tensors, const std::optional<QuantizationSpec>& q, int64_t dtype_bytes,
                         const Mxfp4Layout& mx) {
  const Mxfp4Layout created{mx.creation, 0, false, false, 0};
  int64_t extra = 0;
  for (const Linear& l : tensors.linears) {
    const LinearBytes after = StoredBytes(l, q, dtype_bytes, &mx);
    const LinearBytes before = StoredBytes(l, q, dtype_bytes, &created);
    extra = Add(extra, (after.weight + after.overhead) - (before.weight + before.overhead));
  }
  return extra;
}

const char* const kAllowedQuantization =
    "fp8, fbgemm_fp8, modelopt, modelopt_fp4, awq, awq_marlin, gptq, gptq_marlin, compressed-tensors, "
    "bitsandbytes, mxfp4";

/*! The method family: awq_marlin is awq stored the same way, gptq_marlin gptq, and vLLM's
 *  modelopt_fp4 is a ModelOpt checkpoint's NVFP4 quant_algo. */
std::string BaseMethod(std::string m) {
  if (m == "modelopt_fp4") return "modelopt";
  const std::string suffix = "_marlin";
  if (m.size() > suffix.size() && m.compare(m.size() - suffix.size(), suffix.size(), suffix) == 0) {
    m.resize(m.size() - suffix.size());
  }
  return m;
}

/*! The quantization in effect: the checkpoint's quantization_config, or --quantization.
 *  vLLM accepts --quantization only when it matches the checkpoint's method, or, for an
 *  unquantized checkpoint, when the method can quantize at load time (fp8, bitsandbytes). */
std::optional<QuantizationSpec> ResolveQuantization(const ModelSpec& spec, const std::string& requested) {
  std::string m = requested;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  if (m.empty() || m == "none") return spec.quantization;
  const std::string allowed = kAllowedQuantization;
  bool known = false;
  for (size_t start = 0; start < allowed.size();) {
    size_t end = allowed.find(", ", start);
    if (end == std::string::npos) end = allowed.size();
    if (allowed.compare(start, end - start, m) == 0 && end - start == m.size()) known = true;
    start = end + 2;
  }
  if (!known) {
    throw InvalidArgument("quantization", "unknown quantization method " + EchoValue(requested) + "; allowed: " + allowed);
  }
  if (spec.quantization) {
    if (BaseMethod(spec.quantization->method) != BaseMethod(m)) {
      throw InvalidArgument("quantization", "the checkpoint is quantized with " + EchoValue(spec.quantization->method) +
                                                ", which does not match --quantization " + EchoValue(requested));
    }
    return spec.quantization;
  }
  QuantizationSpec online;
  online.method = m;
  if (m == "fp8") {
    online.weight_bits = 8;  // dynamic per-tensor fp8 of every linear layer
    online.per_tensor_scale = true;
  } else if (m == "bitsandbytes") {
    online.weight_bits = 4;  // in-flight bitsandbytes quantizes to 4-bit NF4
    online.group_size = kBnbBlock;
  } else {
    throw InvalidArgument("quantization", EchoValue(requested) +
                                              " needs a checkpoint quantized with it; an unquantized "
                                              "checkpoint can be quantized at load time with fp8 or bitsandbytes");
  }
  return online;
}

/*! vLLM 0.19's MXFP4 expert layout for \p backend (WeightOptions::mxfp4_backend). */
Mxfp4Layout Mxfp4LayoutOf(const std::string& backend) {
  constexpr int64_t kFloat32Bias = 4;  // TRITON / TRTLLM convert_to_mxfp4_moe_kernel_format: .to(torch.float32)
  if (backend == "triton") return {{64, 1}, kFloat32Bias, true, false, 64};
  if (backend == "marlin") return {{128, 256}, 0, false, false, 64};  // repacked in place, bias in params_dtype
  if (backend == "flashinfer_trtllm") return {{256, 256}, kFloat32Bias, false, false, 64};
  if (backend == "flashinfer_cutlass") return {{128, 128}, 0, false, false, 64};  // w13 bias cast back to bf16
  if (backend == "triton_rocm") return {{256, 256}, kFloat32Bias, false, false, 64};
  if (backend == "triton_rocm_gfx950") return {{256, 256}, kFloat32Bias, false, true, 64};
  throw InvalidArgument("mxfp4_backend", "unknown MXFP4 MoE backend " + EchoValue(backend) +
                                             "; allowed: triton, marlin, flashinfer_trtllm, flashinfer_cutlass, "
                                             "triton_rocm, triton_rocm_gfx950");
}

/*! Layers [begin, end) described one by one into \p r (LayersDifferInWidth), each with the
 *  checkpoint's unquantized modules decided for its own index. */
void AddLayersOneByOne(const ModelSpec& spec, const WeightOptions& options, int64_t begin, int64_t end,
                       const std::optional<QuantizationSpec>& quant, int64_t dtype_bytes, RankWeights& r) {
  for (int64_t i = begin; i < end; ++i) {
    Tensors layer = DescribeLayer(spec, spec.layers[static_cast<size_t>(i)], options.tensor_parallel_size);
    ApplyUnquantizedModules(layer.linears, quant, {i});
    AddBytes(r, layer, quant, dtype_bytes, 1);
    AddMpLinearLayout(r, layer.linears, quant, dtype_bytes, 1, options);
  }
}

/*! The indices of the layers of \p kind (KindOf). */
std::vector<int64_t> LayersOfKind(const ModelSpec& spec, int kind) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    if (KindOf(spec, spec.layers[i]) == kind) out.push_back(static_cast<int64_t>(i));
  }
  return out;
}

/*! Each layer kind the model has, described once for one rank; the checkpoint's unquantized modules
 *  are decided once per kind over its layers. */
std::array<std::optional<Tensors>, kLayerKinds> DescribeKinds(const ModelSpec& spec, int64_t tp,
                                                              const std::optional<QuantizationSpec>& quant,
                                                              const ExpertPadding& pad) {
  const std::array<int64_t, kLayerKinds> model_kinds = CountKinds(spec, 0, spec.num_layers);
  std::array<std::optional<Tensors>, kLayerKinds> kinds;
  for (int kind = 0; kind < kLayerKinds; ++kind) {
    if (model_kinds[kind] > 0) {
      kinds[kind] = DescribeLayer(spec, LayerOfKind(kind), tp, IsMoeKind(kind) ? pad : ExpertPadding{});
      ApplyUnquantizedModules(kinds[kind]->linears, quant, LayersOfKind(spec, kind));
    }
  }
  return kinds;
}

/*! The MXFP4 layout \p options ask for (none when the checkpoint is not mxfp4). */
Mxfp4Layout Mxfp4LayoutFor(bool mxfp4, const WeightOptions& options) {
  Mxfp4Layout mx = mxfp4 ? Mxfp4LayoutOf(options.mxfp4_backend) : Mxfp4Layout{};
  if (options.mxfp4_hopper_value_align != 0 && options.mxfp4_hopper_value_align != 64) {
    throw InvalidArgument("mxfp4_hopper_value_align", "must be 0 (the mma tile only) or 64, got " +
                                                          std::to_string(options.mxfp4_hopper_value_align));
  }
  mx.value_align = options.mxfp4_hopper_value_align;
  return mx;
}

/*! The token embedding's width: hidden_size, or OPT's word_embed_proj_dim (traits.embed_dim). */
int64_t EmbedDim(const ModelSpec& spec) { return spec.traits.embed_dim > 0 ? spec.traits.embed_dim : spec.hidden_size; }

/*! Gemma-3n's model-level tensors beside embed_tokens (vLLM gemma3n.py Gemma3nSelfDecoder and
 *  Gemma3nTextModel): the vocab-parallel per-layer embedding table of \p table_rows rows (the
 *  caller's: the config's for a count, padded and split for one rank's bytes) x num_layers x
 *  per_layer_input_size, the column-parallel per_layer_model_projection (hidden -> num_layers x
 *  per_layer_input_size, split over TP) and its per_layer_projection_norm, and altup_num_inputs - 1
 *  column-parallel altup_projections and as many altup_unembed_projections (hidden -> hidden). */
Tensors PerLayerEmbeddingTensors(const ModelSpec& spec, int64_t tp, int64_t table_rows) {
  const ArchitectureTraits& t = spec.traits;
  const int64_t h = spec.hidden_size;
  Tensors out;
  if (t.per_layer_input_size > 0) {
    const int64_t width = Mul(spec.num_layers, t.per_layer_input_size);
    out.vectors.push_back({Component::kEmbedding, Mul(table_rows, width)});  // embed_tokens_per_layer
    out.linears.push_back(
        {Component::kEmbedding, h, SplitEvenly(width, tp, "num_hidden_layers x hidden_size_per_layer_input")});
    out.vectors.push_back({Component::kNorm, t.per_layer_input_size});  // per_layer_projection_norm
  }
  if (t.altup_num_inputs > 1) {
    Linear projection{Component::kEmbedding, h, SplitEvenly(h, tp, "hidden_size")};
    projection.copies = Mul(2, t.altup_num_inputs - 1);  // altup_projections + altup_unembed_projections
    out.linears.push_back(projection);
  }
  return out;
}

/*! Tensors beside the token embedding: OPTDecoder's replicated learned position table and, when the
 *  embedding width differs from hidden_size, project_in and project_out (no bias); Gemma-3n's
 *  per-layer embeddings and AltUp projections (PerLayerEmbeddingTensors, \p per_layer_rows rows). */
Tensors EmbeddingExtras(const ModelSpec& spec, int64_t tp, int64_t per_layer_rows) {
  Tensors out = PerLayerEmbeddingTensors(spec, tp, per_layer_rows);
  if (spec.traits.learned_position_rows > 0) {
    out.vectors.push_back({Component::kEmbedding, Mul(spec.traits.learned_position_rows, spec.hidden_size)});
  }
  if (EmbedDim(spec) != spec.hidden_size) {
    out.linears.push_back({Component::kEmbedding, EmbedDim(spec), spec.hidden_size});  // project_in
    out.linears.push_back({Component::kEmbedding, spec.hidden_size, EmbedDim(spec)});  // project_out
  }
  return out;
}

int64_t FinalNormElements(const ModelSpec& spec) {
  if (!spec.traits.final_norm) return 0;
  return spec.traits.norm_bias ? 2 * spec.hidden_size : spec.hidden_size;
}

/*! Whether the layers are counted here, tensor by tensor: every model but the hybrids whose layer
 *  shapes hybrid_weights.cc owns. Kimi-Linear's layers are DeepSeek's (MLA, MoE with shared
 *  experts) with a KDA mixer in place of attention on its state layers (DescribeKimiDelta). */
bool DecoderLayerWeights(const ModelSpec& spec) {
  return !spec.hybrid || spec.hybrid->kind == RecurrentMixerKind::kKimiDelta ||
         spec.hybrid->kind == RecurrentMixerKind::kLightning;
}

/*! The bytes of one element of a tensor whose dtype the family fixes (model_families.json
 *  lm_head_dtype, rope_cache_dtype: "float32"), else \p model_dtype_bytes. */
int64_t FamilyDTypeBytes(const std::string& model_type, const char* key, int64_t model_dtype_bytes) {
  const JsonValue* dtype = FamilyTrait(model_type, key);
  return dtype != nullptr && dtype->AsString() == "float32" ? 4 : model_dtype_bytes;
}

}  // namespace

int64_t RotaryDim(const ModelSpec& spec) {
  if (spec.mla) return spec.mla->qk_rope_head_dim;
  return static_cast<int64_t>(static_cast<double>(spec.head_dim) * spec.traits.partial_rotary_factor);
}

/*! The rotary cos/sin caches one rank holds: one per distinct get_rope key, the global one and Gemma-3's
 *  local one; longrope's short cache shares the long cache's buffer. */
int64_t RotaryCacheBytes(const ModelSpec& spec, int64_t dtype_bytes, int64_t max_model_len) {
  int64_t global_rows =
      spec.traits.rope_table_rows > 0 ? spec.traits.rope_table_rows : spec.traits.rope_cache_positions;
  if (spec.traits.rope_rows_capped_by_max_model_len && max_model_len > 0) {
    global_rows = std::min(global_rows, max_model_len);
  }
  // DeepSeek-V3.2's indexer builds its own NeoX-style rope beside MLA's (vLLM PR #28968, deepseek_v2.py
  // indexer_rope_emb): get_rope keys its caches by is_neox_style, so a second cache of the same rows.
  const int64_t indexer_rope_rows = spec.mla && spec.mla->index_head_dim > 0 ? global_rows : 0;
  const int64_t rope_rows =
      Add(Add(Add(global_rows, spec.traits.local_rope_cache_positions), spec.traits.short_rope_cache_positions),
          indexer_rope_rows);
  // MiniMax-Text-01 builds its rope in float32 (get_rope(dtype=torch.float32): rope_cache_dtype).
  return Mul(Mul(rope_rows, RotaryDim(spec)), FamilyDTypeBytes(spec.model_type, "rope_cache_dtype", dtype_bytes));
}

int64_t VisionParameters(const ModelSpec& spec) { return spec.vision ? VisionEncoderParameters(*spec.vision) : 0; }

int64_t VisionRankBytes(const ModelSpec& spec, int64_t dtype_bytes, int64_t tensor_parallel_size) {
  return spec.vision ? VisionEncoderBytesPerRank(*spec.vision, dtype_bytes, tensor_parallel_size) : 0;
}

int64_t AudioParameters(const ModelSpec& spec) { return spec.audio ? AudioEncoderParameters(*spec.audio) : 0; }

int64_t AudioRankBytes(const ModelSpec& spec, int64_t dtype_bytes, int64_t tensor_parallel_size) {
  return spec.audio ? AudioEncoderBytesPerRank(*spec.audio, dtype_bytes, tensor_parallel_size) : 0;
}

int64_t EncoderParameters(const ModelSpec& spec) { return Add(VisionParameters(spec), AudioParameters(spec)); }

int64_t LinearElements(const Linear& l) {
  const int64_t one = Add(Mul(l.in_features, l.out_features), l.bias ? l.out_features : 0);
  return Mul(one, l.copies);
}

int64_t LinearElements(const std::vector<Linear>& linears) {
  int64_t n = 0;
  for (const Linear& l : linears) n = Add(n, LinearElements(l));
  return n;
}

std::optional<QuantizationSpec> ResolveWeightQuantization(const ModelSpec& spec, const std::string& requested) {
  return ResolveQuantization(spec, requested);
}

LinearBytes StoredLinearBytes(const Linear& l, const std::optional<QuantizationSpec>& q, int64_t dtype_bytes) {
  return StoredBytes(l, q, dtype_bytes);
}

int64_t NumParameters(const ModelSpec& spec) {
  RequirePositive(spec.num_layers, "num_hidden_layers");
  if (!DecoderLayerWeights(spec)) return Add(HybridNumParameters(spec), EncoderParameters(spec));  // hybrid_weights.cc
  const int64_t embedding = Mul(spec.vocab_size, EmbedDim(spec));
  int64_t n = Add(embedding, CountElements(EmbeddingExtras(spec, 1, spec.traits.per_layer_input_vocab_size)));
  if (!spec.tie_word_embeddings) {
    n = Add(n, embedding);
    if (spec.traits.lm_head_bias) n = Add(n, spec.vocab_size);
  }
  // Each layer kind is described once and counted times its layers. Should the sum leave 64
  // bits, the layer-by-layer sum runs instead so the overflow error names the same operands.
  const std::array<int64_t, kLayerKinds> counts = CountKinds(spec, 0, static_cast<int64_t>(spec.layers.size()));
  __int128 layers_total = n;
  for (int kind = 0; kind < kLayerKinds; ++kind) {
    if (counts[kind] == 0) continue;
    layers_total += static_cast<__int128>(CountElements(DescribeLayer(spec, LayerOfKind(kind), 1))) * counts[kind];
  }
  if (layers_total <= std::numeric_limits<int64_t>::max() && !LayersDifferInWidth(spec)) {
    n = static_cast<int64_t>(layers_total);
  } else {
    for (const LayerSpec& layer : spec.layers) n = Add(n, CountElements(DescribeLayer(spec, layer, 1)));
  }
  n = Add(n, FinalNormElements(spec));
  return Add(n, EncoderParameters(spec));
}

WeightBreakdown ComputeWeights(const ModelSpec& spec, const WeightOptions& options) {
  if (!DecoderLayerWeights(spec)) return ComputeHybridWeights(spec, options);  // hybrid_weights.cc
  const int64_t tp = options.tensor_parallel_size;
  const int64_t pp = options.pipeline_parallel_size;
  CheckWeightLayout(spec, options);
  const DType dtype = ResolveModelDType(options.dtype, spec.dtype, "dtype");
  const int64_t dt = DTypeSizeBytes(dtype);
  const std::optional<QuantizationSpec> quant = ResolveQuantization(spec, options.quantization);
  if (spec.hybrid && quant) {
    // Kimi-Linear: which of the KDA mixer's linears take the quant_config is not checked (kda.py).
    throw Unsupported("quantized weights of " + spec.model_type + " (" + quant->method + ") are not modelled yet");
  }

  const bool mxfp4 = quant && quant->method == "mxfp4";
  const Mxfp4Layout mx = Mxfp4LayoutFor(mxfp4, options);
  const ExpertPadding pad = mx.creation;

  WeightBreakdown out;
  out.num_parameters = NumParameters(spec);
  out.vision_encoder_parameters = VisionParameters(spec);
  out.audio_encoder_parameters = AudioParameters(spec);
  const int64_t vision_bytes = VisionRankBytes(spec, dt, tp);
  const int64_t audio_bytes = AudioRankBytes(spec, dt, tp);
  out.dtype = DTypeName(dtype);
  out.quantization = quant ? quant->method : "";

  // Embedding and LM head stay in the model dtype under every supported method; MiniMax-Text-01
  // casts its LM head to float32 (model_families.json lm_head_dtype).
  const int64_t vocab_rows = VocabRowsPerRank(spec.vocab_size, tp);
  const int64_t embedding_bytes = Mul(Mul(vocab_rows, EmbedDim(spec)), dt);
  const int64_t lm_head_dt = FamilyDTypeBytes(spec.model_type, "lm_head_dtype", dt);
  const int64_t lm_head_bytes =
      Mul(Add(Mul(vocab_rows, EmbedDim(spec)), spec.traits.lm_head_bias ? vocab_rows : 0), lm_head_dt);
  const int64_t final_norm_bytes = Mul(FinalNormElements(spec), dt);
  const int64_t rope_bytes = RotaryCacheBytes(spec, dt, options.max_model_len);
  const Tensors extras = EmbeddingExtras(spec, tp, VocabRowsPerRank(spec.traits.per_layer_input_vocab_size, tp));
  const std::array<std::optional<Tensors>, kLayerKinds> kinds = DescribeKinds(spec, tp, quant, pad);

  for (int64_t rank = 0; rank < pp; ++rank) {
    RankWeights r;
    r.pp_rank = rank;
    // OPT builds its embedding side on every rank (traits.embeddings_on_every_pp_rank), and a
    // tied LM head is that same embed_tokens tensor there.
    const bool every = spec.traits.embeddings_on_every_pp_rank;
    const bool first = rank == 0 || every;
    const bool last = rank == pp - 1 || every;
    if (first) r.embedding_bytes = embedding_bytes;
    if (first) AddBytes(r, extras, quant, dt, 1);
    // Tied: one tensor serves both on a single rank; under PP the last rank builds its own
    // embed_tokens to serve as the LM head.
    if (last && (!spec.tie_word_embeddings || (!first && !every))) r.lm_head_bytes = lm_head_bytes;
    if (last) r.norm_bytes = Add(r.norm_bytes, final_norm_bytes);  // beside Gemma-3n's per_layer_projection_norm

    const auto [begin, end] = PipelineLayerRange(spec.num_layers, rank, pp);
    r.first_layer = begin;
    r.end_layer = end;
    const std::array<int64_t, kLayerKinds> counts = CountKinds(spec, begin, end);
    if (LayersDifferInWidth(spec)) AddLayersOneByOne(spec, options, begin, end, quant, dt, r);
    for (int kind = 0; kind < kLayerKinds && !LayersDifferInWidth(spec); ++kind) {
      if (counts[kind] == 0) continue;
      const bool mx_experts = mxfp4 && IsMoeKind(kind);
      AddBytes(r, *kinds[kind], quant, dt, counts[kind], mx_experts ? &mx : nullptr);
      AddMpLinearLayout(r, kinds[kind]->linears, quant, dt, counts[kind], options);
      if (mx_experts) {
        r.kernel_layout_bytes =
            Add(r.kernel_layout_bytes, Mul(LayoutExtraBytes(*kinds[kind], quant, dt, mx), counts[kind]));
      }
    }
    if (end > begin) r.buffer_bytes = rope_bytes;
    r.vision_encoder_bytes = vision_bytes;
    r.audio_encoder_bytes = audio_bytes;

    AppendRank(r, out);
  }
  return out;
}

void CheckWeightLayout(const ModelSpec& spec, const WeightOptions& options) {
  ValidateParallelism(spec.num_layers, options.tensor_parallel_size, options.pipeline_parallel_size);
  // A model class without SupportsPP (model_families.json pipeline_parallel_refusal: Zamba2).
  if (const JsonValue* refusal = FamilyTrait(spec.model_type, "pipeline_parallel_refusal");
      refusal != nullptr && options.pipeline_parallel_size > 1) {
    throw Unsupported(refusal->AsString());
  }
  // vLLM checks the heads when it builds its config, before any weight is sized.
  AttentionHeadsPerRank(spec.num_attention_heads, options.tensor_parallel_size);
  if (static_cast<int64_t>(spec.layers.size()) != spec.num_layers) {
    throw InvalidArgument("num_hidden_layers", "the spec lists " + std::to_string(spec.layers.size()) +
                                                   " layers but says " + std::to_string(spec.num_layers));
  }
}

int64_t QkNormElements(const ModelSpec& spec, int64_t heads, int64_t kv_heads, int64_t tp) {
  if (!spec.traits.qk_norm) return 0;
  switch (spec.traits.qk_norm_shape) {
    case QkNormShape::kHeadDim: return Mul(2, spec.head_dim);
    case QkNormShape::kPerHead: return Mul(heads + kv_heads, spec.head_dim);
    // OLMo-2 all-gathers q and k before the norm: the whole weight on every rank.
    case QkNormShape::kProjection: return Mul(spec.num_attention_heads + spec.num_kv_heads, spec.head_dim);
    // MiniMaxText01RMSNormTP: q_norm / k_norm of all heads x head_dim, each rank holding size / tp.
    case QkNormShape::kAllHeads:
      return Mul(spec.num_attention_heads, spec.head_dim) / tp + Mul(spec.num_kv_heads, spec.head_dim) / tp;
  }
  return 0;  // unreachable: every enumerator is handled above
}

int64_t SplitEvenly(int64_t a, int64_t tp, const std::string& what) {
  if (a % tp != 0) {
    throw InvalidArgument("tensor_parallel_size",
                          what + " (" + std::to_string(a) + ") must be divisible by tensor_parallel_size (" +
                              std::to_string(tp) + ")");
  }
  return a / tp;
}

int64_t VocabRowsPerRank(int64_t vocab, int64_t tp) {
  const int64_t padded = CheckedMul(CeilDiv(vocab, kVocabPadding), kVocabPadding, kField);
  return SplitEvenly(padded, tp, "vocab_size padded to a multiple of 64");
}

void AppendRank(RankWeights r, WeightBreakdown& out) {
  for (int64_t part : {r.embedding_bytes, r.lm_head_bytes, r.attention_bytes, r.mlp_bytes, r.norm_bytes,
                       r.quantization_overhead_bytes, r.buffer_bytes, r.vision_encoder_bytes, r.audio_encoder_bytes}) {
    r.total_bytes = CheckedAdd(r.total_bytes, part, kField);
  }
  if (r.total_bytes > out.fullest_rank_bytes) {
    out.fullest_rank_bytes = r.total_bytes;
    out.fullest_pp_rank = r.pp_rank;
  }
  out.per_pp_rank.push_back(r);
}

int64_t WeightBytes(const ModelSpec& spec, const WeightOptions& options) {
  return ComputeWeights(spec, options).fullest_rank_bytes;
}

}  // namespace vllm_mem
