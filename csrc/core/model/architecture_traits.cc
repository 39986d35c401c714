/*!
 * \file core/model/architecture_traits.cc
 * \brief ArchitectureTraits from the config's explicit switches (attention_bias, mlp_bias) and
 *        the family's facts in model_families.json "traits": biases, norms, MLP kind, positions,
 *        the embedding width and the final norm. No model_type is tested here; each fact is
 *        data with its source.
 */
#include "core/base/checked_math.h"
#include "core/model/config_fields.h"
#include "core/model/config_readers.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/model/model_family.h"

namespace vllm_mem {

const JsonValue* FamilyTrait(const std::string& model_type, const char* key) {
  const JsonValue* family = FamilyTraits(model_type);
  return family != nullptr ? family->Find(key) : nullptr;
}

bool FamilyFlag(const std::string& model_type, const char* key, bool fallback) {
  const JsonValue* v = FamilyTrait(model_type, key);
  return v != nullptr ? v->AsBool() : fallback;
}

namespace {

/*! One config switch for the linear biases (bias_field / bias_default) over the linears of its
 *  bias_scope: "all" (OPT's enable_bias), "attention" = qkv and o (InternLM2's bias; its MLP has
 *  none), "qkv" = q, k, v only (ERNIE-4.5 and Seed-OSS read attention_bias for those alone). */
void ApplyBiasSwitch(const JsonValue& family, const JsonValue& text, ArchitectureTraits& t) {
  const JsonValue* field = family.Find("bias_field");
  if (field == nullptr) return;
  const JsonValue* fallback = family.Find("bias_default");
  const bool bias = OptionalBool(text, field->AsString().c_str()).value_or(fallback != nullptr && fallback->AsBool());
  const JsonValue* scope = family.Find("bias_scope");
  const std::string scoped = scope != nullptr ? scope->AsString() : "all";
  t.qkv_bias = bias;
  t.attention_out_bias = scoped != "qkv" && bias;
  if (scoped == "all") t.mlp_bias = bias;
}

/*! Linear biases: the family's switch (ApplyBiasSwitch), then its fixed biases, which win, then
 *  o_proj's own switch (Seed-OSS's attention_out_bias). */
void ApplyBiasTraits(const JsonValue& family, const JsonValue& text, ArchitectureTraits& t) {
  ApplyBiasSwitch(family, text, t);
  const struct {
    const char* key;
    bool ArchitectureTraits::* member;
  } kFlags[] = {{"qkv_bias", &ArchitectureTraits::qkv_bias},
                {"attention_out_bias", &ArchitectureTraits::attention_out_bias},
                {"mlp_bias", &ArchitectureTraits::mlp_bias},
                {"lm_head_bias", &ArchitectureTraits::lm_head_bias},
                {"gated_mlp", &ArchitectureTraits::gated_mlp},
                {"qk_norm", &ArchitectureTraits::qk_norm},
                {"parallel_block", &ArchitectureTraits::parallel_block},
                {"attention_sinks", &ArchitectureTraits::attention_sinks},
                {"router_bias", &ArchitectureTraits::router_bias},
                {"attn_output_gate", &ArchitectureTraits::attn_output_gate},
                {"embeddings_on_every_pp_rank", &ArchitectureTraits::embeddings_on_every_pp_rank}};
  for (const auto& flag : kFlags) {
    if (const JsonValue* v = family.Find(flag.key)) t.*flag.member = v->AsBool();
  }
  if (const JsonValue* field = family.Find("attention_out_bias_field")) {
    t.attention_out_bias = OptionalBool(text, field->AsString().c_str()).value_or(false);
  }
  // A q/k norm switched by the config (Cohere's, GLM-4-MoE's and HunYuan's use_qk_norm), and its shape.
  if (const JsonValue* field = family.Find("qk_norm_field")) {
    t.qk_norm = OptionalBool(text, field->AsString().c_str()).value_or(false);
  }
  if (const JsonValue* shape = family.Find("qk_norm_shape")) {
    const std::string& s = shape->AsString();
    t.qk_norm_shape = s == "per_head"     ? QkNormShape::kPerHead
                      : s == "projection" ? QkNormShape::kProjection
                      : s == "all_heads"  ? QkNormShape::kAllHeads
                                          : QkNormShape::kHeadDim;
  }
  // Qwen3NextAttention reads getattr(config, "attn_output_gate", True): the trait is the default.
  if (family.Find("attn_output_gate") != nullptr) {
    t.attn_output_gate = OptionalBool(text, "attn_output_gate").value_or(t.attn_output_gate);
  }
}

/*! Norms per layer and their kind, learned positions, the embedding width of its own
 *  (project_in / out) and the final norm's switches. */
void ApplyShapeTraits(const std::string& model_type, const JsonValue& family, const JsonValue& text,
                      ArchitectureTraits& t) {
  if (const JsonValue* norm = family.Find("norm")) t.norm_bias = norm->AsString() == "layernorm";
  if (const JsonValue* n = family.Find("norms_per_layer")) t.norms_per_layer = *n->AsNumber().integer;
  if (const JsonValue* offset = family.Find("learned_positions_offset")) {
    const int64_t positions =
        OptionalIntIn(text, {"max_position_embeddings", "n_positions"}, 1, kMaxModelLenTokens).value_or(0);
    if (positions == 0) {
      throw InvalidArgument("max_position_embeddings",
                            "required: " + model_type + " learns a position table of that many rows");
    }
    t.learned_position_rows = positions + *offset->AsNumber().integer;
  }
  if (const JsonValue* field = family.Find("embed_dim_field")) {
    t.embed_dim = OptionalIntIn(text, {field->AsString().c_str()}, 1, kMaxHiddenSize).value_or(0);
  }
  if (const JsonValue* field = family.Find("final_norm_field")) {
    t.final_norm = OptionalBool(text, field->AsString().c_str()).value_or(true);
    if (const JsonValue* removed = family.Find("final_norm_removed_field")) {
      t.final_norm = t.final_norm && !OptionalBool(text, removed->AsString().c_str()).value_or(false);
    }
  }
}

}  // namespace

ArchitectureTraits ReadTraits(const std::string& model_type, const JsonValue& text, int64_t head_dim) {
  ArchitectureTraits t;
  // The explicit switches of llama-shaped configs (Llama, Mistral, Granite, ...).
  t.qkv_bias = OptionalBool(text, "attention_bias").value_or(false);
  t.attention_out_bias = t.qkv_bias;
  t.mlp_bias = OptionalBool(text, "mlp_bias").value_or(false);
  if (const JsonValue* family = FamilyTraits(model_type)) {
    ApplyBiasTraits(*family, text, t);
    ApplyShapeTraits(model_type, *family, text, t);
  }
  ReadRotary(model_type, text, head_dim, t);
  return t;
}

}  // namespace vllm_mem
