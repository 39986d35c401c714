/*!
 * \file core/model/rotary_config.cc
 * \brief The rotary embedding's cos/sin caches, which vLLM allocates on the GPU at load time (one
 *        per distinct rope configuration, shared by all layers): their row counts follow get_rope
 *        (max_position_embeddings, times the scaling factor for yarn / linear / dynamic scaling,
 *        which precompute the extended range, and 4 for multimodal rope), their width the rotated
 *        part of the head.
 */
#include <algorithm>
#include <string>

#include "core/model/config_fields.h"
#include "core/model/config_readers.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

/*! The rope_type names vLLM's get_rope builds a cache for (rotary_embedding/__init__.py of the
 *  newest release: default, llama3, mllama4, linear, ntk, dynamic, xdrope, yarn, deepseek_yarn,
 *  deepseek_llama_scaling, longrope, openpangu), plus the two older spellings vLLM's
 *  patch_rope_parameters renames ("su" -> longrope, "mrope" -> default). Any other name is
 *  get_rope's ValueError("Unknown RoPE scaling type ..."). */
bool KnownRopeType(const std::string& type) {
  for (const char* known :
       {"", "default", "linear", "dynamic", "ntk", "yarn", "deepseek_yarn", "deepseek_llama_scaling", "llama3",
        "mllama4", "xdrope", "openpangu", "longrope", "su", "mrope"}) {
    if (type == known) return true;
  }
  return false;
}

/*! rope_scaling (or transformers v5's rope_parameters): an object or absent. */
const JsonValue* ScalingObject(const JsonValue& text) {
  const JsonValue* scaling = FindFirst(text, {"rope_scaling", "rope_parameters"});
  if (scaling != nullptr && !scaling->IsObject()) {
    throw InvalidArgument("rope_scaling", "must be an object (or null), got " + scaling->KindName());
  }
  return scaling;
}

/*! rope_type, or the older spelling type; "" when unscaled. */
std::string RopeType(const JsonValue* scaling) {
  if (scaling == nullptr) return "";
  std::string type = OptionalString(*scaling, "rope_type");
  if (type.empty()) type = OptionalString(*scaling, "type");
  if (!KnownRopeType(type)) {
    throw InvalidArgument("rope_scaling.rope_type",
                          "unknown RoPE scaling type " + EchoValue(type.substr(0, 40)) +
                              " (vLLM's get_rope refuses it); known: default, linear, dynamic, ntk, yarn, "
                              "deepseek_yarn, deepseek_llama_scaling, llama3, mllama4, xdrope, openpangu, "
                              "longrope (su), mrope");
  }
  return type;
}

/*! The rotated fraction of the head: partial_rotary_factor at the top level, then inside
 *  rope_parameters (transformers v5), then the family's default; a family that names the rotated
 *  width (MiniMax-M2's rotary_dim) has it as rotary_dim / head_dim, as vLLM sets it. */
double PartialRotaryFactor(const std::string& model_type, const JsonValue& text, const JsonValue* scaling,
                           int64_t head_dim) {
  const JsonValue* f = text.Find("partial_rotary_factor");
  if ((f == nullptr || f->IsNull()) && scaling != nullptr) f = scaling->Find("partial_rotary_factor");
  double factor = 1.0;
  if (f != nullptr && !f->IsNull()) {
    if (!f->IsNumber()) {
      throw InvalidArgument("partial_rotary_factor", "must be a number in (0, 1], got " + f->KindName());
    }
    factor = f->AsNumber().value;
  } else if (const JsonValue* d = FamilyTrait(model_type, "partial_rotary_factor_default")) {
    factor = d->AsNumber().value;
  }
  if (const JsonValue* field = FamilyTrait(model_type, "rotary_dim_field")) {
    if (auto dim = OptionalIntIn(text, {field->AsString().c_str()}, 1, head_dim)) {
      factor = static_cast<double>(*dim) / static_cast<double>(head_dim);
    }
  }
  if (!(factor > 0.0 && factor <= 1.0)) {
    throw InvalidArgument("partial_rotary_factor", "must be in (0, 1], got " + FormatRounded(factor, 6));
  }
  return factor;
}

/*! The scaling factor, positive and finite: a factor of 0, -2 or 1e300 would give an empty,
 *  negative or unrepresentable cache (fuzzing found the product cast to int64 before any check). */
double ScalingFactor(const JsonValue& scaling) {
  const JsonValue* factor = scaling.Find("factor");
  if (factor != nullptr && !factor->IsNull() && !factor->IsNumber()) {
    throw InvalidArgument("rope_scaling.factor", "must be a number, got " + factor->KindName());
  }
  const double f = factor != nullptr && factor->IsNumber() ? factor->AsNumber().value : 1.0;
  if (!(f > 0.0 && f <= kMaxRopeScalingFactor)) {
    throw InvalidArgument("rope_scaling.factor", "must be a number in (0, " + FormatRounded(kMaxRopeScalingFactor, 0) +
                                                     "], got " + FormatRounded(f, 6));
  }
  return f;
}

int64_t Scaled(int64_t base, double factor) {
  const double rows = static_cast<double>(base) * factor;
  if (rows > static_cast<double>(kMaxModelLenTokens)) {
    throw InvalidArgument("rope_scaling.factor", "scales max_position_embeddings (" + std::to_string(base) + ") to " +
                                                     FormatRounded(rows, 0) + " positions, above " +
                                                     std::to_string(kMaxModelLenTokens) + " (vllm_mem/base/limits.h)");
  }
  return static_cast<int64_t>(rows);
}

/*! Rows of the (long) cache for this scaling; longrope also sets its short cache. */
int64_t CachePositions(const std::string& type, const JsonValue& scaling, const JsonValue& text, int64_t positions,
                       ArchitectureTraits& t) {
  const double f = ScalingFactor(scaling);
  if (type == "yarn" || type == "deepseek_yarn" || type == "deepseek_llama_scaling") {
    // YaRN / DeepseekScaling precompute original_max_position_embeddings x factor rows.
    if (auto original = OptionalIntIn(scaling, {"original_max_position_embeddings"}, 0, kMaxModelLenTokens)) {
      positions = *original;
    }
    return Scaled(positions, f);
  }
  if (type == "linear" || type == "dynamic") return Scaled(positions, f);
  if (type == "longrope" || type == "su") {
    // Phi3LongRoPEScaledRotaryEmbedding: a short cache of original_max_position_embeddings rows,
    // then the long one of max_position_embeddings rows; vLLM's patch_rope_parameters copies
    // the config's top-level original_max_position_embeddings into the rope dict.
    std::optional<int64_t> original =
        OptionalIntIn(scaling, {"original_max_position_embeddings"}, 1, kMaxModelLenTokens);
    if (!original) original = OptionalIntIn(text, {"original_max_position_embeddings"}, 1, kMaxModelLenTokens);
    if (!original) {
      throw InvalidArgument("original_max_position_embeddings",
                            "longrope scaling needs it (vLLM's get_rope reads it for the short cache)");
    }
    t.short_rope_cache_positions = *original;
  }
  return positions;
}

/*! vLLM's MRotaryEmbedding (rotary_embedding/mrope.py), which get_rope builds for the default and
 *  YaRN rope types when the rope dict has mrope_section (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5):
 *  "We enlarge max_position_embeddings to 4 times to get a larger the cos and sin cache"
 *  (cache_max_position_num = max_position_embeddings * 4, the rows YaRN's table scales too). */
constexpr double kMropeCacheFactor = 4.0;

bool IsMrope(const JsonValue& scaling, const std::string& type) {
  const JsonValue* section = scaling.Find("mrope_section");
  const bool builds_mrope = type.empty() || type == "default" || type == "mrope" || type == "yarn";
  return section != nullptr && !section->IsNull() && builds_mrope;
}

/*! A second cache for sliding layers that build their rope with their own base and no scaling
 *  (Gemma-3's rope_local_base_freq, gemma3.py). get_rope caches one table per (head_size,
 *  rotary_dim, max_position, base, scaling) key, so it is shared only when both keys coincide
 *  (same base, global rope unscaled). */
int64_t LocalCachePositions(const std::string& base_field, const JsonValue& text, const std::string& global_type) {
  const int64_t rows = std::max<int64_t>(OptionalInt(text, {"max_position_embeddings"}).value_or(0), 0);
  const JsonValue* theta = text.Find("rope_theta");
  const JsonValue* local_base = text.Find(base_field);
  const bool same_base = theta != nullptr && local_base != nullptr && theta->IsNumber() && local_base->IsNumber() &&
                         theta->AsNumber().value == local_base->AsNumber().value;
  const bool global_unscaled = global_type.empty() || global_type == "default";
  return same_base && global_unscaled ? 0 : rows;
}

/*! Whether the family's attention uses rotary positions at all (model_families.json "rotary",
 *  "rotary_type_field"). */
bool UsesRotary(const std::string& model_type, const JsonValue& text) {
  if (!FamilyFlag(model_type, "rotary", true)) return false;
  if (const JsonValue* field = FamilyTrait(model_type, "rotary_type_field")) {
    return OptionalString(text, field->AsString().c_str()) == "rope";
  }
  return true;
}

}  // namespace

void ReadRotary(const std::string& model_type, const JsonValue& text, int64_t head_dim, ArchitectureTraits& t) {
  if (!UsesRotary(model_type, text)) return;
  const JsonValue* scaling = ScalingObject(text);
  t.partial_rotary_factor = PartialRotaryFactor(model_type, text, scaling, head_dim);
  int64_t positions = OptionalInt(text, {"max_position_embeddings"}).value_or(0);
  const std::string type = RopeType(scaling);
  if (scaling != nullptr) positions = CachePositions(type, *scaling, text, positions, t);
  t.rope_cache_positions = std::max<int64_t>(positions, 0);
  t.rope_rows_capped_by_max_model_len = FamilyFlag(model_type, "rope_rows_capped_by_max_model_len", false);
  // The table's rows only: the derived max_model_len still reads the (scaled) length above.
  if (scaling != nullptr && IsMrope(*scaling, type)) {
    t.rope_table_rows = Scaled(t.rope_cache_positions, kMropeCacheFactor);
  }
  // CohereAttention: get_rope(max_position=model_max_length or max_position_embeddings).
  if (const JsonValue* field = FamilyTrait(model_type, "rope_positions_field");
      field != nullptr && scaling == nullptr) {
    t.rope_table_rows = OptionalIntIn(text, {field->AsString().c_str()}, 1, kMaxModelLenTokens).value_or(0);
  }
  if (const JsonValue* base_field = FamilyTrait(model_type, "local_rope_base_field")) {
    t.local_rope_cache_positions = LocalCachePositions(base_field->AsString(), text, type);
  }
}

}  // namespace vllm_mem
