/*!
 * \file core/model/hybrid_weights.cc
 * \brief Weights of hybrid models per GPU, module by module as vLLM's model files build them:
 *        MambaMixer (Jamba), MambaMixer2 (Bamba, Granite-4.0-H, Nemotron-H, Falcon-H1, Mamba-2)
 *        with its group replication under TP, Qwen3-Next's GatedDeltaNet, the attention
 *        layers, MLP / MoE blocks and norms. The recurrent mixers' bytes are reported in
 *        RankWeights::attention_bytes (the layer's token mixer). Parameters are counted as the
 *        checkpoint holds them, without MTP layers (vLLM loads those only as a drafter).
 */
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/base/checked_math.h"
#include "core/model/parallelism.h"
#include "core/model/weights_common.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/model/hybrid_spec.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "weights";
constexpr int64_t kFloat32Bytes = 4;

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kField); }
int64_t Add(int64_t a, int64_t b) { return CheckedAdd(a, b, kField); }
int64_t Split(int64_t a, int64_t tp, const std::string& what) { return SplitEvenly(a, tp, what); }

/*! Elements of one layer on one rank, by what RankWeights reports, plus float32 elements, and
 *  the linears vLLM builds with the checkpoint's quant_config (their bytes follow the method). */
struct LayerElements {
  int64_t mixer = 0;        //!< attention or recurrent mixer, model dtype
  int64_t mixer_fp32 = 0;   //!< parameters vLLM allocates in float32 (Mamba A)
  int64_t mlp = 0;
  int64_t norm = 0;
  std::vector<Linear> linears;
};

/*! A linear of the layer, named as the checkpoint names its shards. */
void AddLinear(LayerElements& e, Component c, int64_t in, int64_t out, bool bias, const char* modules) {
  Linear l{c, in, out, bias};
  l.modules = modules;
  e.linears.push_back(l);
}

/*! Attention of a hybrid layer on one rank: QKVParallelLinear (KV heads replicated when TP
 *  exceeds them), o_proj, optional q/k norms and Qwen3-Next's output gate (q_proj doubled). */
void AddAttention(const ModelSpec& s, int64_t tp, LayerElements& e) {
  const int64_t heads = AttentionHeadsPerRank(s.num_attention_heads, tp);
  const int64_t kv = KvHeadsPerRank(s.num_kv_heads, tp);
  const bool gate = s.traits.attn_output_gate;
  const int64_t q = Mul(Mul(heads, s.head_dim), gate ? 2 : 1);
  const int64_t qkv_out = Add(q, Mul(2 * kv, s.head_dim));
  AddLinear(e, Component::kAttention, s.hidden_size, qkv_out, s.traits.qkv_bias, kQkvModules);
  AddLinear(e, Component::kAttention, Mul(heads, s.head_dim), s.hidden_size, s.traits.attention_out_bias,
            "self_attn.o_proj");
  e.mixer = Add(e.mixer, QkNormElements(s, heads, kv, tp));
}

void AddMamba1(const ModelSpec& s, const HybridSpec& h, int64_t tp, bool per_rank, LayerElements& e) {
  const int64_t hidden = s.hidden_size;
  // MambaMixer: in_proj (x, z), conv1d, x_proj (dt, B, C; row-parallel over I), dt_proj,
  // A (float32) and D, Jamba's dt/B/C RMSNorms, out_proj.
  const int64_t i = Split(h.intermediate_size, tp, "mamba intermediate_size");
  const int64_t dt_rank = h.head_dim;
  e.mixer = Add(e.mixer, Mul(hidden, 2 * i));
  if (h.proj_bias) e.mixer = Add(e.mixer, 2 * i);
  e.mixer = Add(e.mixer, Add(Mul(i, h.conv_kernel), h.conv_bias ? i : 0));
  e.mixer = Add(e.mixer, Mul(i, Add(dt_rank, 2 * h.state_size)));
  e.mixer = Add(e.mixer, Add(Mul(dt_rank, i), i));  // dt_proj has a bias
  e.mixer_fp32 = Add(e.mixer_fp32, Mul(i, h.state_size));
  e.mixer = Add(e.mixer, i);  // D
  if (h.dt_norms) e.mixer = Add(e.mixer, Add(dt_rank, 2 * h.state_size));
  e.mixer = Add(e.mixer, Mul(i, hidden));
  if (h.proj_bias) e.mixer = Add(e.mixer, hidden);
}

void AddMamba2(const ModelSpec& s, const HybridSpec& h, int64_t tp, bool per_rank, LayerElements& e) {
  const int64_t hidden = s.hidden_size;
  // MambaMixer2: in_proj (z, x, B, C, dt) with groups replicated to the TP size when they do
  // not divide it, conv1d over (x, B, C), A (float32), D, dt_bias, gated RMSNorm over I,
  // out_proj. The checkpoint (per_rank false) holds the unreplicated groups.
  if (per_rank && h.n_groups % tp != 0 && h.n_groups != 1) {
    // MambaMixer2 asserts it (replicating groups to the head shards is only built for one
    // group); tp - n_groups below would otherwise go negative and shrink the count.
    throw InvalidArgument("tensor_parallel_size", "If tensor parallel world size does not divide num_groups, then "
                                                  "num_groups must equal 1. (n_groups " +
                                                      std::to_string(h.n_groups) + ", tensor_parallel_size " +
                                                      std::to_string(tp) + ")");
  }
  const int64_t groups =
      per_rank && h.n_groups % tp != 0 ? h.n_groups + (tp - h.n_groups) : h.n_groups;
  const int64_t t = per_rank ? tp : 1;
  const int64_t conv_dim = Add(h.intermediate_size, Mul(2 * groups, h.state_size));
  const int64_t in_out = Split(Add(Add(h.intermediate_size, conv_dim), h.num_heads), t, "mamba in_proj");
  const int64_t conv = Split(conv_dim, t, "mamba conv_dim");
  const int64_t heads = Split(h.num_heads, t, "mamba num_heads");
  const int64_t i = Split(h.intermediate_size, t, "mamba intermediate_size");
  // in_proj and out_proj take the quant_config; conv1d is built without one (mamba_mixer2.py).
  AddLinear(e, Component::kAttention, hidden, in_out, h.proj_bias, "mixer.in_proj");
  e.mixer = Add(e.mixer, Add(Mul(conv, h.conv_kernel), h.conv_bias ? conv : 0));
  e.mixer_fp32 = Add(e.mixer_fp32, heads);  // A
  e.mixer = Add(e.mixer, 2 * heads);          // D, dt_bias
  if (h.gated_norm) e.mixer = Add(e.mixer, i);
  AddLinear(e, Component::kAttention, i, hidden, h.proj_bias, "mixer.out_proj");
}

void AddGatedDeltaNet(const ModelSpec& s, const HybridSpec& h, int64_t tp, bool per_rank, LayerElements& e) {
  const int64_t hidden = s.hidden_size;
  // Qwen3NextGatedDeltaNet: in_proj_qkvz, in_proj_ba, conv1d (no bias) over (q, k, v),
  // dt_bias and A_log per value head, RMSNormGated over one value head (replicated),
  // out_proj.
  const int64_t t = per_rank ? tp : 1;
  const int64_t key = Mul(h.num_k_heads, h.head_k_dim);
  const int64_t value = Mul(h.num_heads, h.head_dim);
  // in_proj_qkvz, in_proj_ba and out_proj take the quant_config; conv1d is built without one
  // (gdn_linear_attn.py). Checkpoint names: Qwen3.5's in_proj_qkv / in_proj_z / in_proj_b / in_proj_a.
  AddLinear(e, Component::kAttention, hidden, Split(Add(2 * key, 2 * value), t, "in_proj_qkvz"), false,
            "linear_attn.in_proj_qkvz|linear_attn.in_proj_qkv,linear_attn.in_proj_z");
  AddLinear(e, Component::kAttention, hidden, Split(2 * h.num_heads, t, "in_proj_ba"), false,
            "linear_attn.in_proj_ba|linear_attn.in_proj_b,linear_attn.in_proj_a");
  e.mixer = Add(e.mixer, Mul(Split(Add(2 * key, value), t, "conv_dim"), h.conv_kernel));
  e.mixer = Add(e.mixer, 2 * Split(h.num_heads, t, "linear_num_value_heads"));
  e.mixer = Add(e.mixer, h.head_dim);
  AddLinear(e, Component::kAttention, Split(value, t, "linear value dim"), hidden, false, "linear_attn.out_proj");
}

void AddShortConv(const ModelSpec& s, const HybridSpec& h, int64_t tp, bool per_rank, LayerElements& e) {
  const int64_t hidden = s.hidden_size;
  // LFM2's ShortConv (vllm short_conv.py): in_proj (B, C, x: 3 x conv_dim, merged column),
  // the depthwise conv (conv_dim x L_cache, column), out_proj (row); biases with conv_bias.
  const int64_t t = per_rank ? tp : 1;
  const int64_t dim = Split(h.intermediate_size, t, "conv_dim");
  // vLLM's ShortConv builds conv, in_proj and out_proj without a quant_config (short_conv.py,
  // through v0.22.1 at least): they stay in the model dtype in a quantized checkpoint.
  AddLinear(e, Component::kAttention, hidden, 3 * dim, h.conv_bias, "conv.in_proj");
  AddLinear(e, Component::kAttention, dim, hidden, h.conv_bias, "conv.out_proj");
  for (size_t k = e.linears.size() - 2; k < e.linears.size(); ++k) e.linears[k].quantizable = false;
  e.mixer = Add(e.mixer, Add(Mul(dim, h.conv_kernel), h.conv_bias ? dim : 0));
}

/*! The recurrent mixer of one layer on one rank. */
void AddRecurrent(const ModelSpec& s, int64_t tp, bool per_rank, LayerElements& e) {
  const HybridSpec& h = *s.hybrid;
  switch (h.kind) {
    case RecurrentMixerKind::kMamba1: AddMamba1(s, h, tp, per_rank, e); break;
    case RecurrentMixerKind::kMamba2: AddMamba2(s, h, tp, per_rank, e); break;
    case RecurrentMixerKind::kGatedDeltaNet: AddGatedDeltaNet(s, h, tp, per_rank, e); break;
    case RecurrentMixerKind::kShortConv: AddShortConv(s, h, tp, per_rank, e); break;
    case RecurrentMixerKind::kKimiDelta:
    case RecurrentMixerKind::kLightning:
      // Kimi-Linear's and MiniMax-Text-01's layers are counted by weights.cc (their attention and MoE
      // beside the KDA / lightning mixer).
      throw std::logic_error("hybrid_weights.cc: Kimi-Linear's and MiniMax-Text-01's weights are weights.cc's");
  }
}

/*! A gated (gate_up + down) or plain (up + down, Nemotron-H's ReLU^2: traits.gated_mlp false) MLP,
 *  column / row split, \p copies times for stacked routed experts. */
void AddMlpLinears(const ModelSpec& s, int64_t intermediate, int64_t tp, bool gated, const char* what,
                   const MlpNames& names, int64_t copies, LayerElements& e) {
  const int64_t i = Split(intermediate, tp, what);
  Linear up{Component::kMlp, s.hidden_size, gated ? 2 * i : i, s.traits.mlp_bias};
  Linear down{Component::kMlp, i, s.hidden_size, s.traits.mlp_bias};
  up.modules = names.up;
  down.modules = names.down;
  up.copies = down.copies = copies;
  up.expert = down.expert = copies > 1;
  e.linears.push_back(up);
  e.linears.push_back(down);
}

/*! A linear vLLM builds with quant_config=None (the router, the shared-expert gate). */
void AddPlainLinear(LayerElements& e, int64_t in, int64_t out, const char* modules) {
  AddLinear(e, Component::kMlp, in, out, false, modules);
  e.linears.back().quantizable = false;
}

void AddMlp(const ModelSpec& s, const LayerSpec& l, int64_t tp, LayerElements& e) {
  if (!l.mlp) return;
  const bool gated = s.traits.gated_mlp;
  if (l.moe && s.moe) {
    if (!gated) {
      // Nemotron-H's MoE blocks (E in hybrid_override_pattern) run ReLU^2 experts.
      throw Unsupported("Nemotron-H MoE blocks (E in hybrid_override_pattern) are not in the weight count yet");
    }
    const MoeSpec& m = *s.moe;
    AddMlpLinears(s, m.expert_intermediate_size, tp, true, "moe_intermediate_size", kExpertNames, m.num_experts, e);
    AddPlainLinear(e, s.hidden_size, m.num_experts, "mlp.gate");  // router, replicated
    if (m.shared_expert_intermediate_size > 0) {
      AddMlpLinears(s, m.shared_expert_intermediate_size, tp, true, "shared_intermediate_size", kSharedExpertNames, 1,
                    e);
      if (m.shared_expert_gate) AddPlainLinear(e, s.hidden_size, 1, "mlp.shared_expert_gate");
    }
    return;
  }
  AddMlpLinears(s, s.intermediate_size, tp, gated, "intermediate_size", kDenseMlpNames, 1, e);
}

/*! Norms of one layer: Nemotron-H and Mamba-2 blocks have one (the block's norm), the others an
 *  input norm and a norm before the MLP (traits.norms_per_layer, model_families.json). */
int64_t NormElements(const ModelSpec& s) { return Mul(s.traits.norms_per_layer, s.hidden_size); }

/*! One layer's bytes on one rank into \p r: its linears as \p q stores them, the rest in the
 *  model dtype (float32 where vLLM allocates it so). */
void AddLayerBytes(const LayerElements& e, const std::optional<QuantizationSpec>& q, int64_t dt, RankWeights& r) {
  r.attention_bytes = Add(r.attention_bytes, Add(Mul(e.mixer, dt), Mul(e.mixer_fp32, kFloat32Bytes)));
  r.mlp_bytes = Add(r.mlp_bytes, Mul(e.mlp, dt));
  r.norm_bytes = Add(r.norm_bytes, Mul(e.norm, dt));
  for (const Linear& l : e.linears) {
    const LinearBytes b = StoredLinearBytes(l, q, dt);
    int64_t& slot = l.component == Component::kAttention ? r.attention_bytes : r.mlp_bytes;
    slot = Add(slot, b.weight);
    r.quantization_overhead_bytes = Add(r.quantization_overhead_bytes, b.overhead);
  }
}

LayerElements Layer(const ModelSpec& s, const LayerSpec& l, int64_t tp, bool per_rank) {
  LayerElements e;
  if (l.attention != AttentionKind::kNone && s.hybrid->shared_blocks > 0) {
    // Zamba2HybridLayer: the shared block's weights are counted once (SharedBlocks); each position
    // has its own ReplicatedLinear(hidden, hidden) after it.
    e.mixer = Mul(s.hidden_size, s.hidden_size);
  } else if (l.attention != AttentionKind::kNone) {
    AddAttention(s, per_rank ? tp : 1, e);
  }
  if (l.recurrent_state) AddRecurrent(s, tp, per_rank, e);
  AddMlp(s, l, per_rank ? tp : 1, e);
  e.norm = NormElements(s);
  return e;
}


/*! One Zamba2LoRA (A: ColumnParallelLinear(in, rank, gather_output) then B: (Merged)ColumnParallel-
 *  Linear(rank, out)) on one rank: both split their output over TP. */
int64_t AdapterElements(int64_t in, int64_t rank, int64_t out, int64_t tp) {
  return Add(Mul(in, Split(rank, tp, "adapter_rank")), Mul(rank, Split(out, tp, "Zamba2 adapter output")));
}

/*! Zamba2's num_mem_blocks shared transformer blocks, held once (zamba2.py Zamba2AttentionDecoderLayer:
 *  QKVParallelLinear over the 2 * hidden input, o_proj, the gated GELU MLP with add_bias_linear, an
 *  RMSNorm of 2 * hidden and one of hidden), and the LoRA adapters of every hybrid position: the MLP's
 *  gate_up adapter always, q/k/v adapters with use_shared_attention_adapter. Zero for other hybrids. */
LayerElements SharedBlocks(const ModelSpec& s, int64_t tp) {
  const HybridSpec& h = *s.hybrid;
  LayerElements e;
  if (h.shared_blocks == 0) return e;
  const int64_t hidden = s.hidden_size;
  const int64_t wide = Mul(2, hidden);  // attention_hidden_size
  const int64_t heads = AttentionHeadsPerRank(s.num_attention_heads, tp);
  const int64_t per_rank_width = Mul(heads, s.head_dim);
  const int64_t attention = Add(Mul(wide, Mul(3, per_rank_width)), Mul(per_rank_width, hidden));
  e.mixer = Mul(h.shared_blocks, attention);
  LayerElements mlp;  // the gated GELU MLP, add_bias_linear biases (traits.mlp_bias)
  AddMlpLinears(s, s.intermediate_size, tp, true, "intermediate_size", kDenseMlpNames, 1, mlp);
  e.mlp = Mul(h.shared_blocks, LinearElements(mlp.linears));
  e.norm = Mul(h.shared_blocks, Add(wide, hidden));
  const int64_t positions = h.num_attention_layers;
  e.mlp = Add(e.mlp, Mul(positions, AdapterElements(hidden, h.adapter_rank, Mul(2, s.intermediate_size), tp)));
  if (h.shared_attention_adapters) {
    e.mixer = Add(e.mixer, Mul(Mul(3, positions), AdapterElements(wide, h.adapter_rank, wide, tp)));
  }
  return e;
}

}  // namespace

int64_t HybridNumParameters(const ModelSpec& spec) {
  const int64_t embedding = Mul(spec.vocab_size, spec.hidden_size);
  int64_t n = spec.tie_word_embeddings ? embedding : Mul(2, embedding);
  for (const LayerSpec& l : spec.layers) {
    const LayerElements e = Layer(spec, l, 1, false);
    n = Add(n, Add(Add(Add(e.mixer, e.mixer_fp32), Add(e.mlp, e.norm)), LinearElements(e.linears)));
  }
  const LayerElements shared = SharedBlocks(spec, 1);
  n = Add(n, Add(Add(shared.mixer, shared.mlp), shared.norm));
  return Add(n, spec.hidden_size);  // final norm
}

WeightBreakdown ComputeHybridWeights(const ModelSpec& spec, const WeightOptions& options) {
  const int64_t tp = options.tensor_parallel_size;
  const int64_t pp = options.pipeline_parallel_size;
  CheckWeightLayout(spec, options);
  const std::optional<QuantizationSpec> quant = ResolveWeightQuantization(spec, options.quantization);
  if (quant && (quant->method == "mxfp4" || spec.hybrid->kind == RecurrentMixerKind::kMamba1 ||
                spec.hybrid->shared_blocks > 0)) {
    // MXFP4 is gpt-oss's experts only; which of MambaMixer's linears (Jamba, Mamba-1) take the
    // quant_config is not checked against vLLM's mamba_mixer.py; Zamba2's shared blocks, adapters
    // and per-position linears are counted unquantized (SharedBlocks).
    throw Unsupported("quantized weights of " + spec.model_type + " (" + quant->method +
                      ") are not modelled: mxfp4 is gpt-oss's, and Mamba-1 mixers' and Zamba2's shared blocks' "
                      "quantized layouts are not checked");
  }
  const DType dtype = ResolveModelDType(options.dtype, spec.dtype, "dtype");
  const int64_t dt = DTypeSizeBytes(dtype);
  WeightBreakdown out;
  out.num_parameters = NumParameters(spec);
  // Qwen3.5's wrappers build the Qwen3-VL tower beside the hybrid language model (qwen3_5.py).
  out.vision_encoder_parameters = VisionParameters(spec);
  out.audio_encoder_parameters = AudioParameters(spec);
  const int64_t vision_bytes = VisionRankBytes(spec, dt, tp);
  const int64_t audio_bytes = AudioRankBytes(spec, dt, tp);
  out.dtype = DTypeName(dtype);
  out.quantization = quant ? quant->method : "";

  const int64_t embedding_bytes = Mul(Mul(VocabRowsPerRank(spec.vocab_size, tp), spec.hidden_size), dt);
  // The rotary cos/sin cache: none where the family's attention has no RoPE (Jamba, Nemotron-H,
  // Granite-4.0-H with position_embedding_type "nope", Mamba-2: rope_cache_positions 0).
  const int64_t rope_bytes = RotaryCacheBytes(spec, dt, options.max_model_len);

  for (int64_t rank = 0; rank < pp; ++rank) {
    RankWeights r;
    r.pp_rank = rank;
    const bool first = rank == 0;
    const bool last = rank == pp - 1;
    if (first) r.embedding_bytes = embedding_bytes;
    if (last && (!spec.tie_word_embeddings || !first)) r.lm_head_bytes = embedding_bytes;
    if (last) r.norm_bytes = Mul(spec.hidden_size, dt);
    const auto [begin, end] = PipelineLayerRange(spec.num_layers, rank, pp);
    r.first_layer = begin;
    r.end_layer = end;
    for (int64_t i = begin; i < end; ++i) {
      LayerElements e = Layer(spec, spec.layers[static_cast<size_t>(i)], tp, true);
      ApplyUnquantizedModules(e.linears, quant, {i});  // hybrids are counted layer by layer
      AddLayerBytes(e, quant, dt, r);
      AddMpLinearLayout(r, e.linears, quant, dt, 1, options);
    }
    if (first) {
      // Zamba2 has no pipeline parallelism (CheckWeightLayout refuses it): its blocks are rank 0's.
      const LayerElements shared = SharedBlocks(spec, tp);
      r.attention_bytes = Add(r.attention_bytes, Mul(shared.mixer, dt));
      r.mlp_bytes = Add(r.mlp_bytes, Mul(shared.mlp, dt));
      r.norm_bytes = Add(r.norm_bytes, Mul(shared.norm, dt));
    }
    bool has_attention = false;
    for (int64_t i = begin; i < end; ++i) {
      has_attention = has_attention || spec.layers[static_cast<size_t>(i)].attention != AttentionKind::kNone;
    }
    if (has_attention) r.buffer_bytes = rope_bytes;
    r.vision_encoder_bytes = vision_bytes;
    r.audio_encoder_bytes = audio_bytes;
    AppendRank(r, out);
  }
  return out;
}

}  // namespace vllm_mem
