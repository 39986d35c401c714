/*!
 * \file core/model/model_spec.cc
 * \brief Reading a Hugging Face config.json into a ModelSpec.
 */
#include "vllm_mem/model/model_spec.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/model/model_family.h"
#include "core/model/config_defaults.h"
#include "core/model/vision_weights.h"

namespace vllm_mem {
namespace {

/*! The value of the first present, non-null key among \p keys, or nullptr. */
const JsonValue* FindFirst(const JsonValue& obj, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const JsonValue* v = obj.Find(key);
    if (v != nullptr && !v->IsNull()) return v;
  }
  return nullptr;
}

std::string KeyList(std::initializer_list<const char*> keys) {
  std::string out;
  for (const char* key : keys) {
    if (!out.empty()) out += " / ";
    out += key;
  }
  return out;
}

/*! An integer field; floats with an integral value (e.g. 4096.0) are accepted as configs
 *  written by some tools contain them. */
int64_t AsInteger(const JsonValue& v, const std::string& field) {
  if (v.IsNumber()) {
    const auto& n = v.AsNumber();
    if (n.integer) return *n.integer;
    // The range is checked before the conversion (a double outside int64, NaN or infinity
    // converts with undefined behaviour; fuzzing found 1e300 here).
    if (n.value > -9.2e18 && n.value < 9.2e18 && n.value == std::trunc(n.value)) {
      return static_cast<int64_t>(n.value);
    }
    throw InvalidArgument(field, "must be an integer, got a number that is not one (" +
                                     FormatRounded(n.value, 6) + ")");
  }
  throw InvalidArgument(field, "must be an integer, got " + v.KindName());
}

std::optional<int64_t> OptionalInt(const JsonValue& obj, std::initializer_list<const char*> keys) {
  const JsonValue* v = FindFirst(obj, keys);
  if (v == nullptr) return std::nullopt;
  return AsInteger(*v, KeyList(keys));
}

int64_t RequiredPositiveInt(const JsonValue& obj, std::initializer_list<const char*> keys, int64_t bound) {
  const JsonValue* v = FindFirst(obj, keys);
  if (v == nullptr) {
    throw InvalidArgument(KeyList(keys), "required field missing from config.json");
  }
  int64_t value = AsInteger(*v, KeyList(keys));
  if (value <= 0) {
    throw InvalidArgument(KeyList(keys), "must be a positive integer, got " + std::to_string(value));
  }
  if (value > bound) {
    throw InvalidArgument(KeyList(keys), "must be at most " + std::to_string(bound) +
                                             " (vllm_mem/base/limits.h: 100x beyond real models), got " +
                                             std::to_string(value));
  }
  return value;
}

/*! An optional integer that must lie in [lo, hi] when given. */
std::optional<int64_t> OptionalIntIn(const JsonValue& obj, std::initializer_list<const char*> keys, int64_t lo,
                                     int64_t hi) {
  std::optional<int64_t> value = OptionalInt(obj, keys);
  if (value && (*value < lo || *value > hi)) {
    throw InvalidArgument(KeyList(keys), "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                             "], got " + std::to_string(*value));
  }
  return value;
}

std::optional<bool> OptionalBool(const JsonValue& obj, const char* key) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr || v->IsNull()) return std::nullopt;
  if (!v->IsBool()) throw InvalidArgument(key, "must be true or false, got " + v->KindName());
  return v->AsBool();
}

std::string OptionalString(const JsonValue& obj, const char* key) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr || v->IsNull()) return "";
  if (!v->IsString()) throw InvalidArgument(key, "must be a string, got " + v->KindName());
  return v->AsString();
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

/*! The checkpoint dtype: torch_dtype (older transformers) or dtype (newer), on the text config
 *  first, then the top level. Absent means float32, as in transformers' PretrainedConfig. */
DType ReadDType(const JsonValue& text, const JsonValue& top) {
  for (const JsonValue* obj : {&text, &top}) {
    const JsonValue* v = FindFirst(*obj, {"torch_dtype", "dtype"});
    if (v != nullptr) {
      if (!v->IsString()) throw InvalidArgument("torch_dtype", "must be a string, got " + v->KindName());
      return ParseDType(v->AsString(), "torch_dtype");
    }
  }
  return DType::kFloat32;
}

std::optional<QuantizationSpec> ReadQuantization(const JsonValue& text, const JsonValue& top) {
  const JsonValue* q = top.Find("quantization_config");
  if (q == nullptr || q->IsNull()) q = text.Find("quantization_config");
  if (q == nullptr || q->IsNull()) return std::nullopt;
  if (!q->IsObject()) {
    throw InvalidArgument("quantization_config", "must be an object, got " + q->KindName());
  }
  QuantizationSpec spec;
  spec.method = OptionalString(*q, "quant_method");
  std::transform(spec.method.begin(), spec.method.end(), spec.method.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  const std::string& m = spec.method;
  if (m == "fp8" || m == "fbgemm_fp8" || m == "modelopt") {
    spec.weight_bits = 8;
    // fp8: per-tensor scales unless weight_block_size asks for [out, in] blocks;
    // fbgemm_fp8: per-channel; modelopt fp8: per-tensor.
    spec.per_tensor_scale = m != "fbgemm_fp8";
    if (const JsonValue* b = q->Find("weight_block_size"); b != nullptr && !b->IsNull()) {
      if (!b->IsArray() || b->AsArray().size() != 2) {
        throw InvalidArgument("quantization_config.weight_block_size", "must be a list [out, in]");
      }
      spec.block_out = AsInteger(b->AsArray()[0], "quantization_config.weight_block_size");
      spec.block_in = AsInteger(b->AsArray()[1], "quantization_config.weight_block_size");
      RequirePositiveAtMost(spec.block_out, kMaxIntermediateSize, "quantization_config.weight_block_size",
                            "a block is never larger than a weight");
      RequirePositiveAtMost(spec.block_in, kMaxIntermediateSize, "quantization_config.weight_block_size",
                            "a block is never larger than a weight");
      spec.per_tensor_scale = false;
    }
  } else if (m == "awq" || m == "gptq" || m == "awq_marlin" || m == "gptq_marlin") {
    spec.weight_bits = OptionalInt(*q, {"bits", "w_bit"}).value_or(4);
    spec.group_size = OptionalInt(*q, {"group_size", "q_group_size"}).value_or(128);
    // AWQ stores zero points unless told otherwise; GPTQ checkpoints always carry a qzeros
    // tensor, symmetric or not.
    spec.zero_point = (m.rfind("awq", 0) == 0) ? OptionalBool(*q, "zero_point").value_or(true) : true;
    spec.desc_act = OptionalBool(*q, "desc_act").value_or(false);
  } else if (m == "compressed-tensors") {
    // The first config group's weight scheme decides the storage width.
    spec.weight_bits = 8;
    const JsonValue* groups = q->Find("config_groups");
    // compressed-tensors writes {"group_0": {...}}; a list would otherwise read as 8-bit weights.
    if (groups != nullptr && !groups->IsNull() && !groups->IsObject()) {
      throw InvalidArgument("quantization_config.config_groups",
                            "must be an object of named groups, got " + groups->KindName());
    }
    if (groups != nullptr && groups->IsObject() && !groups->AsObject().empty()) {
      const JsonValue& first = groups->AsObject().begin()->second;
      if (const JsonValue* w = first.Find("weights"); w != nullptr && w->IsObject()) {
        spec.weight_bits = OptionalInt(*w, {"num_bits"}).value_or(8);
        spec.group_size = OptionalInt(*w, {"group_size"}).value_or(-1);
        spec.zero_point = !OptionalBool(*w, "symmetric").value_or(true);
        const std::string strategy = OptionalString(*w, "strategy");
        spec.per_tensor_scale = strategy == "tensor";
        if (strategy == "block") {
          if (const JsonValue* b = w->Find("block_structure"); b != nullptr && b->IsArray() &&
                                                                b->AsArray().size() == 2) {
            spec.block_out = AsInteger(b->AsArray()[0], "quantization_config.block_structure");
            spec.block_in = AsInteger(b->AsArray()[1], "quantization_config.block_structure");
            RequirePositiveAtMost(spec.block_out, kMaxIntermediateSize, "quantization_config.block_structure",
                                  "a block is never larger than a weight");
            RequirePositiveAtMost(spec.block_in, kMaxIntermediateSize, "quantization_config.block_structure",
                                  "a block is never larger than a weight");
          }
        }
      }
    }
  } else if (m == "bitsandbytes") {
    spec.weight_bits = OptionalBool(*q, "load_in_4bit").value_or(false) ? 4 : 8;
    spec.group_size = spec.weight_bits == 4 ? 64 : -1;  // bnb 4-bit blocksize 64
  } else if (m == "mxfp4") {
    spec.weight_bits = 4;
    spec.group_size = 32;  // one e8m0 scale byte per 32 weights
    spec.experts_only = true;  // gpt-oss: attention, router, embeddings stay in bf16
  } else {
    throw InvalidArgument("quantization_config.quant_method",
                          "unknown quantization method " + EchoValue(m) +
                              "; allowed: fp8, fbgemm_fp8, modelopt, awq, gptq, awq_marlin, "
                              "gptq_marlin, compressed-tensors, bitsandbytes, mxfp4");
  }
  if (spec.weight_bits <= 0 || spec.weight_bits > 16) {
    throw InvalidArgument("quantization_config.bits",
                          "must be between 1 and 16, got " + std::to_string(spec.weight_bits));
  }
  // -1 is GPTQ/AWQ's "per channel" (one group per row); 0 and other negatives are what vLLM's
  // GPTQConfig/AWQConfig cannot use (a zero group divides by zero when sizing the scales).
  if (spec.group_size == 0 || spec.group_size < -1) {
    throw InvalidArgument("quantization_config.group_size",
                          "must be a positive integer or -1 (per-channel), got " + std::to_string(spec.group_size));
  }
  RequireAtMost(spec.group_size, kMaxIntermediateSize, "quantization_config.group_size",
                "a group is never larger than a weight row");
  return spec;
}

/*! The rotary embedding's cos/sin cache, which vLLM allocates on the GPU at load time (one
 *  per distinct rope configuration, shared by all layers): its row count follows get_rope
 *  (max_position_embeddings, times the scaling factor for yarn / linear / dynamic scaling,
 *  which precompute the extended range), its width the rotated part of the head. */
/*! The rope_type names vLLM's get_rope builds a cache for (rotary_embedding/__init__.py), plus
 *  the two older spellings vLLM's patch_rope_parameters renames ("su" -> longrope, "mrope" ->
 *  default). Any other name is get_rope's ValueError("Unknown RoPE scaling type ..."). */
bool KnownRopeType(const std::string& type) {
  for (const char* known : {"", "default", "linear", "dynamic", "ntk", "yarn", "deepseek_yarn", "llama3", "longrope",
                            "su", "mrope"}) {
    if (type == known) return true;
  }
  return false;
}

void ReadRotary(const std::string& model_type, const JsonValue& text, int64_t head_dim, ArchitectureTraits& t) {
  const JsonValue* family = FamilyTraits(model_type);
  const JsonValue* rotary = family != nullptr ? family->Find("rotary") : nullptr;
  if (rotary != nullptr && !rotary->AsBool()) return;  // learned absolute positions (model_families.json)
  // Learned absolute positions or ALiBi: no rotary cache.
  for (const char* absolute : {"gpt2", "gpt_bigcode", "opt", "bloom", "mpt"}) {
    if (model_type == absolute) return;
  }
  const JsonValue* scaling = FindFirst(text, {"rope_scaling", "rope_parameters"});
  if (scaling != nullptr && !scaling->IsObject()) {
    throw InvalidArgument("rope_scaling", "must be an object (or null), got " + scaling->KindName());
  }
  // transformers v5 moves partial_rotary_factor into rope_parameters; the top-level key wins.
  const JsonValue* f = text.Find("partial_rotary_factor");
  if ((f == nullptr || f->IsNull()) && scaling != nullptr) f = scaling->Find("partial_rotary_factor");
  if (f != nullptr && !f->IsNull() && !f->IsNumber()) {
    throw InvalidArgument("partial_rotary_factor", "must be a number in (0, 1], got " + f->KindName());
  }
  if (f != nullptr && f->IsNumber()) {
    t.partial_rotary_factor = f->AsNumber().value;
  } else if (model_type == "phi") {
    t.partial_rotary_factor = 0.5;  // transformers' PhiConfig default
  } else if (const JsonValue* d = family != nullptr ? family->Find("partial_rotary_factor_default") : nullptr) {
    t.partial_rotary_factor = d->AsNumber().value;  // the config class's default (model_families.json)
  }
  // MiniMax-M2 names the rotated width (rotary_dim): vLLM sets partial_rotary_factor = rotary_dim / head_dim.
  if (const JsonValue* field = family != nullptr ? family->Find("rotary_dim_field") : nullptr) {
    if (auto dim = OptionalIntIn(text, {field->AsString().c_str()}, 1, head_dim)) {
      t.partial_rotary_factor = static_cast<double>(*dim) / static_cast<double>(head_dim);
    }
  }
  if (!(t.partial_rotary_factor > 0.0 && t.partial_rotary_factor <= 1.0)) {
    throw InvalidArgument("partial_rotary_factor",
                          "must be in (0, 1], got " + FormatRounded(t.partial_rotary_factor, 6));
  }
  int64_t positions = OptionalInt(text, {"max_position_embeddings"}).value_or(0);
  if (scaling != nullptr && scaling->IsObject()) {
    std::string type = OptionalString(*scaling, "rope_type");
    if (type.empty()) type = OptionalString(*scaling, "type");
    if (!KnownRopeType(type)) {
      throw InvalidArgument("rope_scaling.rope_type",
                            "unknown RoPE scaling type " + EchoValue(type.substr(0, 40)) +
                                " (vLLM's get_rope refuses it); known: default, linear, dynamic, ntk, yarn, "
                                "deepseek_yarn, llama3, longrope (su), mrope");
    }
    const JsonValue* factor = scaling->Find("factor");
    const double f = (factor != nullptr && factor->IsNumber()) ? factor->AsNumber().value : 1.0;
    // transformers' rope validation and vLLM's get_rope need a positive, finite factor; a
    // factor of 0, -2 or 1e300 would give an empty, negative or unrepresentable cache
    // (fuzzing found the product cast to int64 before any range check).
    if (!(f > 0.0 && f <= kMaxRopeScalingFactor)) {
      throw InvalidArgument("rope_scaling.factor", "must be a number in (0, " +
                                                       FormatRounded(kMaxRopeScalingFactor, 0) + "], got " +
                                                       FormatRounded(f, 6));
    }
    auto scaled = [&](int64_t base) {
      const double rows = static_cast<double>(base) * f;
      if (rows > static_cast<double>(kMaxModelLenTokens)) {
        throw InvalidArgument("rope_scaling.factor",
                              "scales max_position_embeddings (" + std::to_string(base) + ") to " +
                                  FormatRounded(rows, 0) + " positions, above " +
                                  std::to_string(kMaxModelLenTokens) + " (vllm_mem/base/limits.h)");
      }
      return static_cast<int64_t>(rows);
    };
    if (type == "yarn" || type == "deepseek_yarn") {
      if (auto original = OptionalIntIn(*scaling, {"original_max_position_embeddings"}, 0, kMaxModelLenTokens)) {
        positions = *original;
      }
      positions = scaled(positions);
    } else if (type == "linear" || type == "dynamic") {
      positions = scaled(positions);
    } else if (type == "longrope" || type == "su") {
      // Phi3LongRoPEScaledRotaryEmbedding: a short cache of original_max_position_embeddings
      // rows, then the long one of max_position_embeddings rows; vLLM's patch_rope_parameters
      // copies the config's top-level original_max_position_embeddings into the rope dict.
      std::optional<int64_t> original =
          OptionalIntIn(*scaling, {"original_max_position_embeddings"}, 1, kMaxModelLenTokens);
      if (!original) original = OptionalIntIn(text, {"original_max_position_embeddings"}, 1, kMaxModelLenTokens);
      if (!original) {
        throw InvalidArgument("original_max_position_embeddings",
                              "longrope scaling needs it (vLLM's get_rope reads it for the short cache)");
      }
      t.short_rope_cache_positions = *original;
    }
  }
  t.rope_cache_positions = std::max<int64_t>(positions, 0);
  if (StartsWith(model_type, "gemma3")) {
    // vllm/model_executor/models/gemma3.py: sliding layers build their rope with
    // rope_local_base_freq and no scaling, global layers with rope_theta and rope_scaling.
    // get_rope caches one cos/sin table per (head_size, rotary_dim, max_position, base,
    // scaling) key, so the local table is a second allocation of max_position_embeddings rows
    // unless both keys coincide (same base, global rope unscaled).
    const int64_t local_rows = std::max<int64_t>(OptionalInt(text, {"max_position_embeddings"}).value_or(0), 0);
    const JsonValue* theta = text.Find("rope_theta");
    const JsonValue* local_base = text.Find("rope_local_base_freq");
    const bool same_base = theta != nullptr && local_base != nullptr && theta->IsNumber() && local_base->IsNumber() &&
                           theta->AsNumber().value == local_base->AsNumber().value;
    std::string global_type;
    if (scaling != nullptr && scaling->IsObject()) {
      global_type = OptionalString(*scaling, "rope_type");
      if (global_type.empty()) global_type = OptionalString(*scaling, "type");
    }
    const bool global_unscaled = global_type.empty() || global_type == "default";
    t.local_rope_cache_positions = (same_base && global_unscaled) ? 0 : local_rows;
  }
}

/*! The traits model_families.json gives this family ("traits"): biases from one config switch,
 *  MLP and norm kinds, learned positions, an embedding width of its own (project_in / out) and
 *  the final norm's switches. Keys were type-checked when the file was parsed (model_family.cc). */
void ApplyFamilyTraits(const std::string& model_type, const JsonValue& text, ArchitectureTraits& t) {
  const JsonValue* family = FamilyTraits(model_type);
  if (family == nullptr) return;
  if (const JsonValue* field = family->Find("bias_field")) {
    const JsonValue* fallback = family->Find("bias_default");
    const bool bias = OptionalBool(text, field->AsString().c_str()).value_or(fallback != nullptr && fallback->AsBool());
    // bias_scope: "all" linears (OPT's enable_bias), "attention" = wqkv and wo (InternLM2's bias; its MLP
    // has none), "qkv" = q, k, v only (ERNIE-4.5 and Seed-OSS read attention_bias for those alone).
    const JsonValue* scope = family->Find("bias_scope");
    const std::string scoped = scope != nullptr ? scope->AsString() : "all";
    t.qkv_bias = bias;
    t.attention_out_bias = scoped != "qkv" && bias;
    if (scoped == "all") t.mlp_bias = bias;
  }
  // GPTBigCode: every linear has a bias, with no switch in the config.
  if (const JsonValue* always = family->Find("linear_bias")) {
    t.qkv_bias = t.attention_out_bias = t.mlp_bias = always->AsBool();
  }
  // Seed-OSS: o_proj's bias has a switch of its own (attention_bias covers q, k, v only).
  if (const JsonValue* field = family->Find("attention_out_bias_field")) {
    t.attention_out_bias = OptionalBool(text, field->AsString().c_str()).value_or(false);
  }
  if (const JsonValue* qk = family->Find("qk_norm")) t.qk_norm = qk->AsBool();
  // HunYuan: vLLM builds query_layernorm / key_layernorm only when the config says use_qk_norm.
  if (const JsonValue* field = family->Find("qk_norm_field")) {
    t.qk_norm = OptionalBool(text, field->AsString().c_str()).value_or(false);
  }
  if (const JsonValue* width = family->Find("qk_norm_width")) t.qk_norm_all_heads = width->AsString() == "all_heads";
  if (const JsonValue* gated = family->Find("gated_mlp")) t.gated_mlp = gated->AsBool();
  if (const JsonValue* norm = family->Find("norm")) t.norm_bias = norm->AsString() == "layernorm";
  if (const JsonValue* every = family->Find("embeddings_on_every_pp_rank")) {
    t.embeddings_on_every_pp_rank = every->AsBool();
  }
  if (const JsonValue* norms = family->Find("norms_per_layer")) t.norms_per_layer = *norms->AsNumber().integer;
  if (const JsonValue* qk_norm = family->Find("qk_norm")) t.qk_norm = qk_norm->AsBool();
  if (const JsonValue* offset = family->Find("learned_positions_offset")) {
    const int64_t positions =
        OptionalIntIn(text, {"max_position_embeddings", "n_positions"}, 1, kMaxModelLenTokens).value_or(0);
    if (positions == 0) {
      throw InvalidArgument("max_position_embeddings",
                            "required: " + model_type + " learns a position table of that many rows");
    }
    t.learned_position_rows = positions + *offset->AsNumber().integer;
  }
  if (const JsonValue* field = family->Find("embed_dim_field")) {
    t.embed_dim = OptionalIntIn(text, {field->AsString().c_str()}, 1, kMaxHiddenSize).value_or(0);
  }
  if (const JsonValue* field = family->Find("final_norm_field")) {
    t.final_norm = OptionalBool(text, field->AsString().c_str()).value_or(true);
    if (const JsonValue* removed = family->Find("final_norm_removed_field")) {
      t.final_norm = t.final_norm && !OptionalBool(text, removed->AsString().c_str()).value_or(false);
    }
  }
}

/*! The router facts model_families.json gives a MoE family: an e_score_correction_bias always
 *  (ERNIE-4.5-MoE) or when a config switch says so (MiniMax-M2's use_routing_bias), its dtype, and a
 *  float32 router weight (MiniMax-M2's gate: params_dtype=torch.float32). */
void ApplyMoeTraits(const std::string& model_type, const JsonValue& text, MoeSpec& moe) {
  const JsonValue* family = FamilyTraits(model_type);
  if (family == nullptr) return;
  if (const JsonValue* always = family->Find("router_score_bias")) moe.router_bias = always->AsBool();
  if (const JsonValue* field = family->Find("router_score_bias_field")) {
    moe.router_bias = OptionalBool(text, field->AsString().c_str()).value_or(false);
  }
  if (const JsonValue* dtype = family->Find("router_score_bias_dtype")) {
    moe.score_bias_element_bytes = dtype->AsString() == "float32" ? 4 : 0;
  }
  if (const JsonValue* dtype = family->Find("router_dtype")) {
    moe.router_element_bytes = dtype->AsString() == "float32" ? 4 : 0;
  }
}

ArchitectureTraits ReadTraits(const std::string& model_type, const JsonValue& text, int64_t head_dim) {
  ArchitectureTraits t;
  // Families whose config has explicit switches (Llama, Mistral, Granite, ...).
  t.qkv_bias = OptionalBool(text, "attention_bias").value_or(false);
  t.attention_out_bias = t.qkv_bias && model_type != "qwen2";
  t.mlp_bias = OptionalBool(text, "mlp_bias").value_or(false);
  if (StartsWith(model_type, "qwen2")) {
    t.qkv_bias = true;  // Qwen2 / Qwen2-MoE / Qwen2-VL: biases on q, k, v only
    t.attention_out_bias = false;
  }
  if (StartsWith(model_type, "qwen3")) t.qk_norm = true;
  if (model_type == "phi") {
    t.qkv_bias = t.attention_out_bias = t.mlp_bias = true;
    t.gated_mlp = false;
    t.norm_bias = true;
    t.lm_head_bias = true;
    t.norms_per_layer = 1;
    t.parallel_block = true;
  }
  if (model_type == "gemma2" || StartsWith(model_type, "gemma3")) {
    t.norms_per_layer = 4;
    if (StartsWith(model_type, "gemma3")) t.qk_norm = true;
  }
  if (model_type == "gpt_oss") {
    t.qkv_bias = t.attention_out_bias = true;
    t.mlp_bias = true;  // expert biases
    t.attention_sinks = true;
    t.router_bias = true;
  }
  ApplyFamilyTraits(model_type, text, t);
  ReadRotary(model_type, text, head_dim, t);
  return t;
}

/*! Which layers slide, following how the model code in vLLM / transformers reads the config:
 *  an explicit layer_types list first, then Gemma-3's sliding_window_pattern, Gemma-2's
 *  alternation, Qwen's use_sliding_window + max_window_layers, and otherwise a sliding_window
 *  that applies to every layer (Mistral-7B-v0.1, Phi-3). */
void ResolveAttentionKinds(ModelSpec& spec, const JsonValue& text) {
  spec.layers.assign(static_cast<size_t>(spec.num_layers), LayerSpec{});
  // A checkpoint with KV-cache scales (compressed-tensors / modelopt kv_cache_scheme) makes
  // vLLM's "auto" KV dtype fp8. Only the config level holding the model fields is read here.
  if (const JsonValue* q = text.Find("quantization_config"); q != nullptr && q->IsObject()) {
    if (const JsonValue* kv = q->Find("kv_cache_scheme"); kv != nullptr && !kv->IsNull()) {
      spec.checkpoint_kv_cache_dtype = "fp8";
    }
  }
  // Llama-4: layers with RoPE attend within chunks of attention_chunk_size tokens; the NoPE
  // layers (no_rope_layers[i] == 0, by default every 4th) attend globally (vLLM llama4.py).
  if (const int64_t chunk = OptionalIntIn(text, {"attention_chunk_size"}, INT64_MIN, kMaxWindowTokens).value_or(0);
      chunk > 0) {
    const JsonValue* no_rope = text.Find("no_rope_layers");
    const bool listed = no_rope != nullptr && no_rope->IsArray() && !no_rope->AsArray().empty();
    if (listed && static_cast<int64_t>(no_rope->AsArray().size()) != spec.num_layers) {
      throw InvalidArgument("no_rope_layers", "must list num_hidden_layers (" + std::to_string(spec.num_layers) +
                                                  ") entries");
    }
    const int64_t interval = OptionalInt(text, {"no_rope_layer_interval"}).value_or(4);
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      const bool uses_rope = listed ? AsInteger(no_rope->AsArray()[i], "no_rope_layers") != 0
                                    : (interval <= 0 || (static_cast<int64_t>(i) + 1) % interval != 0);
      if (uses_rope) spec.layers[i].attention_chunk_size_tokens = chunk;
    }
  }
  if (spec.mla) {
    for (auto& layer : spec.layers) layer.attention = AttentionKind::kMla;
    return;
  }
  // 0 (or absent / null) means no sliding window; some configs write 0 for "off".
  const int64_t window =
      std::max<int64_t>(OptionalIntIn(text, {"sliding_window"}, INT64_MIN, kMaxWindowTokens).value_or(0), 0);

  const JsonValue* layer_types = text.Find("layer_types");
  if (layer_types != nullptr && !layer_types->IsNull()) {
    if (!layer_types->IsArray() ||
        static_cast<int64_t>(layer_types->AsArray().size()) != spec.num_layers) {
      throw InvalidArgument("layer_types", "must be a list of num_hidden_layers (" +
                                               std::to_string(spec.num_layers) + ") strings");
    }
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      const JsonValue& kind = layer_types->AsArray()[i];
      if (!kind.IsString()) throw InvalidArgument("layer_types", "entries must be strings");
      const std::string& k = kind.AsString();
      if (k == "sliding_attention" || k == "sliding_window_attention" || k == "local_attention") {
        if (window == 0) {
          throw InvalidArgument("sliding_window",
                                "layer_types names sliding layers but sliding_window is not set");
        }
        spec.layers[i].attention = AttentionKind::kSlidingWindow;
        spec.layers[i].sliding_window_tokens = window;
      } else if (k == "full_attention" || k == "global_attention" || k == "attention") {
        spec.layers[i].attention = AttentionKind::kFull;
      } else {
        throw InvalidArgument("layer_types", "unsupported layer type " + EchoValue(k) +
                                                 "; supported: full_attention, sliding_attention");
      }
    }
    return;
  }
  if (window == 0) return;

  auto set_sliding = [&](size_t i) {
    spec.layers[i].attention = AttentionKind::kSlidingWindow;
    spec.layers[i].sliding_window_tokens = window;
  };
  std::optional<int64_t> pattern = OptionalInt(text, {"sliding_window_pattern"});
  const std::string& mt = spec.model_type;
  if (StartsWith(mt, "gemma3") || pattern) {
    int64_t p = pattern.value_or(6);  // Gemma-3: five local layers, then one global
    if (p <= 0) throw InvalidArgument("sliding_window_pattern", "must be a positive integer");
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      if ((static_cast<int64_t>(i) + 1) % p != 0) set_sliding(i);
    }
    return;
  }
  if (mt == "gemma2" || mt == "cohere2") {
    int64_t p = mt == "cohere2" ? 4 : 2;
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      if ((static_cast<int64_t>(i) + 1) % p != 0) set_sliding(i);
    }
    return;
  }
  if (text.Find("use_sliding_window") != nullptr) {
    // Qwen2 / Qwen3: the window applies only when switched on, and then from layer
    // max_window_layers onwards.
    if (!OptionalBool(text, "use_sliding_window").value_or(false)) return;
    int64_t first = OptionalInt(text, {"max_window_layers"}).value_or(0);
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      if (static_cast<int64_t>(i) >= first) set_sliding(i);
    }
    return;
  }
  for (size_t i = 0; i < spec.layers.size(); ++i) set_sliding(i);
}

void ResolveMoeLayers(ModelSpec& spec, const JsonValue& text) {
  if (!spec.moe) return;
  int64_t first_dense = OptionalInt(text, {"first_k_dense_replace"}).value_or(0);
  // Llama-4's interleave_moe_layer_step: layers step-1, 2*step-1, ... are MoE, as Qwen's
  // decoder_sparse_step (transformers Llama4TextConfig.moe_layers).
  int64_t freq =
      OptionalInt(text, {"moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step"}).value_or(1);
  if (freq <= 0) throw InvalidArgument("moe_layer_freq", "must be a positive integer");
  std::vector<int64_t> mlp_only;
  const JsonValue* v = text.Find("mlp_only_layers");
  if (v != nullptr && !v->IsNull() && !v->IsArray()) {
    throw InvalidArgument("mlp_only_layers", "must be a list of layer indices, got " + v->KindName());
  }
  if (v != nullptr && v->IsArray()) {
    for (const auto& e : v->AsArray()) mlp_only.push_back(AsInteger(e, "mlp_only_layers"));
  }
  std::sort(mlp_only.begin(), mlp_only.end());
  const bool deepseek_style = text.Find("first_k_dense_replace") != nullptr;
  // ERNIE-4.5-MoE (vllm ernie45_moe.py): experts only from moe_layer_start_index to moe_layer_end_index.
  const int64_t last_layer = static_cast<int64_t>(spec.layers.size()) - 1;
  const int64_t first_moe = OptionalIntIn(text, {"moe_layer_start_index"}, 0, last_layer).value_or(0);
  const int64_t last_moe = OptionalIntIn(text, {"moe_layer_end_index"}, 0, kMaxNumLayers).value_or(last_layer);
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    int64_t idx = static_cast<int64_t>(i);
    bool moe;
    if (deepseek_style) {
      moe = idx >= first_dense && idx % freq == 0;
    } else {
      moe = (idx + 1) % freq == 0;  // Qwen-MoE decoder_sparse_step
    }
    // Sorted lookup: the list may be as long as the JSON value limit, so no scan per layer.
    if (std::binary_search(mlp_only.begin(), mlp_only.end(), idx)) moe = false;
    if (idx < first_moe || idx > last_moe) moe = false;
    spec.layers[i].moe = moe;
  }
}

}  // namespace

int64_t ModelSpec::CountLayers(AttentionKind kind) const {
  return std::count_if(layers.begin(), layers.end(),
                       [kind](const LayerSpec& l) { return l.attention == kind; });
}

ModelSpec ModelSpec::FromHfConfigText(std::string_view json_text, const ModelReadOptions& options) {
  return FromHfConfig(ParseJson(json_text, "config.json"), options);
}

namespace {

/*! Query heads, KV heads, MLA ranks and head_dim of an attention model. */
void ReadAttentionShape(ModelSpec& spec, const JsonValue& text) {
  spec.num_attention_heads =
      RequiredPositiveInt(text, {"num_attention_heads", "n_head", "num_heads"}, kMaxAttentionHeads);
  // Total KV heads as vLLM's get_total_num_kv_heads counts them: multi_query (GPTBigCode, Falcon
  // before its new decoder architecture) is one KV head whatever else the config says; then vLLM's
  // spellings in vLLM's order of preference.
  const bool falcon_new_decoder =
      spec.model_type == "falcon" && OptionalBool(text, "new_decoder_architecture").value_or(false);
  if (!falcon_new_decoder && OptionalBool(text, "multi_query").value_or(false)) {
    spec.num_kv_heads = 1;
  } else if (auto kv = OptionalInt(text, {"n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
                                          "num_attention_groups"})) {
    spec.num_kv_heads = *kv;
  } else if (const JsonValue* attn = text.Find("attn_config");
             attn != nullptr && attn->IsObject() && attn->Find("kv_n_heads") != nullptr) {
    spec.num_kv_heads = AsInteger(*attn->Find("kv_n_heads"), "attn_config.kv_n_heads");  // MPT, DBRX
  } else {
    spec.num_kv_heads = spec.num_attention_heads;
  }
  if (spec.num_kv_heads <= 0) {
    throw InvalidArgument("num_key_value_heads", "must be a positive integer, got " +
                                                     std::to_string(spec.num_kv_heads));
  }
  // Grouped-query attention: each KV head serves num_attention_heads / num_kv_heads query heads
  // (transformers' repeat_kv, vLLM's attention layers); any other count is not a model.
  if (spec.num_attention_heads % spec.num_kv_heads != 0) {
    throw InvalidArgument("num_key_value_heads",
                          "must divide num_attention_heads (" + std::to_string(spec.num_attention_heads) +
                              "), got " + std::to_string(spec.num_kv_heads));
  }

  if (text.Find("kv_lora_rank") != nullptr && !text.Find("kv_lora_rank")->IsNull()) {
    MlaSpec mla;
    mla.kv_lora_rank = RequiredPositiveInt(text, {"kv_lora_rank"}, kMaxHeadDim);
    mla.qk_rope_head_dim = RequiredPositiveInt(text, {"qk_rope_head_dim"}, kMaxHeadDim);
    mla.qk_nope_head_dim = RequiredPositiveInt(text, {"qk_nope_head_dim"}, kMaxHeadDim);
    mla.v_head_dim = RequiredPositiveInt(text, {"v_head_dim"}, kMaxHeadDim);
    mla.q_lora_rank = OptionalIntIn(text, {"q_lora_rank"}, 0, kMaxHiddenSize).value_or(0);
    spec.mla = mla;
    spec.head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
  } else if (auto hd = OptionalInt(text, {"head_dim", "hidden_size_per_head"})) {
    spec.head_dim = *hd;
  } else {
    if (spec.hidden_size % spec.num_attention_heads != 0) {
      throw InvalidArgument("head_dim", "not given, and hidden_size (" + std::to_string(spec.hidden_size) +
                                            ") is not divisible by num_attention_heads (" +
                                            std::to_string(spec.num_attention_heads) + ")");
    }
    spec.head_dim = spec.hidden_size / spec.num_attention_heads;
  }
  RequirePositiveAtMost(spec.head_dim, kMaxHeadDim, "head_dim", "vllm_mem/base/limits.h: 100x beyond real models");
}

/*! Refuses a model_type the core has no exact rules for (model_family.h), or records why the
 *  figures are a generic estimate when the caller asked for one. Before any other field is read,
 *  so a hybrid never gets as far as a transformer-shaped KV size. */
void CheckModelFamily(ModelSpec& spec, const JsonValue& config, const ModelReadOptions& options) {
  const ModelFamily family = ClassifyModelType(spec.model_type);
  if (family.support != ModelSupport::kSupported) {
    // Cut to 40 bytes so the message, with the supported list, stays under 300 characters.
    const std::string shown =
        spec.model_type.empty() ? "(none)" : EchoValue(std::string_view(spec.model_type).substr(0, 40));
    if (family.support == ModelSupport::kNotModelled) {
      spec.generic_estimate_reason = "model_type " + shown + ": " + family.description;
      if (!options.allow_unknown) {
        throw Unsupported(spec.generic_estimate_reason +
                          "; allow_unknown=True (--allow-unknown) sizes it as a plain transformer, labelled");
      }
    } else {
      spec.generic_estimate_reason = "no sizing rules for model_type " + shown;
      if (!options.allow_unknown) {
        std::string supported;
        for (const std::string& type : SupportedModelTypes()) {
          // A wrapper's language model (gemma3_text) or a VL variant (qwen2_vl) reads as its parent.
          if (type.size() > 5 && type.compare(type.size() - 5, 5, "_text") == 0) continue;
          if (type.size() > 3 && type.compare(type.size() - 3, 3, "_vl") == 0) continue;
          supported += (supported.empty() ? "" : ", ") + type;
        }
        const std::string tail = "; allow_unknown=True for a labelled estimate";
        std::string what = "no sizing rules for " + shown + "; supported: " + supported + tail;
        // An escaped name can be 4x its bytes: keep the message within 300 characters by
        // pointing at the list instead of printing it.
        if (what.size() + std::string("model_type: ").size() > 300) {
          what = "no sizing rules for " + shown + "; supported: see vllm_mem.supported_model_types()" + tail;
        }
        throw InvalidArgument("model_type", what);
      }
    }
  }
  // A vision tower, or a wrapper whose language model sits under text_config (Gemma-3,
  // Mistral-Small-3.1, Llama-4: published configs may omit vision_config's defaults).
  const JsonValue* vision = config.Find("vision_config");
  const JsonValue* text_config = config.Find("text_config");
  if ((vision != nullptr && !vision->IsNull()) || (text_config != nullptr && text_config->IsObject())) {
    spec.caveats.push_back(MultimodalCaveat());
  }
}

/*! A config switch that turns on what vllm_mem has no rules for (model_families.json
 *  "refused_switches": HunYuan's use_cla shares KV across layers) is refused by its field, or labelled as a
 *  generic estimate when the caller asked for one. */
void CheckRefusedSwitches(ModelSpec& spec, const JsonValue& text, const ModelReadOptions& options) {
  const JsonValue* family = FamilyTraits(spec.model_type);
  const JsonValue* switches = family != nullptr ? family->Find("refused_switches") : nullptr;
  if (switches == nullptr) return;
  for (const auto& [field, reason] : switches->AsObject()) {
    if (!OptionalBool(text, field.c_str()).value_or(false)) continue;
    spec.generic_estimate_reason =
        "model_type " + EchoValue(spec.model_type) + " with " + field + " true: " + reason.AsString();
    if (!options.allow_unknown) {
      throw Unsupported(spec.generic_estimate_reason +
                        "; allow_unknown=True (--allow-unknown) sizes it as a plain transformer, labelled");
    }
  }
}

}  // namespace

ModelSpec ModelSpec::FromHfConfig(const JsonValue& raw_config, const ModelReadOptions& options) {
  if (!raw_config.IsObject()) {
    throw InvalidArgument("config", "config.json must hold a JSON object, got " + raw_config.KindName());
  }
  // A text_config that is not an object (a string, a list) would otherwise be skipped and the
  // wrapper's top level read as the language model: a plausible, wrong model.
  for (const char* key : {"text_config", "llm_config"}) {
    if (const JsonValue* t = raw_config.Find(key); t != nullptr && !t->IsNull() && !t->IsObject()) {
      throw InvalidArgument(key, "must be an object (the language model's config), got " + t->KindName());
    }
  }
  // Published files omit fields equal to transformers' class defaults (Gemma-3's text_config
  // has no vocab_size): fill them as transformers does before reading (config_defaults.h).
  const JsonValue config = ApplyConfigDefaults(raw_config);
  // Multimodal checkpoints keep the language model's fields under text_config.
  // InternVL's remote-code config names it llm_config; vLLM reads that as text_config
  // (transformers_utils/config.py _CONFIG_ATTRS_MAPPING {"llm_config": "text_config"}).
  const JsonValue* nested = config.Find("text_config");
  if (nested == nullptr || nested->IsNull()) nested = config.Find("llm_config");
  const JsonValue& text = (nested != nullptr && nested->IsObject()) ? *nested : config;

  ModelSpec spec;
  spec.model_type = OptionalString(text, "model_type");
  if (spec.model_type.empty()) spec.model_type = OptionalString(config, "model_type");
  CheckModelFamily(spec, config, options);
  CheckRefusedSwitches(spec, text, options);
  if (const JsonValue* arch = config.Find("architectures"); arch != nullptr && !arch->IsNull()) {
    // vLLM resolves the model class from this list: anything but a list of strings is not a config.
    if (!arch->IsArray()) throw InvalidArgument("architectures", "must be a list of strings, got " + arch->KindName());
    for (const auto& a : arch->AsArray()) {
      if (!a.IsString()) throw InvalidArgument("architectures", "entries must be strings, got " + a.KindName());
      spec.architectures.push_back(a.AsString());
    }
  }
  spec.dtype = ReadDType(text, config);

  // Each count is bounded before any work proportional to it (vllm_mem/base/limits.h).
  spec.num_layers = RequiredPositiveInt(text, {"num_hidden_layers", "n_layer", "num_layers", "n_layers"},
                                        kMaxNumLayers);
  spec.hidden_size = RequiredPositiveInt(text, {"hidden_size", "n_embd", "d_model"}, kMaxHiddenSize);
  spec.vocab_size = RequiredPositiveInt(text, {"vocab_size", "padded_vocab_size"}, kMaxVocabSize);

  // Attention-free families (model_families.json "attention_free": Mamba) have no heads: vLLM
  // reads getattr(hf_text_config, "num_attention_heads", 0), so 0 heads, 0 KV heads, no head_dim.
  const JsonValue* family_traits = FamilyTraits(spec.model_type);
  const JsonValue* attention_free = family_traits != nullptr ? family_traits->Find("attention_free") : nullptr;
  if (attention_free == nullptr || !attention_free->AsBool()) ReadAttentionShape(spec, text);

  // GPT-2 style configs leave n_inner null meaning 4 * hidden.
  spec.intermediate_size = OptionalInt(text, {"intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim"})
                               .value_or(CheckedMul(4, spec.hidden_size, "intermediate_size"));
  RequirePositiveAtMost(spec.intermediate_size, kMaxIntermediateSize, "intermediate_size",
                        "vllm_mem/base/limits.h: 100x beyond real models");
  spec.max_position_embeddings =
      // 0 is no length (vLLM would derive a max_model_len of 0); absent is vLLM's 2048 default.
      OptionalIntIn(text, {"max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"}, 1,
                    kMaxModelLenTokens)
          .value_or(0);

  // transformers' default is tied embeddings, but most decoder families override it to False.
  std::optional<bool> tie = OptionalBool(text, "tie_word_embeddings");
  if (!tie) tie = OptionalBool(config, "tie_word_embeddings");
  bool ties_by_default = StartsWith(spec.model_type, "gemma") || spec.model_type == "gpt2";
  if (const JsonValue* family = FamilyTraits(spec.model_type)) {
    if (const JsonValue* d = family->Find("tie_word_embeddings_default")) ties_by_default = d->AsBool();
  }
  spec.tie_word_embeddings = tie.value_or(ties_by_default);

  // 0 means a dense model (Granite's num_local_experts: 0); a negative count is no model.
  if (auto experts = OptionalIntIn(text, {"num_local_experts", "num_experts", "n_routed_experts"}, 0,
                                    kMaxExperts);
      experts && *experts > 0) {
    MoeSpec moe;
    moe.num_experts = *experts;
    moe.num_experts_per_token =
        RequiredPositiveInt(text, {"num_experts_per_tok", "experts_per_token", "moe_top_k"}, kMaxExperts);
    moe.expert_intermediate_size =
        OptionalInt(text, {"moe_intermediate_size", "expert_intermediate_size"}).value_or(spec.intermediate_size);
    RequirePositiveAtMost(moe.expert_intermediate_size, kMaxIntermediateSize, "moe_intermediate_size",
                          "vllm_mem/base/limits.h: 100x beyond real models");
    moe.num_shared_experts =
        OptionalIntIn(text, {"n_shared_experts", "num_shared_experts"}, 0, kMaxExperts).value_or(0);
    moe.shared_expert_intermediate_size =
        OptionalIntIn(text, {"shared_expert_intermediate_size"}, 0, kMaxIntermediateSize).value_or(0);
    moe.shared_expert_gate = moe.shared_expert_intermediate_size > 0;
    moe.router_bias = OptionalString(text, "topk_method") == "noaux_tc" || spec.model_type == "gpt_oss";
    if (StartsWith(spec.model_type, "llama4")) {
      // Llama-4 (transformers Llama4TextMoe, vllm/model_executor/models/llama4.py Llama4MoE):
      // routed experts and the one shared expert are intermediate_size wide; the dense
      // layers between MoE layers use intermediate_size_mlp.
      moe.expert_intermediate_size = spec.intermediate_size;
      moe.num_shared_experts = 1;
      if (auto dense = OptionalInt(text, {"intermediate_size_mlp"})) {
        RequirePositiveAtMost(*dense, kMaxIntermediateSize, "intermediate_size_mlp",
                              "vllm_mem/base/limits.h: 100x beyond real models");
        spec.intermediate_size = *dense;
      }
    }
    ApplyMoeTraits(spec.model_type, text, moe);
    RequireNonNegative(moe.num_shared_experts, "n_shared_experts");
    RequireNonNegative(moe.shared_expert_intermediate_size, "shared_expert_intermediate_size");
    if (moe.num_experts_per_token > moe.num_experts) {
      throw InvalidArgument("num_experts_per_tok", "must not exceed the number of experts (" +
                                                       std::to_string(moe.num_experts) + ")");
    }
    spec.moe = moe;
  }

  spec.quantization = ReadQuantization(text, config);
  spec.traits = ReadTraits(spec.model_type, text, spec.head_dim);
  // Hybrids (hybrid_config.cc) read their own layer types after the generic MoE rule, which
  // their family rules then refine (Jamba's expert period, Nemotron-H's pattern).
  const bool hybrid = IsHybridModelType(spec.model_type);
  if (hybrid) spec.layers.assign(static_cast<size_t>(spec.num_layers), LayerSpec{}); else ResolveAttentionKinds(spec, text);
  ResolveMoeLayers(spec, text);
  if (hybrid) ReadHybridLayers(spec, text, config);
  // The vision tower and projector, when this wrapper and tower have rules; the multimodal
  // caveat then no longer applies (vision_weights.h).
  spec.vision = ReadVisionEncoder(config, spec.hidden_size);
  if (spec.vision) {
    spec.caveats.erase(std::remove(spec.caveats.begin(), spec.caveats.end(), MultimodalCaveat()), spec.caveats.end());
    // Counting the tower's weights is not the whole multimodal cost: until the encoder's
    // profiling run is modelled, every report says so.
    spec.caveats.push_back(VisionProfilingCaveat());
  }
  return spec;
}

}  // namespace vllm_mem
