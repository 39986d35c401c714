/*!
 * \file core/model/model_spec.cc
 * \brief Reading a Hugging Face config.json into a ModelSpec, as named steps in the order
 *        FromHfConfig runs them: the family check, the text config's dimensions, attention (KV
 *        heads, head size, MLA), MLP and positions, tied embeddings, MoE, quantization
 *        (quantization_config.cc), traits and rotary caches (architecture_traits.cc,
 *        rotary_config.cc), the layer pattern (layer_pattern.cc, or hybrid_config.cc for
 *        hybrids) and the vision tower (vision_weights.cc).
 */
#include "vllm_mem/model/model_spec.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/base/checked_math.h"
#include "core/model/audio_weights.h"
#include "core/model/config_defaults.h"
#include "core/model/config_fields.h"
#include "core/model/config_readers.h"
#include "core/model/vision_weights.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/model/hybrid_spec.h"
#include "vllm_mem/model/model_family.h"
#include "vllm_mem/model/vision_profile_item.h"

namespace vllm_mem {

int64_t ModelSpec::CountLayers(AttentionKind kind) const {
  return std::count_if(layers.begin(), layers.end(), [kind](const LayerSpec& l) { return l.attention == kind; });
}

ModelSpec ModelSpec::FromHfConfigText(std::string_view json_text, const ModelReadOptions& options) {
  return FromHfConfig(ParseJson(json_text, "config.json"), options);
}

namespace {

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
  // What a supported family's figures leave out (model_families.json "caveat"): every report lists it.
  if (const JsonValue* caveat = FamilyTrait(spec.model_type, "caveat")) spec.caveats.push_back(caveat->AsString());
  // A vision tower, or a wrapper whose language model sits under text_config (Gemma-3,
  // Mistral-Small-3.1, Llama-4: published configs may omit vision_config's defaults).
  const JsonValue* vision = config.Find("vision_config");
  const JsonValue* text_config = config.Find("text_config");
  if ((vision != nullptr && !vision->IsNull()) || (text_config != nullptr && text_config->IsObject())) {
    // A family whose towers are known to have no rules says which (model_families.json multimodal_caveat).
    const JsonValue* own = FamilyTrait(spec.model_type, "multimodal_caveat");
    spec.caveats.push_back(own != nullptr ? own->AsString() : MultimodalCaveat());
  }
}

/*! A config switch that turns on what vllm_mem has no rules for (model_families.json
 *  "refused_switches": HunYuan's use_cla shares KV across layers) is refused by its field, or labelled
 *  as a generic estimate when the caller asked for one. */
void CheckRefusedSwitches(ModelSpec& spec, const JsonValue& text, const ModelReadOptions& options) {
  const JsonValue* switches = FamilyTrait(spec.model_type, "refused_switches");
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

/*! The language model's config: text_config when the checkpoint nests it (multimodal wrappers;
 *  InternVL's remote-code config names it llm_config, which vLLM reads as text_config:
 *  transformers_utils/config.py _CONFIG_ATTRS_MAPPING), else the whole document. A nested config
 *  that is not an object (a string, a list) would otherwise be skipped and the wrapper's top level
 *  read as the language model: a plausible, wrong model. */
const JsonValue& TextConfig(const JsonValue& config) {
  for (const char* key : {"text_config", "llm_config"}) {
    const JsonValue* nested = config.Find(key);
    if (nested == nullptr || nested->IsNull()) continue;
    if (!nested->IsObject()) {
      throw InvalidArgument(key, "must be an object (the language model's config), got " + nested->KindName());
    }
    return *nested;
  }
  return config;
}

/*! vLLM resolves the model class from this list: anything but a list of strings is not a config. */
void ReadArchitectures(ModelSpec& spec, const JsonValue& config) {
  const JsonValue* arch = config.Find("architectures");
  if (arch == nullptr || arch->IsNull()) return;
  if (!arch->IsArray()) throw InvalidArgument("architectures", "must be a list of strings, got " + arch->KindName());
  for (const auto& a : arch->AsArray()) {
    if (!a.IsString()) throw InvalidArgument("architectures", "entries must be strings, got " + a.KindName());
    spec.architectures.push_back(a.AsString());
  }
}

/*! The required sizes; each count is bounded before any work proportional to it
 *  (vllm_mem/base/limits.h). */
void ReadDimensions(ModelSpec& spec, const JsonValue& text) {
  spec.num_layers =
      RequiredPositiveInt(text, {"num_hidden_layers", "n_layer", "num_layers", "n_layers"}, kMaxNumLayers);
  spec.hidden_size = RequiredPositiveInt(text, {"hidden_size", "n_embd", "d_model"}, kMaxHiddenSize);
  spec.vocab_size = RequiredPositiveInt(text, {"vocab_size", "padded_vocab_size"}, kMaxVocabSize);
}

/*! Query heads, then total KV heads as vLLM's get_total_num_kv_heads counts them: multi_query
 *  (GPTBigCode, Falcon before its new decoder architecture: model_families.json
 *  single_kv_head_unless_field) is one KV head whatever else the config says; then vLLM's
 *  spellings in vLLM's order of preference. */
void ReadHeads(ModelSpec& spec, const JsonValue& text) {
  spec.num_attention_heads =
      RequiredPositiveInt(text, {"num_attention_heads", "n_head", "num_heads"}, kMaxAttentionHeads);
  const JsonValue* attn = text.Find("attn_config");
  const JsonValue* unless = FamilyTrait(spec.model_type, "single_kv_head_unless_field");
  const bool multi_query = OptionalBool(text, "multi_query").value_or(false) &&
                           !(unless != nullptr && OptionalBool(text, unless->AsString().c_str()).value_or(false));
  if (multi_query) {
    spec.num_kv_heads = 1;
  } else if (auto kv = OptionalInt(text, {"n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
                                          "num_attention_groups"})) {
    spec.num_kv_heads = *kv;
  } else if (attn != nullptr && attn->IsObject() && attn->Find("kv_n_heads") != nullptr) {
    spec.num_kv_heads = AsInteger(*attn->Find("kv_n_heads"), "attn_config.kv_n_heads");  // MPT, DBRX
  } else {
    spec.num_kv_heads = spec.num_attention_heads;
  }
  if (spec.num_kv_heads <= 0) {
    throw InvalidArgument("num_key_value_heads",
                          "must be a positive integer, got " + std::to_string(spec.num_kv_heads));
  }
  // Grouped-query attention: each KV head serves num_attention_heads / num_kv_heads query heads
  // (transformers' repeat_kv, vLLM's attention layers); any other count is not a model.
  if (spec.num_attention_heads % spec.num_kv_heads != 0) {
    throw InvalidArgument("num_key_value_heads", "must divide num_attention_heads (" +
                                                     std::to_string(spec.num_attention_heads) + "), got " +
                                                     std::to_string(spec.num_kv_heads));
  }
}

/*! The attention head size: MLA's (nope + rope) when kv_lora_rank is set, head_dim, or
 *  hidden_size / num_attention_heads. */
void ReadHeadDim(ModelSpec& spec, const JsonValue& text) {
  if (const JsonValue* rank = text.Find("kv_lora_rank"); rank != nullptr && !rank->IsNull()) {
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

/*! DeepSeek-V3.2's sparse-attention indexer (model_families.json sparse_indexer). vLLM's Indexer
 *  reads index_n_heads, index_head_dim and index_topk without defaults and projects its queries from
 *  the query LoRA (wq_b), so each is required and the model must have MLA with a q LoRA. */
void ReadSparseIndexer(ModelSpec& spec, const JsonValue& text) {
  if (!FamilyFlag(spec.model_type, "sparse_indexer", false)) return;
  if (!spec.mla) {
    throw InvalidArgument("kv_lora_rank",
                          "DeepSeek-V3.2's indexer sits beside multi-head latent attention: "
                          "kv_lora_rank is required");
  }
  if (spec.mla->q_lora_rank == 0) {
    throw InvalidArgument("q_lora_rank",
                          "DeepSeek-V3.2's indexer projects its queries from the query LoRA "
                          "(vLLM's wq_b): q_lora_rank must be a positive integer");
  }
  spec.mla->index_n_heads = RequiredPositiveInt(text, {"index_n_heads"}, kMaxAttentionHeads);
  spec.mla->index_head_dim = RequiredPositiveInt(text, {"index_head_dim"}, kMaxHeadDim);
  spec.mla->index_topk = RequiredPositiveInt(text, {"index_topk"}, kMaxModelLenTokens);
}

/*! The MLP width (GPT-2 style configs leave n_inner null meaning 4 * hidden; Gemma-3n's MatFormer
 *  configs list one per layer, whose widest sizes the activations), the length and
 *  whether the LM head is the embedding (transformers' default is tied, most decoder families
 *  override it to False; model_families.json tie_word_embeddings_default). */
void ReadMlpPositionsAndTying(ModelSpec& spec, const JsonValue& text, const JsonValue& config) {
  const std::vector<int64_t> widths = PerLayerIntermediateSizes(spec, text);
  spec.intermediate_size = !widths.empty()
                               ? *std::max_element(widths.begin(), widths.end())
                               : OptionalInt(text, {"intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim"})
                                     .value_or(CheckedMul(4, spec.hidden_size, "intermediate_size"));
  RequirePositiveAtMost(spec.intermediate_size, kMaxIntermediateSize, "intermediate_size",
                        "vllm_mem/base/limits.h: 100x beyond real models");
  // 0 is no length (vLLM would derive a max_model_len of 0); absent is vLLM's 2048 default.
  // model_max_length is last: one of vLLM's _get_and_verify_max_len keys, the only one
  // Kimi-Linear's config has (1,048,576).
  spec.max_position_embeddings =
      OptionalIntIn(text, {"max_position_embeddings", "n_positions", "max_sequence_length", "seq_length",
                           "model_max_length"},
                    1, kMaxModelLenTokens)
          .value_or(0);
  std::optional<bool> tie = OptionalBool(text, "tie_word_embeddings");
  if (!tie) tie = OptionalBool(config, "tie_word_embeddings");
  spec.tie_word_embeddings = tie.value_or(FamilyFlag(spec.model_type, "tie_word_embeddings_default", false));
}

/*! A MoE field a family may write as one value per layer (model_families.json moe_per_layer_lists:
 *  HunYuan's moe_topk, moe_intermediate_size, num_shared_expert, which vLLM's hunyuan_v1.py indexes by
 *  layer_id), else an integer. vllm_mem sizes one MoE shape for every layer, so a list must give each of
 *  the num_layers layers the same value; a list that differs is refused by name, not averaged. */
std::optional<int64_t> OptionalPerLayerInt(const ModelSpec& spec, const JsonValue& text, const std::string& field,
                                           int64_t lo, int64_t hi) {
  const JsonValue* v = text.Find(field);
  if (v == nullptr || v->IsNull() || !v->IsArray() || !FamilyFlag(spec.model_type, "moe_per_layer_lists", false)) {
    return OptionalIntIn(text, {field.c_str()}, lo, hi);
  }
  const auto& items = v->AsArray();
  // vLLM asserts len(list) > layer_id for every layer it builds.
  if (static_cast<int64_t>(items.size()) < spec.num_layers) {
    throw InvalidArgument(field, "must hold one value for each of the " + std::to_string(spec.num_layers) +
                                     " layers, got " + std::to_string(items.size()));
  }
  std::optional<int64_t> common;
  for (int64_t i = 0; i < spec.num_layers; ++i) {
    const int64_t x = AsInteger(items[static_cast<size_t>(i)], field);
    if (x < lo || x > hi) {
      throw InvalidArgument(field, "entries must lie in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                       "], got " + std::to_string(x) + " for layer " + std::to_string(i));
    }
    if (common && x != *common) {
      throw Unsupported(field + " differs between layers (layer 0: " + std::to_string(*common) + ", layer " +
                        std::to_string(i) + ": " + std::to_string(x) +
                        "): vllm_mem sizes one MoE shape for every layer");
    }
    common = x;
  }
  return common;
}

/*! HunYuan's shared MLP (model_families.json shared_mlp_experts_field): a gated HunYuanMLP of
 *  intermediate_size x num_shared_expert beside the experts, built only while the switch
 *  (use_mixed_mlp_moe) is on. The count has no default here: a guessed one would size a wrong MLP. */
void ReadSharedExpertsMlp(const ModelSpec& spec, const JsonValue& text, const std::string& field, MoeSpec& moe) {
  const JsonValue* on = FamilyTrait(spec.model_type, "shared_mlp_switch_field");
  if (on != nullptr && !OptionalBool(text, on->AsString().c_str()).value_or(false)) return;
  const auto count = OptionalPerLayerInt(spec, text, field, 0, kMaxExperts);
  if (!count) throw InvalidArgument(field, "is required when the shared MLP is on");
  if (*count == 0) return;
  moe.shared_expert_intermediate_size = CheckedMul(spec.intermediate_size, *count, field.c_str());
  RequirePositiveAtMost(moe.shared_expert_intermediate_size, kMaxIntermediateSize, field.c_str(),
                        "vllm_mem/base/limits.h: 100x beyond real models");
  moe.shared_expert_gate = false;  // HunYuanMLP has no sigmoid gate of its own
}

/*! The router facts model_families.json gives a MoE family: an e_score_correction_bias whatever
 *  topk_method says, always (GLM-4-MoE, ERNIE-4.5-MoE) or when a config switch says so
 *  (MiniMax-M2's use_routing_bias), its dtype, and a float32 router weight (GLM-4-MoE's and
 *  MiniMax-M2's gate). */
void ApplyRouterTraits(const std::string& model_type, const JsonValue& text, MoeSpec& moe) {
  if (FamilyFlag(model_type, "router_score_bias", false)) moe.router_bias = true;
  if (const JsonValue* field = FamilyTrait(model_type, "router_score_bias_field")) {
    moe.router_bias = OptionalBool(text, field->AsString().c_str()).value_or(false);
  }
  if (const JsonValue* dtype = FamilyTrait(model_type, "router_score_bias_dtype")) {
    moe.score_bias_element_bytes = dtype->AsString() == "float32" ? 4 : 0;  // float32 bytes; 0: the model dtype
  }
  if (const JsonValue* dtype = FamilyTrait(model_type, "router_dtype")) {
    moe.router_element_bytes = dtype->AsString() == "float32" ? 4 : 0;  // float32 bytes; 0: the model dtype
  }
}

/*! The family's MoE facts (model_families.json): Llama-4's routed experts and one shared expert
 *  are intermediate_size wide, its dense layers intermediate_size_mlp; GraniteMoeShared's shared
 *  MLP; the router's (ApplyRouterTraits). */
void ApplyFamilyMoe(ModelSpec& spec, const JsonValue& text, MoeSpec& moe) {
  if (FamilyFlag(spec.model_type, "moe_experts_use_intermediate_size", false)) {
    moe.expert_intermediate_size = spec.intermediate_size;
  }
  if (const JsonValue* shared = FamilyTrait(spec.model_type, "moe_num_shared_experts")) {
    moe.num_shared_experts = *shared->AsNumber().integer;
  }
  // GraniteMoeShared: a plain shared MLP (no gate) of shared_intermediate_size beside the experts.
  if (const JsonValue* field = FamilyTrait(spec.model_type, "shared_mlp_field")) {
    moe.shared_expert_intermediate_size =
        OptionalIntIn(text, {field->AsString().c_str()}, 0, kMaxIntermediateSize).value_or(0);
    moe.shared_expert_gate = false;
  }
  if (const JsonValue* field = FamilyTrait(spec.model_type, "shared_mlp_experts_field")) {
    ReadSharedExpertsMlp(spec, text, field->AsString(), moe);
  }
  ApplyRouterTraits(spec.model_type, text, moe);
  if (const JsonValue* field = FamilyTrait(spec.model_type, "dense_intermediate_size_field")) {
    if (auto dense = OptionalInt(text, {field->AsString().c_str()})) {
      RequirePositiveAtMost(*dense, kMaxIntermediateSize, field->AsString().c_str(),
                            "vllm_mem/base/limits.h: 100x beyond real models");
      spec.intermediate_size = *dense;
    }
  }
}

/*! Routed and shared experts; 0 experts means a dense model (Granite's num_local_experts: 0),
 *  a negative count is no model. */
void ReadMoe(ModelSpec& spec, const JsonValue& text) {
  const auto experts = OptionalIntIn(text, {"num_local_experts", "num_experts", "n_routed_experts"}, 0, kMaxExperts);
  if (!experts || *experts == 0) return;
  // HunYuan's _is_moe: one expert is the dense HunYuanMLP (model_families.json moe_needs_two_experts).
  if (*experts == 1 && FamilyFlag(spec.model_type, "moe_needs_two_experts", false)) return;
  MoeSpec moe;
  moe.num_experts = *experts;
  if (const JsonValue* top_k = FamilyTrait(spec.model_type, "moe_top_k_field")) {
    const std::string& field = top_k->AsString();
    const auto k = OptionalPerLayerInt(spec, text, field, 1, kMaxExperts);
    if (!k) throw InvalidArgument(field, "is required (the experts each token is routed to)");
    moe.num_experts_per_token = *k;
  } else {
    moe.num_experts_per_token =
        RequiredPositiveInt(text, {"num_experts_per_tok", "experts_per_token", "moe_top_k", "num_experts_per_token"},
                            kMaxExperts);
  }
  // The range is checked below, with the message this field always had.
  const char* width = FindFirstKey(text, {"moe_intermediate_size", "expert_intermediate_size"}).first;
  moe.expert_intermediate_size =
      OptionalPerLayerInt(spec, text, width != nullptr ? width : "moe_intermediate_size",
                          std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())
          .value_or(spec.intermediate_size);
  RequirePositiveAtMost(moe.expert_intermediate_size, kMaxIntermediateSize, "moe_intermediate_size",
                        "vllm_mem/base/limits.h: 100x beyond real models");
  moe.num_shared_experts = OptionalIntIn(text, {"n_shared_experts", "num_shared_experts"}, 0, kMaxExperts).value_or(0);
  moe.shared_expert_intermediate_size =
      OptionalIntIn(text, {"shared_expert_intermediate_size"}, 0, kMaxIntermediateSize).value_or(0);
  moe.shared_expert_gate = moe.shared_expert_intermediate_size > 0;
  // DeepSeek-V3's e_score_correction_bias, or a router Linear with a bias (gpt-oss's trait).
  moe.router_bias = OptionalString(text, "topk_method") == "noaux_tc" || spec.traits.router_bias;
  ApplyFamilyMoe(spec, text, moe);
  if (moe.num_experts_per_token > moe.num_experts) {
    throw InvalidArgument("num_experts_per_tok",
                          "must not exceed the number of experts (" + std::to_string(moe.num_experts) + ")");
  }
  spec.moe = moe;
}

/*! The layer list. Hybrids (hybrid_config.cc) read their own layer types after the generic MoE
 *  rule, which their family rules then refine (Jamba's expert period, Nemotron-H's pattern). */
void ReadLayers(ModelSpec& spec, const JsonValue& text, const JsonValue& config) {
  const bool hybrid = IsHybridModelType(spec.model_type);
  if (hybrid) {
    spec.layers.assign(static_cast<size_t>(spec.num_layers), LayerSpec{});
  } else {
    ResolveAttentionKinds(spec, text);
  }
  ResolveMoeLayers(spec, text);
  if (hybrid) ReadHybridLayers(spec, text, config);
}

/*! The vision tower and projector, when this wrapper and tower have rules (vision_weights.h);
 *  the multimodal caveat then gives way to the one on the encoder's profiling run, unless the
 *  processor's largest item has a rule too (vision_profile_item.h: the plan then sizes that run). */
void ReadVision(ModelSpec& spec, const JsonValue& config) {
  spec.vision = ReadVisionEncoder(config, spec.hidden_size);
  spec.audio = ReadAudioEncoder(config, spec.hidden_size);
  // A family with an audio tower (Gemma-3n: the audio_tower trait) is counted with both towers or
  // neither: a checkpoint missing one keeps the family's multimodal caveat.
  const JsonValue* audio_tower = FamilyTrait(spec.model_type, "audio_tower");
  if (audio_tower != nullptr && audio_tower->AsBool() && !(spec.vision && spec.audio)) {
    spec.vision.reset();
    spec.audio.reset();
    return;
  }
  if (!spec.vision) return;
  const JsonValue* own = FamilyTrait(spec.model_type, "multimodal_caveat");
  for (const std::string& counted : {MultimodalCaveat(), own != nullptr ? own->AsString() : MultimodalCaveat()}) {
    spec.caveats.erase(std::remove(spec.caveats.begin(), spec.caveats.end(), counted), spec.caveats.end());
  }
  if (!LargestVisionItem(*spec.vision)) {
    spec.caveats.push_back(VisionProfilingCaveat());
  }
}

}  // namespace

ModelSpec ModelSpec::FromHfConfig(const JsonValue& raw_config, const ModelReadOptions& options) {
  if (!raw_config.IsObject()) {
    throw InvalidArgument("config", "config.json must hold a JSON object, got " + raw_config.KindName());
  }
  TextConfig(raw_config);  // a malformed text_config is named before defaults are filled in
  // Published files omit fields equal to transformers' class defaults (Gemma-3's text_config
  // has no vocab_size): fill them as transformers does before reading (config_defaults.h).
  const JsonValue config = ApplyConfigDefaults(raw_config);
  const JsonValue& text = TextConfig(config);

  ModelSpec spec;
  spec.model_type = OptionalString(text, "model_type");
  if (spec.model_type.empty()) spec.model_type = OptionalString(config, "model_type");
  CheckModelFamily(spec, config, options);
  CheckRefusedSwitches(spec, text, options);
  ReadArchitectures(spec, config);
  spec.dtype = ReadDType(text, config);
  ReadDimensions(spec, text);
  // Attention-free families (model_families.json attention_free: Mamba) have no heads: vLLM reads
  // getattr(hf_text_config, "num_attention_heads", 0), so 0 heads, 0 KV heads, no head_dim.
  if (!FamilyFlag(spec.model_type, "attention_free", false)) {
    ReadHeads(spec, text);
    ReadHeadDim(spec, text);
    ReadSparseIndexer(spec, text);
  }
  ReadMlpPositionsAndTying(spec, text, config);
  spec.traits = ReadTraits(spec.model_type, text, spec.head_dim);
  ReadMoe(spec, text);
  spec.quantization = ReadQuantization(text, config);
  ReadLayers(spec, text, config);
  ReadPerLayerExtras(spec, text);
  ReadVision(spec, config);
  return spec;
}

}  // namespace vllm_mem
