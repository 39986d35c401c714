/*!
 * \file core/model/layer_pattern.cc
 * \brief Which layers slide, attend in chunks or route to experts, following how the model code
 *        in vLLM / transformers reads the config: an explicit layer_types list first, then a
 *        sliding_window_pattern (the family's default from model_families.json when the file
 *        omits it: Gemma-2, Gemma-3, Command-R7B), Qwen's use_sliding_window + max_window_layers,
 *        and otherwise a sliding_window that applies to every layer (Mistral-7B-v0.1, Phi-3).
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

void SetSliding(LayerSpec& layer, int64_t window) {
  layer.attention = AttentionKind::kSlidingWindow;
  layer.sliding_window_tokens = window;
}

/*! A checkpoint with KV-cache scales (compressed-tensors / modelopt kv_cache_scheme) makes
 *  vLLM's "auto" KV dtype fp8. Only the config level holding the model fields is read here. */
void ReadCheckpointKvDtype(ModelSpec& spec, const JsonValue& text) {
  if (const JsonValue* q = text.Find("quantization_config"); q != nullptr && q->IsObject()) {
    if (const JsonValue* kv = q->Find("kv_cache_scheme"); kv != nullptr && !kv->IsNull()) {
      spec.checkpoint_kv_cache_dtype = "fp8";
    }
  }
}

/*! Llama-4: layers with RoPE attend within chunks of attention_chunk_size tokens; the NoPE
 *  layers (no_rope_layers[i] == 0, by default every 4th) attend globally (vLLM llama4.py). */
void ReadChunkedAttention(ModelSpec& spec, const JsonValue& text) {
  const int64_t chunk = OptionalIntIn(text, {"attention_chunk_size"}, INT64_MIN, kMaxWindowTokens).value_or(0);
  if (chunk <= 0) return;
  const JsonValue* no_rope = text.Find("no_rope_layers");
  const bool listed = no_rope != nullptr && no_rope->IsArray() && !no_rope->AsArray().empty();
  if (listed && static_cast<int64_t>(no_rope->AsArray().size()) != spec.num_layers) {
    throw InvalidArgument("no_rope_layers",
                          "must list num_hidden_layers (" + std::to_string(spec.num_layers) + ") entries");
  }
  const int64_t interval = OptionalInt(text, {"no_rope_layer_interval"}).value_or(4);
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const bool uses_rope = listed ? AsInteger(no_rope->AsArray()[i], "no_rope_layers") != 0
                                  : (interval <= 0 || (static_cast<int64_t>(i) + 1) % interval != 0);
    if (uses_rope) spec.layers[i].attention_chunk_size_tokens = chunk;
  }
}

/*! An explicit layer_types list: one string per layer. */
void ReadLayerTypes(ModelSpec& spec, const JsonValue& layer_types, int64_t window) {
  if (!layer_types.IsArray() || static_cast<int64_t>(layer_types.AsArray().size()) != spec.num_layers) {
    throw InvalidArgument("layer_types",
                          "must be a list of num_hidden_layers (" + std::to_string(spec.num_layers) + ") strings");
  }
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const JsonValue& kind = layer_types.AsArray()[i];
    if (!kind.IsString()) throw InvalidArgument("layer_types", "entries must be strings");
    const std::string& k = kind.AsString();
    if (k == "sliding_attention" || k == "sliding_window_attention" || k == "local_attention") {
      if (window == 0) {
        throw InvalidArgument("sliding_window", "layer_types names sliding layers but sliding_window is not set");
      }
      SetSliding(spec.layers[i], window);
    } else if (k == "full_attention" || k == "global_attention" || k == "attention") {
      spec.layers[i].attention = AttentionKind::kFull;
    } else {
      throw InvalidArgument(
          "layer_types", "unsupported layer type " + EchoValue(k) + "; supported: full_attention, sliding_attention");
    }
  }
}

/*! A sliding window without layer_types: the pattern (every p-th layer global), Qwen's switch
 *  and first sliding layer, or every layer. */
void ReadSlidingPattern(ModelSpec& spec, const JsonValue& text, int64_t window) {
  std::optional<int64_t> pattern = OptionalInt(text, {"sliding_window_pattern"});
  if (!pattern) {
    if (const JsonValue* d = FamilyTrait(spec.model_type, "sliding_window_pattern_default")) {
      pattern = *d->AsNumber().integer;
    }
  }
  if (pattern) {
    if (*pattern <= 0) throw InvalidArgument("sliding_window_pattern", "must be a positive integer");
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      if ((static_cast<int64_t>(i) + 1) % *pattern != 0) SetSliding(spec.layers[i], window);
    }
    return;
  }
  int64_t first = 0;
  if (text.Find("use_sliding_window") != nullptr) {
    // Qwen2 / Qwen3: the window applies only when switched on, and then from layer
    // max_window_layers onwards.
    if (!OptionalBool(text, "use_sliding_window").value_or(false)) return;
    first = OptionalInt(text, {"max_window_layers"}).value_or(0);
  }
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    if (static_cast<int64_t>(i) >= first) SetSliding(spec.layers[i], window);
  }
}

/*! mlp_only_layers, sorted: layers that keep a dense MLP in a MoE model. */
std::vector<int64_t> MlpOnlyLayers(const JsonValue& text) {
  std::vector<int64_t> mlp_only;
  const JsonValue* v = text.Find("mlp_only_layers");
  if (v == nullptr || v->IsNull()) return mlp_only;
  if (!v->IsArray()) throw InvalidArgument("mlp_only_layers", "must be a list of layer indices, got " + v->KindName());
  for (const auto& e : v->AsArray()) mlp_only.push_back(AsInteger(e, "mlp_only_layers"));
  std::sort(mlp_only.begin(), mlp_only.end());
  return mlp_only;
}

}  // namespace

void ResolveAttentionKinds(ModelSpec& spec, const JsonValue& text) {
  spec.layers.assign(static_cast<size_t>(spec.num_layers), LayerSpec{});
  ReadCheckpointKvDtype(spec, text);
  ReadChunkedAttention(spec, text);
  if (spec.mla) {
    for (auto& layer : spec.layers) layer.attention = AttentionKind::kMla;
    return;
  }
  // 0 (or absent / null) means no sliding window; some configs write 0 for "off".
  const int64_t window =
      std::max<int64_t>(OptionalIntIn(text, {"sliding_window"}, INT64_MIN, kMaxWindowTokens).value_or(0), 0);
  const JsonValue* layer_types = text.Find("layer_types");
  if (layer_types != nullptr && !layer_types->IsNull()) {
    ReadLayerTypes(spec, *layer_types, window);
  } else if (window > 0) {
    ReadSlidingPattern(spec, text, window);
  }
}

void ResolveMoeLayers(ModelSpec& spec, const JsonValue& text) {
  if (!spec.moe) return;
  const int64_t first_dense = OptionalInt(text, {"first_k_dense_replace"}).value_or(0);
  // Llama-4's interleave_moe_layer_step: layers step-1, 2*step-1, ... are MoE, as Qwen's
  // decoder_sparse_step (transformers Llama4TextConfig.moe_layers).
  const int64_t freq =
      OptionalInt(text, {"moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step"}).value_or(1);
  if (freq <= 0) throw InvalidArgument("moe_layer_freq", "must be a positive integer");
  // Sorted lookup: the list may be as long as the JSON value limit, so no scan per layer.
  const std::vector<int64_t> mlp_only = MlpOnlyLayers(text);
  const bool deepseek_style = text.Find("first_k_dense_replace") != nullptr;
  // ERNIE-4.5-MoE (vllm ernie45_moe.py): experts only from moe_layer_start_index to moe_layer_end_index.
  const int64_t last_layer = static_cast<int64_t>(spec.layers.size()) - 1;
  const int64_t first_moe = OptionalIntIn(text, {"moe_layer_start_index"}, 0, last_layer).value_or(0);
  const int64_t last_moe = OptionalIntIn(text, {"moe_layer_end_index"}, 0, kMaxNumLayers).value_or(last_layer);
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const int64_t idx = static_cast<int64_t>(i);
    // DeepSeek: dense before first_k_dense_replace, then every moe_layer_freq-th; Qwen-MoE:
    // every decoder_sparse_step-th layer counting from 1.
    const bool moe = deepseek_style ? idx >= first_dense && idx % freq == 0 : (idx + 1) % freq == 0;
    const bool in_moe_range = idx >= first_moe && idx <= last_moe;
    spec.layers[i].moe = moe && in_moe_range && !std::binary_search(mlp_only.begin(), mlp_only.end(), idx);
  }
}

}  // namespace vllm_mem
