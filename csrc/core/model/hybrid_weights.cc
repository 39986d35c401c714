/*!
 * \file core/model/hybrid_weights.cc
 * \brief Weights of hybrid models per GPU, module by module as vLLM's model files build them:
 *        MambaMixer (Jamba), MambaMixer2 (Bamba, Granite-4.0-H, Nemotron-H, Falcon-H1, Mamba-2)
 *        with its group replication under TP, Qwen3-Next's GatedDeltaNet, the attention
 *        layers, MLP / MoE blocks and norms. The recurrent mixers' bytes are reported in
 *        RankWeights::attention_bytes (the layer's token mixer). Parameters are counted as the
 *        checkpoint holds them, without MTP layers (vLLM loads those only as a drafter).
 */
#include <string>

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

/*! Elements of one layer on one rank, by what RankWeights reports, plus float32 elements. */
struct LayerElements {
  int64_t mixer = 0;        //!< attention or recurrent mixer, model dtype
  int64_t mixer_fp32 = 0;   //!< parameters vLLM allocates in float32 (Mamba A)
  int64_t mlp = 0;
  int64_t norm = 0;
};

/*! Attention of a hybrid layer on one rank: QKVParallelLinear (KV heads replicated when TP
 *  exceeds them), o_proj, optional q/k norms and Qwen3-Next's output gate (q_proj doubled). */
void AddAttention(const ModelSpec& s, int64_t tp, LayerElements& e) {
  const int64_t heads = AttentionHeadsPerRank(s.num_attention_heads, tp);
  const int64_t kv = KvHeadsPerRank(s.num_kv_heads, tp);
  const bool gate = s.traits.attn_output_gate;
  const int64_t q = Mul(Mul(heads, s.head_dim), gate ? 2 : 1);
  const int64_t qkv_out = Add(q, Mul(2 * kv, s.head_dim));
  e.mixer = Add(e.mixer, Mul(s.hidden_size, qkv_out));
  if (s.traits.qkv_bias) e.mixer = Add(e.mixer, qkv_out);
  e.mixer = Add(e.mixer, Mul(Mul(heads, s.head_dim), s.hidden_size));
  if (s.traits.attention_out_bias) e.mixer = Add(e.mixer, s.hidden_size);
  e.mixer = Add(e.mixer, QkNormElements(s, heads, kv, tp));
}

/*! The recurrent mixer of one layer on one rank. */
void AddRecurrent(const ModelSpec& s, int64_t tp, bool per_rank, LayerElements& e) {
  const HybridSpec& h = *s.hybrid;
  const int64_t hidden = s.hidden_size;
  switch (h.kind) {
    case RecurrentMixerKind::kMamba1: {
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
      break;
    }
    case RecurrentMixerKind::kMamba2: {
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
      e.mixer = Add(e.mixer, Mul(hidden, in_out));
      if (h.proj_bias) e.mixer = Add(e.mixer, in_out);
      e.mixer = Add(e.mixer, Add(Mul(conv, h.conv_kernel), h.conv_bias ? conv : 0));
      e.mixer_fp32 = Add(e.mixer_fp32, heads);  // A
      e.mixer = Add(e.mixer, 2 * heads);          // D, dt_bias
      if (h.gated_norm) e.mixer = Add(e.mixer, i);
      e.mixer = Add(e.mixer, Mul(i, hidden));
      if (h.proj_bias) e.mixer = Add(e.mixer, hidden);
      break;
    }
    case RecurrentMixerKind::kGatedDeltaNet: {
      // Qwen3NextGatedDeltaNet: in_proj_qkvz, in_proj_ba, conv1d (no bias) over (q, k, v),
      // dt_bias and A_log per value head, RMSNormGated over one value head (replicated),
      // out_proj.
      const int64_t t = per_rank ? tp : 1;
      const int64_t key = Mul(h.num_k_heads, h.head_k_dim);
      const int64_t value = Mul(h.num_heads, h.head_dim);
      e.mixer = Add(e.mixer, Mul(hidden, Split(Add(2 * key, 2 * value), t, "in_proj_qkvz")));
      e.mixer = Add(e.mixer, Mul(hidden, Split(2 * h.num_heads, t, "in_proj_ba")));
      e.mixer = Add(e.mixer, Mul(Split(Add(2 * key, value), t, "conv_dim"), h.conv_kernel));
      e.mixer = Add(e.mixer, 2 * Split(h.num_heads, t, "linear_num_value_heads"));
      e.mixer = Add(e.mixer, h.head_dim);
      e.mixer = Add(e.mixer, Mul(Split(value, t, "linear value dim"), hidden));
      break;
    }
    case RecurrentMixerKind::kShortConv: {
      // LFM2's ShortConv (vllm short_conv.py): in_proj (B, C, x: 3 x conv_dim, merged column),
      // the depthwise conv (conv_dim x L_cache, column), out_proj (row); biases with conv_bias.
      const int64_t t = per_rank ? tp : 1;
      const int64_t dim = Split(h.intermediate_size, t, "conv_dim");
      e.mixer = Add(e.mixer, Mul(hidden, 3 * dim));
      e.mixer = Add(e.mixer, Mul(dim, h.conv_kernel));
      e.mixer = Add(e.mixer, Mul(dim, hidden));
      if (h.conv_bias) e.mixer = Add(e.mixer, Add(Add(3 * dim, dim), hidden));
      break;
    }
  }
}

/*! A gated (gate_up + down) or plain (up + down, Nemotron-H's ReLU^2: traits.gated_mlp false) MLP,
 *  column / row split. */
int64_t MlpElements(const ModelSpec& s, int64_t intermediate, int64_t tp, bool gated, const char* what) {
  const int64_t i = Split(intermediate, tp, what);
  int64_t n = Mul(Mul(s.hidden_size, i), gated ? 3 : 2);
  if (s.traits.mlp_bias) n = Add(n, Add(gated ? 2 * i : i, s.hidden_size));
  return n;
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
    e.mlp = Add(e.mlp, Mul(m.num_experts, MlpElements(s, m.expert_intermediate_size, tp, true, "moe_intermediate_size")));
    e.mlp = Add(e.mlp, Mul(s.hidden_size, m.num_experts));  // router, replicated
    if (m.shared_expert_intermediate_size > 0) {
      e.mlp = Add(e.mlp, MlpElements(s, m.shared_expert_intermediate_size, tp, true, "shared_intermediate_size"));
      if (m.shared_expert_gate) e.mlp = Add(e.mlp, s.hidden_size);
    }
    return;
  }
  e.mlp = Add(e.mlp, MlpElements(s, s.intermediate_size, tp, gated, "intermediate_size"));
}

/*! Norms of one layer: Nemotron-H and Mamba-2 blocks have one (the block's norm), the others an
 *  input norm and a norm before the MLP (traits.norms_per_layer, model_families.json). */
int64_t NormElements(const ModelSpec& s) { return Mul(s.traits.norms_per_layer, s.hidden_size); }

LayerElements Layer(const ModelSpec& s, const LayerSpec& l, int64_t tp, bool per_rank) {
  LayerElements e;
  if (l.attention != AttentionKind::kNone) AddAttention(s, per_rank ? tp : 1, e);
  if (l.recurrent_state) AddRecurrent(s, tp, per_rank, e);
  AddMlp(s, l, per_rank ? tp : 1, e);
  e.norm = NormElements(s);
  return e;
}


}  // namespace

int64_t HybridNumParameters(const ModelSpec& spec) {
  const int64_t embedding = Mul(spec.vocab_size, spec.hidden_size);
  int64_t n = spec.tie_word_embeddings ? embedding : Mul(2, embedding);
  for (const LayerSpec& l : spec.layers) {
    const LayerElements e = Layer(spec, l, 1, false);
    n = Add(n, Add(Add(e.mixer, e.mixer_fp32), Add(e.mlp, e.norm)));
  }
  return Add(n, spec.hidden_size);  // final norm
}

WeightBreakdown ComputeHybridWeights(const ModelSpec& spec, const WeightOptions& options) {
  const int64_t tp = options.tensor_parallel_size;
  const int64_t pp = options.pipeline_parallel_size;
  CheckWeightLayout(spec, options);
  if (spec.quantization || !options.quantization.empty()) {
    throw Unsupported("quantized weights of hybrid (Mamba / linear-attention) models are not modelled yet");
  }
  const DType dtype = ResolveModelDType(options.dtype, spec.dtype, "dtype");
  const int64_t dt = DTypeSizeBytes(dtype);
  WeightBreakdown out;
  out.num_parameters = HybridNumParameters(spec);
  out.dtype = DTypeName(dtype);

  const int64_t embedding_bytes = Mul(Mul(VocabRowsPerRank(spec.vocab_size, tp), spec.hidden_size), dt);
  const int64_t rotary_dim =
      static_cast<int64_t>(static_cast<double>(spec.head_dim) * spec.traits.partial_rotary_factor);
  // The rotary cos/sin cache: none where the family's attention has no RoPE (Jamba, Nemotron-H,
  // Granite-4.0-H with position_embedding_type "nope", Mamba-2: rope_cache_positions 0).
  const int64_t rope_bytes = Mul(Mul(spec.traits.rope_cache_positions, rotary_dim), dt);

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
      const LayerElements e = Layer(spec, spec.layers[static_cast<size_t>(i)], tp, true);
      r.attention_bytes = Add(r.attention_bytes, Add(Mul(e.mixer, dt), Mul(e.mixer_fp32, kFloat32Bytes)));
      r.mlp_bytes = Add(r.mlp_bytes, Mul(e.mlp, dt));
      r.norm_bytes = Add(r.norm_bytes, Mul(e.norm, dt));
    }
    bool has_attention = false;
    for (int64_t i = begin; i < end; ++i) {
      has_attention = has_attention || spec.layers[static_cast<size_t>(i)].attention != AttentionKind::kNone;
    }
    if (has_attention) r.buffer_bytes = rope_bytes;
    AppendRank(r, out);
  }
  return out;
}

}  // namespace vllm_mem
