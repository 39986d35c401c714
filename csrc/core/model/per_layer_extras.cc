/*!
 * \file core/model/per_layer_extras.cc
 * \brief What a Gemma-3n layer holds beyond a Gemma-3 layer, read from the fields
 *        model_families.json names (per_layer_input_size_field, per_layer_input_vocab_field,
 *        altup_inputs_field, laurel_rank_field, kv_shared_layers_field, ...): the per-layer
 *        embeddings, AltUp, LAuReL, the model class's per-layer-embedding buffer, and which of the
 *        last layers reuse an earlier layer's KV cache, as vLLM's gemma3n.py decides it.
 */
#include <algorithm>
#include <string>
#include <vector>

#include "core/model/config_fields.h"
#include "core/model/config_readers.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"

namespace vllm_mem {
namespace {

/*! A required positive integer under the field a trait names (\p trait), 0 when the family has none. */
int64_t TraitField(const ModelSpec& spec, const JsonValue& text, const char* trait, int64_t bound) {
  const JsonValue* field = FamilyTrait(spec.model_type, trait);
  if (field == nullptr) return 0;
  return RequiredPositiveInt(text, {field->AsString().c_str()}, bound);
}

/*! vLLM's Gemma3nMLP raises a ValueError for any other activation (model_families.json
 *  required_hidden_activation, its message hidden_activation_refusal). */
void CheckActivation(const ModelSpec& spec, const JsonValue& text) {
  const JsonValue* required = FamilyTrait(spec.model_type, "required_hidden_activation");
  if (required == nullptr) return;
  // Gemma3nDecoderLayer passes config.hidden_activation (hidden_act is not read).
  const JsonValue* value = text.Find("hidden_activation");
  if (value == nullptr) return;  // transformers' class default is the required one
  if (!value->IsString()) throw InvalidArgument("hidden_activation", "must be a string, got " + value->KindName());
  if (value->AsString() != required->AsString()) {
    throw InvalidArgument("hidden_activation", FamilyTrait(spec.model_type, "hidden_activation_refusal")->AsString());
  }
}

/*! Gemma3nAttention: layer i >= first = num_layers - num_kv_shared_layers reads the KV cache of the
 *  last layer of its kind before first (first - 2 for a sliding layer, first - 1 for a full one),
 *  and only when that index is >= 0; vLLM's get_kv_cache_spec then gives it no KV cache spec. */
void MarkKvSharedLayers(ModelSpec& spec, const JsonValue& text) {
  const JsonValue* field = FamilyTrait(spec.model_type, "kv_shared_layers_field");
  if (field == nullptr) return;
  const std::string& name = field->AsString();
  const int64_t shared = OptionalIntIn(text, {name.c_str()}, 0, spec.num_layers).value_or(0);
  const int64_t first = spec.num_layers - shared;
  for (int64_t i = first; i < spec.num_layers; ++i) {
    LayerSpec& layer = spec.layers[static_cast<size_t>(i)];
    const int64_t offset = layer.attention == AttentionKind::kSlidingWindow ? 2 : 1;
    layer.kv_shared = first - offset >= 0;
  }
}

/*! MatFormer sub-models (Gemma-3n's Mix-and-Match) give layers different MLP widths; vLLM builds
 *  each layer's Gemma3nMLP with intermediate_size[layer]. A list of one width needs no per-layer entry. */
void SetLayerWidths(ModelSpec& spec, const JsonValue& text) {
  const std::vector<int64_t> widths = PerLayerIntermediateSizes(spec, text);
  if (widths.empty() || std::all_of(widths.begin(), widths.end(), [&](int64_t w) { return w == widths[0]; })) return;
  for (size_t i = 0; i < spec.layers.size(); ++i) spec.layers[i].intermediate_size = widths[i];
}

}  // namespace

std::vector<int64_t> PerLayerIntermediateSizes(const ModelSpec& spec, const JsonValue& text) {
  const JsonValue* v = text.Find("intermediate_size");
  if (v == nullptr || !v->IsArray() || !FamilyFlag(spec.model_type, "per_layer_intermediate_size", false)) return {};
  const auto& items = v->AsArray();
  // transformers' Gemma3nTextConfig refuses a list whose length is not num_hidden_layers.
  if (static_cast<int64_t>(items.size()) != spec.num_layers) {
    throw InvalidArgument("intermediate_size", "must hold one width for each of the " +
                                                   std::to_string(spec.num_layers) + " layers, got " +
                                                   std::to_string(items.size()));
  }
  std::vector<int64_t> widths;
  widths.reserve(items.size());
  for (const JsonValue& item : items) {
    const int64_t w = AsInteger(item, "intermediate_size");
    if (w < 1 || w > kMaxIntermediateSize) {
      throw InvalidArgument("intermediate_size", "entries must be in [1, " + std::to_string(kMaxIntermediateSize) +
                                                     "], got " + std::to_string(w));
    }
    widths.push_back(w);
  }
  return widths;
}

void ReadPerLayerExtras(ModelSpec& spec, const JsonValue& text) {
  CheckActivation(spec, text);
  SetLayerWidths(spec, text);
  ArchitectureTraits& t = spec.traits;
  t.per_layer_input_size = TraitField(spec, text, "per_layer_input_size_field", kMaxHiddenSize);
  t.per_layer_input_vocab_size = TraitField(spec, text, "per_layer_input_vocab_field", kMaxVocabSize);
  t.altup_num_inputs = TraitField(spec, text, "altup_inputs_field", kMaxHiddenSize);
  t.laurel_rank = TraitField(spec, text, "laurel_rank_field", kMaxHiddenSize);
  // Gemma3nForConditionalGeneration builds the buffer; Gemma3nForCausalLM (text only) does not.
  if (const JsonValue* arch = FamilyTrait(spec.model_type, "per_layer_embedding_buffer_architecture")) {
    t.per_layer_embedding_buffer =
        std::find(spec.architectures.begin(), spec.architectures.end(), arch->AsString()) != spec.architectures.end();
  }
  // Gemma3nForCausalLM.compute_logits reads embed_tokens whatever tie_word_embeddings says.
  if (FamilyFlag(spec.model_type, "lm_head_is_embedding", false)) spec.tie_word_embeddings = true;
  MarkKvSharedLayers(spec, text);
}

}  // namespace vllm_mem
