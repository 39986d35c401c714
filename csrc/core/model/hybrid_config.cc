/*!
 * \file core/model/hybrid_config.cc
 * \brief Layer types and recurrent-mixer dimensions of hybrid models, read as vLLM's model files
 *        read them (each rule names its file).
 */
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/base/checked_math.h"
#include "core/model/config_fields.h"
#include "core/model/config_readers.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/model/hybrid_spec.h"
#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {
namespace {

const JsonValue* Present(const JsonValue& obj, const char* key) {
  const JsonValue* v = obj.Find(key);
  return (v == nullptr || v->IsNull()) ? nullptr : v;
}

/*! An integer field, or \p fallback when absent; integral floats are accepted (as model_spec.cc). */
int64_t IntOr(const JsonValue& obj, std::initializer_list<const char*> keys, int64_t fallback) {
  for (const char* key : keys) {
    const JsonValue* v = Present(obj, key);
    if (v == nullptr) continue;
    if (!v->IsNumber()) throw InvalidArgument(key, "must be an integer, got " + v->KindName());
    const auto& n = v->AsNumber();
    if (n.integer) return *n.integer;
    if (n.value > -9.2e18 && n.value < 9.2e18 && n.value == static_cast<double>(static_cast<int64_t>(n.value))) {
      return static_cast<int64_t>(n.value);
    }
    throw InvalidArgument(key, "must be an integer");
  }
  return fallback;
}

/*! A positive dimension, bounded like the other model dimensions (vllm_mem/base/limits.h). */
int64_t Dim(const JsonValue& obj, std::initializer_list<const char*> keys, int64_t fallback, int64_t bound) {
  const int64_t v = IntOr(obj, keys, fallback);
  const char* name = *keys.begin();
  if (v <= 0) {
    throw InvalidArgument(name, v == fallback && fallback <= 0 ? "required field missing from config.json"
                                                               : "must be a positive integer, got " + std::to_string(v));
  }
  RequireAtMost(v, bound, name, "vllm_mem/base/limits.h: 100x beyond real models");
  return v;
}

bool BoolOr(const JsonValue& obj, const char* key, bool fallback) {
  const JsonValue* v = Present(obj, key);
  if (v == nullptr) return fallback;
  if (!v->IsBool()) throw InvalidArgument(key, "must be true or false, got " + v->KindName());
  return v->AsBool();
}

std::string StringOr(const JsonValue& obj, const char* key) {
  const JsonValue* v = Present(obj, key);
  if (v == nullptr) return "";
  if (!v->IsString()) throw InvalidArgument(key, "must be a string, got " + v->KindName());
  return v->AsString();
}

/*! Mamba-2's heads split evenly into its B/C groups: vLLM's SSD kernels assert it
 *  (selective_state_update: "nheads must be divisible by ngroups"), and MambaMixer2 maps each
 *  group to num_heads / n_groups heads when it shards them. */
void RequireGroupsDivideHeads(const HybridSpec& h, const char* groups_key, const char* heads_key) {
  if (h.num_heads % h.n_groups != 0) {
    throw InvalidArgument(groups_key, "nheads must be divisible by ngroups: " + std::string(heads_key) + " (" +
                                          std::to_string(h.num_heads) + ") is not a multiple of " + groups_key +
                                          " (" + std::to_string(h.n_groups) + ")");
  }
}

void SetAttention(LayerSpec& l, bool attention) { l.attention = attention ? AttentionKind::kFull : AttentionKind::kNone; }

/*! The spellings of Mamba-2's group / state / conv fields in one family's config. */
struct Mamba2Keys {
  const char* groups;
  const char* heads;  //!< named in the groups-divide-heads error
  const char* state;
  const char* conv;
  const char* chunk;
  const char* conv_bias;
  const char* proj_bias;
  int64_t default_groups;
  int64_t default_chunk;
  int64_t default_state = 128;
};

/*! Groups (dividing the heads), state size, conv kernel, SSD chunk and biases, with transformers'
 *  defaults (state 128, kernel 4, conv bias on, projection bias off; groups and chunk per family). */
void ReadMamba2Shape(HybridSpec& h, const JsonValue& text, const Mamba2Keys& k) {
  h.n_groups = Dim(text, {k.groups}, k.default_groups, kMaxAttentionHeads);
  RequireGroupsDivideHeads(h, k.groups, k.heads);
  h.state_size = Dim(text, {k.state}, k.default_state, kMaxHeadDim);
  h.conv_kernel = Dim(text, {k.conv}, 4, 1 << 10);
  h.chunk_size = Dim(text, {k.chunk}, k.default_chunk, kMaxModelLenTokens);
  h.conv_bias = BoolOr(text, k.conv_bias, true);
  h.proj_bias = BoolOr(text, k.proj_bias, false);
}

/*! Mamba-2 dimensions under the spelling of Bamba / Granite-4.0-H / Falcon-H1 (mamba_*). The
 *  head dim "auto" (or absent) is mamba_expand * hidden / mamba_n_heads (transformers' BambaConfig). */
void ReadMamba2Prefixed(HybridSpec& h, const ModelSpec& spec, const JsonValue& text) {
  h.kind = RecurrentMixerKind::kMamba2;
  const int64_t expand = Dim(text, {"mamba_expand"}, 2, 1 << 10);
  h.num_heads = Dim(text, {"mamba_n_heads"}, 128, kMaxAttentionHeads);
  // Falcon-H1 may size the SSM independently of the expansion (mamba_d_ssm).
  h.intermediate_size = Dim(text, {"mamba_d_ssm"}, CheckedMul(expand, spec.hidden_size, "mamba_expand"),
                            kMaxIntermediateSize);
  const JsonValue* d_head = Present(text, "mamba_d_head");
  if (d_head == nullptr || d_head->IsString()) {
    if (h.intermediate_size % h.num_heads != 0) {
      throw InvalidArgument("mamba_d_head", "is auto, and mamba_expand * hidden_size (" +
                                                std::to_string(h.intermediate_size) +
                                                ") is not divisible by mamba_n_heads");
    }
    h.head_dim = h.intermediate_size / h.num_heads;
  } else {
    h.head_dim = Dim(text, {"mamba_d_head"}, 0, kMaxHeadDim);
  }
  ReadMamba2Shape(h, text, {"mamba_n_groups", "mamba_n_heads", "mamba_d_state", "mamba_d_conv", "mamba_chunk_size",
                            "mamba_conv_bias", "mamba_proj_bias", 1, 256});
}

/*! layer_types ("mamba"/"attention") or attn_layer_indices (Bamba). */
void ReadListedLayers(ModelSpec& spec, const JsonValue& text) {
  if (const JsonValue* types = Present(text, "layer_types"); types != nullptr) {
    if (!types->IsArray() || static_cast<int64_t>(types->AsArray().size()) != spec.num_layers) {
      throw InvalidArgument("layer_types", "must be a list of num_hidden_layers (" + std::to_string(spec.num_layers) +
                                               ") strings");
    }
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      const JsonValue& t = types->AsArray()[i];
      const std::string k = t.IsString() ? t.AsString() : "";
      if (k == "attention") {
        SetAttention(spec.layers[i], true);
      } else if (k == "mamba") {
        SetAttention(spec.layers[i], false);
        spec.layers[i].recurrent_state = true;
      } else {
        throw InvalidArgument("layer_types", "entries must be \"mamba\" or \"attention\", got " +
                                                 (t.IsString() ? EchoValue(k) : t.KindName()));
      }
    }
    return;
  }
  for (LayerSpec& l : spec.layers) {
    SetAttention(l, false);
    l.recurrent_state = true;
  }
  if (const JsonValue* idx = Present(text, "attn_layer_indices"); idx != nullptr) {
    if (!idx->IsArray()) throw InvalidArgument("attn_layer_indices", "must be a list of layer indices");
    for (const JsonValue& e : idx->AsArray()) {
      const int64_t i = e.IsNumber() && e.AsNumber().integer ? *e.AsNumber().integer : -1;
      if (i < 0 || i >= spec.num_layers) {
        throw InvalidArgument("attn_layer_indices", "entries must be layer indices in [0, " +
                                                        std::to_string(spec.num_layers) + ")");
      }
      SetAttention(spec.layers[static_cast<size_t>(i)], true);
      spec.layers[static_cast<size_t>(i)].recurrent_state = false;
    }
  }
}

/*! A Jamba layer offset: transformers' JambaConfig._check_supported_offset refuses one at or past
 *  its period (i % period never equals it, so no layer would get attention / experts: a 51.6 B
 *  model read as 9.29 B); a negative one matches no layer either. */
int64_t JambaOffset(const JsonValue& text, const char* key, int64_t fallback, const char* what,
                    const char* period_key, int64_t period) {
  const int64_t offset = IntOr(text, {key}, fallback);
  if (offset < 0 || offset >= period) {
    throw InvalidArgument(key, std::string(what) + " layer offset (" + std::to_string(offset) +
                                   ") must be smaller than " + what + " layer period (" + std::to_string(period) +
                                   ", " + period_key + ") and not negative");
  }
  return offset;
}

/*! Jamba (vllm jamba.py, transformers JambaConfig.layers_block_type): attention where
 *  i % attn_layer_period == attn_layer_offset, Mamba-1 elsewhere; MoE where
 *  i % expert_layer_period == expert_layer_offset (when num_experts > 1). */
void ReadJamba(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  const int64_t attn_period = Dim(text, {"attn_layer_period"}, 8, kMaxNumLayers);
  const int64_t attn_offset = JambaOffset(text, "attn_layer_offset", 4, "attention", "attn_layer_period", attn_period);
  const int64_t expert_period = Dim(text, {"expert_layer_period"}, 2, kMaxNumLayers);
  const int64_t expert_offset =
      JambaOffset(text, "expert_layer_offset", 1, "expert", "expert_layer_period", expert_period);
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const int64_t idx = static_cast<int64_t>(i);
    const bool attention = idx % attn_period == attn_offset;
    SetAttention(spec.layers[i], attention);
    spec.layers[i].recurrent_state = !attention;
    spec.layers[i].moe = spec.moe.has_value() && spec.moe->num_experts > 1 && idx % expert_period == expert_offset;
  }
  h.kind = RecurrentMixerKind::kMamba1;
  h.intermediate_size = CheckedMul(Dim(text, {"mamba_expand"}, 2, 1 << 10), spec.hidden_size, "mamba_expand");
  h.state_size = Dim(text, {"mamba_d_state"}, 16, kMaxHeadDim);
  h.conv_kernel = Dim(text, {"mamba_d_conv"}, 4, 1 << 10);
  // dt_rank "auto" is ceil(hidden / 16) (transformers JambaConfig); kept in head_dim for the weights.
  const JsonValue* dt = Present(text, "mamba_dt_rank");
  h.head_dim = (dt == nullptr || dt->IsString()) ? CeilDiv(spec.hidden_size, 16) : Dim(text, {"mamba_dt_rank"}, 0, kMaxHiddenSize);
  h.conv_bias = BoolOr(text, "mamba_conv_bias", true);
  h.proj_bias = BoolOr(text, "mamba_proj_bias", false);
}

/*! Nemotron-H (vllm nemotron_h.py): hybrid_override_pattern, one character per layer: M Mamba-2,
 *  * attention, - MLP, E MoE. Each layer is exactly one of them. */
void ReadNemotronH(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  const std::string pattern = StringOr(text, "hybrid_override_pattern");
  if (static_cast<int64_t>(pattern.size()) != spec.num_layers) {
    throw InvalidArgument("hybrid_override_pattern", "must have one character per layer (num_hidden_layers = " +
                                                         std::to_string(spec.num_layers) + "), got " +
                                                         std::to_string(pattern.size()));
  }
  for (size_t i = 0; i < pattern.size(); ++i) {
    LayerSpec& l = spec.layers[i];
    const char c = pattern[i];
    if (c != 'M' && c != '*' && c != '-' && c != 'E') {
      throw InvalidArgument("hybrid_override_pattern", "characters must be M, *, - or E, got " +
                                                           EchoValue(std::string(1, c)));
    }
    SetAttention(l, c == '*');
    l.recurrent_state = c == 'M';
    l.moe = c == 'E';
    l.mlp = c == '-' || c == 'E';
  }
  // vLLM's NemotronHMoE reads n_routed_experts, num_experts_per_tok and moe_intermediate_size
  // from the config for every E layer; without them (spec.moe unset) the layer would be sized as
  // nothing, or as a dense MLP.
  if (!spec.moe.has_value() && pattern.find('E') != std::string::npos) {
    throw InvalidArgument("n_routed_experts", "hybrid_override_pattern has MoE layers (E), which vLLM builds from "
                                              "n_routed_experts, num_experts_per_tok and moe_intermediate_size; "
                                              "this config has no routed experts");
  }
  h.kind = RecurrentMixerKind::kMamba2;
  h.num_heads = Dim(text, {"mamba_num_heads"}, 0, kMaxAttentionHeads);
  h.head_dim = Dim(text, {"mamba_head_dim"}, 0, kMaxHeadDim);
  // vLLM's NemotronHMamba2Mixer: intermediate_size = mamba_num_heads * mamba_head_dim.
  h.intermediate_size = CheckedMul(h.num_heads, h.head_dim, "mamba_num_heads");
  ReadMamba2Shape(h, text, {"n_groups", "mamba_num_heads", "ssm_state_size", "conv_kernel", "chunk_size",
                            "use_conv_bias", "use_bias", 8, 128});
  h.ssm_dtype_from_config = true;
  // transformers' NemotronHConfig defaults mamba_ssm_cache_dtype to "float32", so vLLM's
  // getattr(hf_config, "mamba_ssm_cache_dtype", ...) sees float32 when the file omits it.
  h.config_ssm_cache_dtype = StringOr(text, "mamba_ssm_cache_dtype");
  if (h.config_ssm_cache_dtype.empty()) h.config_ssm_cache_dtype = "float32";
}

/*! layer_types when present: a list of num_hidden_layers strings; nullptr when absent. */
const JsonValue* LayerTypes(const ModelSpec& spec, const JsonValue& text) {
  const JsonValue* types = Present(text, "layer_types");
  if (types != nullptr && (!types->IsArray() || static_cast<int64_t>(types->AsArray().size()) != spec.num_layers)) {
    throw InvalidArgument("layer_types", "must be a list of num_hidden_layers (" + std::to_string(spec.num_layers) +
                                             ") strings");
  }
  return types;
}

/*! Whether layer \p i of layer_types is "full_attention"; \p other is the only other name allowed. */
bool FullAttentionAt(const JsonValue& types, size_t i, const char* other) {
  const JsonValue& t = types.AsArray()[i];
  const std::string k = t.IsString() ? t.AsString() : "";
  if (k != "full_attention" && k != other) {
    throw InvalidArgument("layer_types", std::string("entries must be \"") + other + "\" or \"full_attention\", got " +
                                             (t.IsString() ? EchoValue(k) : t.KindName()));
  }
  return k == "full_attention";
}

/*! Qwen3-Next / Qwen3.5 (vllm qwen3_next.py, qwen3_5.py): layer_types "linear_attention" /
 *  "full_attention", else full attention every full_attention_interval-th layer. */
void ReadGatedDeltaNet(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  const JsonValue* types = LayerTypes(spec, text);
  const int64_t interval = Dim(text, {"full_attention_interval"}, 4, kMaxNumLayers);
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    bool full = (static_cast<int64_t>(i) + 1) % interval == 0;
    if (types != nullptr) full = FullAttentionAt(*types, i, "linear_attention");
    SetAttention(spec.layers[i], full);
    spec.layers[i].recurrent_state = !full;
  }
  h.kind = RecurrentMixerKind::kGatedDeltaNet;
  h.num_k_heads = Dim(text, {"linear_num_key_heads"}, 0, kMaxAttentionHeads);
  h.num_heads = Dim(text, {"linear_num_value_heads"}, 0, kMaxAttentionHeads);
  h.head_k_dim = Dim(text, {"linear_key_head_dim"}, 0, kMaxHeadDim);
  h.head_dim = Dim(text, {"linear_value_head_dim"}, 0, kMaxHeadDim);
  h.conv_kernel = Dim(text, {"linear_conv_kernel_dim"}, 4, 1 << 10);
  if (h.num_heads % h.num_k_heads != 0) {
    throw InvalidArgument("linear_num_value_heads", "must be a multiple of linear_num_key_heads (" +
                                                        std::to_string(h.num_k_heads) + ")");
  }
  if (const JsonValue* field = FamilyTrait(spec.model_type, "ssm_dtype_field")) {
    // Qwen3_5ForConditionalGenerationConfig.verify_and_update_config: with
    // --mamba-ssm-cache-dtype auto, the SSM state takes text_config.mamba_ssm_dtype.
    h.ssm_dtype_from_config = true;
    h.config_ssm_cache_dtype = StringOr(text, field->AsString().c_str());
  }
}

/*! Falcon-H1 (vllm falcon_h1.py): every layer runs attention and a Mamba-2 mixer in parallel. */
void ReadParallelMamba2(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  ReadMamba2Prefixed(h, spec, text);
  h.gated_norm = BoolOr(text, "mamba_rms_norm", false);
  for (LayerSpec& l : spec.layers) {
    SetAttention(l, true);
    l.recurrent_state = true;
  }
}

/*! Bamba / Granite-4.0-H: Mamba-2 layers and attention layers listed by the config. */
void ReadListedMamba2(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  ReadMamba2Prefixed(h, spec, text);
  ReadListedLayers(spec, text);
  const JsonValue* field = FamilyTrait(spec.model_type, "shared_mlp_field");
  if (field == nullptr) return;
  // GraniteMoeHybrid: every layer has the MoE block when num_local_experts > 0, plus a shared
  // MLP of shared_intermediate_size; otherwise a dense shared MLP only.
  const char* key = field->AsString().c_str();
  const int64_t shared = IntOr(text, {key}, 0);
  RequireNonNegative(shared, key);
  RequireAtMost(shared, kMaxIntermediateSize, key, "vllm_mem/base/limits.h");
  if (spec.moe) {
    spec.moe->shared_expert_intermediate_size = shared;
    spec.moe->shared_expert_gate = false;  // a plain shared MLP, no sigmoid gate
  } else if (shared > 0) {
    spec.intermediate_size = shared;
  }
  for (LayerSpec& l : spec.layers) l.moe = spec.moe.has_value();
}

/*! Mamba2ForCausalLM (vllm mamba2.py): every layer a Mamba-2 mixer, no attention, no MLP. */
void ReadMamba2(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  h.kind = RecurrentMixerKind::kMamba2;
  h.num_heads = Dim(text, {"num_heads"}, 0, kMaxAttentionHeads);
  h.head_dim = Dim(text, {"head_dim"}, 64, kMaxHeadDim);
  h.intermediate_size = CheckedMul(Dim(text, {"expand"}, 2, 1 << 10), spec.hidden_size, "expand");
  ReadMamba2Shape(h, text, {"n_groups", "num_heads", "state_size", "conv_kernel", "chunk_size", "use_conv_bias",
                            "use_bias", 1, 256});
  for (LayerSpec& l : spec.layers) {
    SetAttention(l, false);
    l.recurrent_state = true;
    l.mlp = false;
  }
}

/*! A pure Mamba-1 model (vllm mamba.py, transformers MambaConfig / FalconMambaConfig): every
 *  layer a MambaMixer, no attention, no MLP. intermediate_size absent is expand * hidden_size,
 *  time_step_rank "auto" (or absent) ceil(hidden_size / 16), as MambaConfig.__init__ computes
 *  them; MambaMixer's x_proj / dt_proj widths follow time_step_rank (kept in head_dim). */
void ReadPureMamba1(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  h.kind = RecurrentMixerKind::kMamba1;
  const int64_t expand = Dim(text, {"expand"}, 2, 1 << 10);
  h.intermediate_size =
      Dim(text, {"intermediate_size"}, CheckedMul(expand, spec.hidden_size, "expand"), kMaxIntermediateSize);
  h.state_size = Dim(text, {"state_size"}, 16, kMaxHeadDim);
  h.conv_kernel = Dim(text, {"conv_kernel"}, 4, 1 << 10);
  const JsonValue* rank = Present(text, "time_step_rank");
  h.head_dim = (rank == nullptr || rank->IsString()) ? CeilDiv(spec.hidden_size, 16)
                                                     : Dim(text, {"time_step_rank"}, 0, kMaxHiddenSize);
  if (rank != nullptr && rank->IsString() && rank->AsString() != "auto") {
    throw InvalidArgument("time_step_rank", "must be an integer or \"auto\", got " + EchoValue(rank->AsString()));
  }
  h.conv_bias = BoolOr(text, "use_conv_bias", true);
  h.proj_bias = BoolOr(text, "use_bias", false);
  for (LayerSpec& l : spec.layers) {
    SetAttention(l, false);
    l.recurrent_state = true;
    l.mlp = false;
  }
}

/*! LFM2's feed-forward width (vllm lfm2.py Lfm2MLP, transformers Lfm2Config): block_ff_dim (the
 *  original key, which transformers prefers) or intermediate_size; with block_auto_adjust_ff_dim,
 *  int(2 * I / 3), times block_ffn_dim_multiplier when set, rounded up to block_multiple_of. */
int64_t Lfm2FeedForward(const JsonValue& text, int64_t intermediate) {
  int64_t ff = Dim(text, {"block_ff_dim", "intermediate_size"}, intermediate, kMaxIntermediateSize);
  if (!BoolOr(text, "block_auto_adjust_ff_dim", true)) return ff;
  ff = 2 * ff / 3;
  if (const JsonValue* m = Present(text, "block_ffn_dim_multiplier"); m != nullptr) {
    if (!m->IsNumber() || !(m->AsNumber().value > 0.0 && m->AsNumber().value <= 64.0)) {
      throw InvalidArgument("block_ffn_dim_multiplier", "must be a number in (0, 64]");
    }
    ff = static_cast<int64_t>(m->AsNumber().value * static_cast<double>(ff));
  }
  const int64_t multiple = Dim(text, {"block_multiple_of"}, 256, kMaxIntermediateSize);
  return CheckedMul(multiple, CeilDiv(ff, multiple), "block_multiple_of");
}

/*! LFM2 (vllm lfm2.py, transformers Lfm2Config): layer_types "conv" (ShortConv) / "full_attention",
 *  else full attention at full_attn_idxs (every layer when absent); every layer has the SwiGLU
 *  feed-forward. ShortConv's width is conv_dim (vLLM builds in_proj from it), its kernel conv_L_cache. */
void ReadLfm2(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  const JsonValue* types = LayerTypes(spec, text);
  const JsonValue* idxs = Present(text, "full_attn_idxs");
  if (types == nullptr && idxs != nullptr && !idxs->IsArray()) {
    throw InvalidArgument("full_attn_idxs", "must be a list of layer indices");
  }
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    bool attention = idxs == nullptr;  // transformers: every layer attends when neither is given
    if (types != nullptr) {
      attention = FullAttentionAt(*types, i, "conv");
    } else if (idxs != nullptr) {
      for (const JsonValue& e : idxs->AsArray()) {
        if (!e.IsNumber() || !e.AsNumber().integer || *e.AsNumber().integer < 0 ||
            *e.AsNumber().integer >= spec.num_layers) {
          throw InvalidArgument("full_attn_idxs", "entries must be layer indices in [0, " +
                                                      std::to_string(spec.num_layers) + ")");
        }
        attention = attention || *e.AsNumber().integer == static_cast<int64_t>(i);
      }
    }
    SetAttention(spec.layers[i], attention);
    spec.layers[i].recurrent_state = !attention;
  }
  h.kind = RecurrentMixerKind::kShortConv;
  h.intermediate_size = Dim(text, {"conv_dim"}, spec.hidden_size, kMaxHiddenSize);
  if (h.intermediate_size != spec.hidden_size) {
    // vLLM's ShortConv projects from conv_dim: a different hidden size cannot be loaded.
    throw InvalidArgument("conv_dim", "must equal hidden_size (" + std::to_string(spec.hidden_size) +
                                          "): vLLM's ShortConv in_proj takes conv_dim inputs");
  }
  h.conv_kernel = Dim(text, {"conv_L_cache"}, 3, 1 << 10);
  h.conv_bias = BoolOr(text, "conv_bias", false);
  spec.intermediate_size = Lfm2FeedForward(text, spec.intermediate_size);
}

/*! A positive integer of Kimi-Linear's linear_attn_config, named with its parent. */
int64_t KdaDim(const JsonValue& kda, const char* key, int64_t bound) {
  const std::string field = std::string("linear_attn_config.") + key;
  const JsonValue* v = Present(kda, key);
  if (v == nullptr) throw InvalidArgument(field, "required field missing from config.json");
  const int64_t n = AsInteger(*v, field);
  RequirePositiveAtMost(n, bound, field.c_str(), "vllm_mem/base/limits.h: 100x beyond real models");
  return n;
}

/*! KimiLinearConfig.is_kda_layer: layer i runs KDA when i + 1 (1-based) is in kda_layers. */
std::vector<bool> KdaLayers(const JsonValue& kda, int64_t num_layers) {
  const JsonValue* list = Present(kda, "kda_layers");
  if (list == nullptr || !list->IsArray()) {
    throw InvalidArgument("linear_attn_config.kda_layers", "must be a list of 1-based layer numbers");
  }
  std::vector<bool> out(static_cast<size_t>(num_layers), false);
  for (const JsonValue& e : list->AsArray()) {
    const int64_t n = e.IsNumber() && e.AsNumber().integer ? *e.AsNumber().integer : 0;
    if (n < 1 || n > num_layers) {
      throw InvalidArgument("linear_attn_config.kda_layers",
                            "entries must be 1-based layer numbers in [1, " + std::to_string(num_layers) + "]");
    }
    out[static_cast<size_t>(n - 1)] = true;
  }
  return out;
}

/*! What vLLM's kimi_linear.py asserts or refuses before it builds a layer. */
void CheckKimiLinearSupported(const ModelSpec& spec, const JsonValue& text) {
  if (!spec.mla) throw InvalidArgument("kv_lora_rank", "required: Kimi-Linear's full-attention layers are MLA");
  // KimiMLAAttention: assert self.q_lora_rank is None; assert self.use_nope is True.
  if (spec.mla->q_lora_rank > 0) {
    throw InvalidArgument("q_lora_rank", "must be null: vLLM's KimiMLAAttention asserts q_lora_rank is None");
  }
  if (!OptionalBool(text, "mla_use_nope").value_or(false)) {
    throw InvalidArgument("mla_use_nope", "must be true: vLLM's KimiMLAAttention asserts use_nope is True");
  }
  const std::string act = OptionalString(text, "hidden_act");
  if (!act.empty() && act != "silu") {
    throw InvalidArgument("hidden_act", "Unsupported activation: " + EchoValue(act) + ". Only silu is supported for now.");
  }
}

/*! Kimi-Linear (vllm kimi_linear.py, layers/kda.py): Kimi Delta Attention on the kda_layers,
 *  MLA elsewhere; MoE by first_k_dense_replace / moe_layer_freq (ResolveMoeLayers, as DeepSeek).
 *  KimiLinearForCausalLM builds its own ParallelLMHead whatever tie_word_embeddings says. */
void ReadKimiLinear(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  CheckKimiLinearSupported(spec, text);
  const JsonValue* kda = Present(text, "linear_attn_config");
  if (kda == nullptr || !kda->IsObject()) {
    throw InvalidArgument("linear_attn_config", "must be an object (num_heads, head_dim, short_conv_kernel_size, "
                                                "kda_layers): vLLM sizes the KDA state from it");
  }
  const std::vector<bool> is_kda = KdaLayers(*kda, spec.num_layers);
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    spec.layers[i].attention = is_kda[i] ? AttentionKind::kNone : AttentionKind::kMla;
    spec.layers[i].recurrent_state = is_kda[i];
  }
  h.kind = RecurrentMixerKind::kKimiDelta;
  h.num_heads = h.num_k_heads = KdaDim(*kda, "num_heads", kMaxAttentionHeads);
  h.head_dim = h.head_k_dim = KdaDim(*kda, "head_dim", kMaxHeadDim);
  h.conv_kernel = KdaDim(*kda, "short_conv_kernel_size", 1 << 10);
  spec.tie_word_embeddings = false;
}

/*! transformers' Zamba2Config default layers_block_type (54 layers, the Zamba2-2.7B pattern). */
std::vector<std::string> Zamba2DefaultBlockTypes() {
  std::vector<std::string> types{"mamba"};
  for (int i = 0; i < 7; ++i) {
    types.insert(types.end(), 5, "mamba");
    types.push_back("hybrid");
  }
  for (int run : {4, 3, 2}) {
    types.insert(types.end(), run, "mamba");
    if (run != 2) types.push_back("hybrid");
  }
  return types;
}

/*! Zamba2's layers_block_type: every layer is a Mamba-2 decoder layer; a "hybrid" one also runs a
 *  shared transformer block, with its own KV cache (zamba2.py gives each position its Attention).
 *  No layer has an MLP of its own. */
void ReadZamba2BlockTypes(ModelSpec& spec, const JsonValue& text) {
  std::vector<std::string> types;
  if (const JsonValue* list = Present(text, "layers_block_type"); list != nullptr) {
    if (!list->IsArray()) throw InvalidArgument("layers_block_type", "must be a list of \"mamba\" / \"hybrid\"");
    for (const JsonValue& t : list->AsArray()) {
      const std::string k = t.IsString() ? t.AsString() : "";
      if (k != "mamba" && k != "hybrid") {
        throw InvalidArgument("layers_block_type", "entries must be \"mamba\" or \"hybrid\", got " +
                                                       (t.IsString() ? EchoValue(k) : t.KindName()));
      }
      types.push_back(k);
    }
  } else {
    types = Zamba2DefaultBlockTypes();
  }
  if (static_cast<int64_t>(types.size()) != spec.num_layers) {
    throw InvalidArgument("layers_block_type", "must have num_hidden_layers (" + std::to_string(spec.num_layers) +
                                                   ") entries, got " + std::to_string(types.size()));
  }
  for (size_t i = 0; i < types.size(); ++i) {
    SetAttention(spec.layers[i], types[i] == "hybrid");
    spec.layers[i].recurrent_state = true;
    spec.layers[i].mlp = false;
  }
}

/*! Zamba2's shared transformer blocks as transformers' Zamba2Config derives them (its values win over
 *  the file's): attention over the concatenated 2 * hidden_size input, attention_head_dim =
 *  2 * hidden_size / num_attention_heads, one KV head per query head (zamba2.py builds Attention and
 *  QKVParallelLinear without a KV head count); RoPE only with use_mem_rope, over 16,384 positions with
 *  use_long_context; lm_head tied to embed_tokens whatever tie_word_embeddings says. */
void ReadZamba2SharedBlocks(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  const std::string act = StringOr(text, "hidden_act");
  if (!act.empty() && act != "gelu") {
    throw InvalidArgument("hidden_act", "Only GELU activation is supported (got `hidden_act`: " + EchoValue(act) + ")");
  }
  const int64_t attention_hidden = CheckedMul(2, spec.hidden_size, "hidden_size");
  if (attention_hidden % spec.num_attention_heads != 0) {
    throw InvalidArgument("num_attention_heads", "attention_hidden_size (2 * hidden_size = " +
                                                     std::to_string(attention_hidden) +
                                                     ") must be divisible by num_attention_heads");
  }
  spec.head_dim = attention_hidden / spec.num_attention_heads;
  spec.num_kv_heads = spec.num_attention_heads;
  spec.tie_word_embeddings = true;
  spec.traits.mlp_bias = BoolOr(text, "add_bias_linear", false);
  if (!BoolOr(text, "use_mem_rope", false)) {
    spec.traits.rope_cache_positions = 0;
  } else if (BoolOr(text, "use_long_context", false)) {
    spec.max_position_embeddings = spec.traits.rope_cache_positions = 16384;
  }
  h.shared_blocks = Dim(text, {"num_mem_blocks"}, 1, kMaxNumLayers);
  h.adapter_rank = Dim(text, {"adapter_rank"}, 128, kMaxHiddenSize);
  h.shared_attention_adapters = BoolOr(text, "use_shared_attention_adapter", false);
}

/*! Zamba2 (vllm zamba2.py, transformers Zamba2Config): Mamba-2 mixers of mamba_expand * hidden_size,
 *  n_mamba_heads heads of mamba_headdim = that / n_mamba_heads, mamba_ngroups groups, on every layer,
 *  and the shared transformer blocks at the hybrid layers. */
void ReadZamba2(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  ReadZamba2BlockTypes(spec, text);
  ReadZamba2SharedBlocks(spec, h, text);
  h.kind = RecurrentMixerKind::kMamba2;
  h.intermediate_size = CheckedMul(Dim(text, {"mamba_expand"}, 2, 1 << 10), spec.hidden_size, "mamba_expand");
  h.num_heads = Dim(text, {"n_mamba_heads"}, 8, kMaxAttentionHeads);
  if (h.intermediate_size % h.num_heads != 0) {
    throw InvalidArgument("n_mamba_heads", "must divide mamba_expand * hidden_size (" +
                                               std::to_string(h.intermediate_size) + ")");
  }
  h.head_dim = h.intermediate_size / h.num_heads;
  ReadMamba2Shape(h, text, {"mamba_ngroups", "n_mamba_heads", "mamba_d_state", "mamba_d_conv", "chunk_size",
                            "use_conv_bias", "add_bias_linear", 1, 256, 64});
}

/*! MiniMax-Text-01's layer types as MiniMaxText01Model reads them: attn_type_list, else
 *  decoder_attention_types (0 linear, 1 full), else layer_types ("linear_attention" /
 *  "full_attention", transformers' MiniMaxConfig), else full attention on every layer. True: full. */
std::vector<bool> MiniMaxFullAttentionLayers(const ModelSpec& spec, const JsonValue& text) {
  std::vector<bool> full(static_cast<size_t>(spec.num_layers), true);
  for (const char* key : {"attn_type_list", "decoder_attention_types"}) {
    const JsonValue* list = Present(text, key);
    if (list == nullptr) continue;
    if (!list->IsArray() || static_cast<int64_t>(list->AsArray().size()) != spec.num_layers) {
      throw InvalidArgument(key, "must be a list of num_hidden_layers (" + std::to_string(spec.num_layers) +
                                     ") attention types (0 linear, 1 full)");
    }
    for (size_t i = 0; i < full.size(); ++i) {
      const JsonValue& t = list->AsArray()[i];
      const int64_t type = t.IsNumber() && t.AsNumber().integer ? *t.AsNumber().integer : -1;
      if (type != 0 && type != 1) {
        throw InvalidArgument(key, "Unsupported attention_type: entries must be 0 (linear) or 1 (full)");
      }
      full[i] = type == 1;
    }
    return full;
  }
  if (const JsonValue* types = LayerTypes(spec, text)) {
    for (size_t i = 0; i < full.size(); ++i) full[i] = FullAttentionAt(*types, i, "linear_attention");
  }
  return full;
}

/*! MiniMax-Text-01 / MiniMax-M1 (vllm minimax_text_01.py, layers/mamba/linear_attn.py): lightning
 *  attention (MiniMaxText01LinearAttention: num_attention_heads x head_dim, its state
 *  linear_attention_state_shape) on the linear layers, full attention on the others, the MoE of
 *  num_local_experts on every layer (a dense MLP with one expert). What vLLM builds beyond that is
 *  refused by name: per-layer expert counts and the shared MLP + coefficient. */
void ReadMiniMaxText01(ModelSpec& spec, HybridSpec& h, const JsonValue& text) {
  const std::vector<bool> full = MiniMaxFullAttentionLayers(spec, text);
  if (const JsonValue* e = Present(text, "num_local_experts"); e != nullptr && e->IsArray()) {
    throw InvalidArgument("num_local_experts", "per-layer expert counts (a list) are not modelled");
  }
  const JsonValue* shared = Present(text, "shared_intermediate_size");
  if (shared != nullptr && (shared->IsArray() || IntOr(text, {"shared_intermediate_size"}, 0) != 0)) {
    throw InvalidArgument("shared_intermediate_size",
                          "the shared MLP and its coefficient gate (MiniMaxText01"
                          "DecoderLayer.shared_mlp) are not modelled; published "
                          "MiniMax-Text-01 / M1 configs say 0");
  }
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    SetAttention(spec.layers[i], full[i]);
    spec.layers[i].recurrent_state = !full[i];
    spec.layers[i].moe = spec.moe.has_value() && spec.moe->num_experts > 1;
  }
  h.kind = RecurrentMixerKind::kLightning;
  h.num_heads = spec.num_attention_heads;
  h.head_dim = spec.head_dim;
}

/*! The family's layer reader (model_families.json "hybrid_layers"), or nullptr. */
using HybridReader = void (*)(ModelSpec&, HybridSpec&, const JsonValue&);
HybridReader ReaderFor(const std::string& model_type) {
  const JsonValue* name = FamilyTrait(model_type, "hybrid_layers");
  if (name == nullptr) return nullptr;
  const struct {
    const char* name;
    HybridReader read;
  } kReaders[] = {{"jamba", ReadJamba},
                  {"nemotron_h", ReadNemotronH},
                  {"gated_deltanet", ReadGatedDeltaNet},
                  {"parallel_mamba2", ReadParallelMamba2},
                  {"listed_mamba2", ReadListedMamba2},
                  {"mamba2", ReadMamba2},
                  {"mamba1", ReadPureMamba1},
                  {"short_conv", ReadLfm2},
                  {"kimi_delta", ReadKimiLinear},
                  {"zamba2", ReadZamba2},
                  {"lightning", ReadMiniMaxText01}};
  for (const auto& r : kReaders) {
    if (name->AsString() == r.name) return r.read;
  }
  return nullptr;  // model_family.cc checks the names when it parses the file
}

}  // namespace

bool IsHybridModelType(std::string_view t) { return ReaderFor(std::string(t)) != nullptr; }

void ReadHybridLayers(ModelSpec& spec, const JsonValue& text, const JsonValue& top) {
  (void)top;
  const HybridReader read = ReaderFor(spec.model_type);
  if (read == nullptr) throw InvalidArgument("model_type", "no hybrid layer rules for " + EchoValue(spec.model_type));
  if (static_cast<int64_t>(spec.layers.size()) != spec.num_layers) {
    spec.layers.assign(static_cast<size_t>(spec.num_layers), LayerSpec{});
  }
  if (const JsonValue* q = Present(text, "quantization_config"); q != nullptr && q->IsObject()) {
    if (const JsonValue* kv = Present(*q, "kv_cache_scheme"); kv != nullptr) spec.checkpoint_kv_cache_dtype = "fp8";
  }
  HybridSpec h;
  read(spec, h, text);
  h.dt_norms = FamilyFlag(spec.model_type, "mamba_dt_norms", false);
  if (const JsonValue* refusal = FamilyTrait(spec.model_type, "mamba_cache_mode_all_refusal")) {
    h.cache_mode_all_refusal = refusal->AsString();
  }
  for (const LayerSpec& l : spec.layers) {
    h.num_state_layers += l.recurrent_state ? 1 : 0;
    h.num_attention_layers += l.attention != AttentionKind::kNone ? 1 : 0;
  }
  spec.hybrid = h;
}

}  // namespace vllm_mem
