/*!
 * \file core/model/config_readers.h
 * \brief The reading steps ModelSpec::FromHfConfig runs in order, one file each: quantization
 *        (quantization_config.cc), architecture traits and the rotary cache (architecture_traits.cc,
 *        rotary_config.cc), which layers slide / chunk / route to experts (layer_pattern.cc).
 *        Internal to the model area.
 */
#ifndef VLLM_MEM_CORE_MODEL_CONFIG_READERS_H_
#define VLLM_MEM_CORE_MODEL_CONFIG_READERS_H_

#include <optional>
#include <string>
#include <vector>

#include "vllm_mem/base/json.h"
#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief The value of one key of \p model_type's entry in model_families.json "traits"
 *  (checked for type when the file was parsed), or nullptr. */
const JsonValue* FamilyTrait(const std::string& model_type, const char* key);

/*! \brief A boolean trait, \p fallback when the family does not set it. */
bool FamilyFlag(const std::string& model_type, const char* key, bool fallback);

/*! \brief quantization_config (top level first, then the text config), reduced to what changes
 *  weight bytes; nullopt when the checkpoint is not quantized. */
std::optional<QuantizationSpec> ReadQuantization(const JsonValue& text, const JsonValue& top);

/*! \brief Biases, norms, MLP kind, per-family facts (model_families.json "traits") and the
 *  rotary caches of \p model_type's text config (\p head_dim: the attention head size). */
ArchitectureTraits ReadTraits(const std::string& model_type, const JsonValue& text, int64_t head_dim);

/*! \brief The rotary embedding's cos/sin caches (rows per cache, partial rotary factor; a rotated
 *  width given as a field is a fraction of \p head_dim). */
void ReadRotary(const std::string& model_type, const JsonValue& text, int64_t head_dim, ArchitectureTraits& t);

/*! \brief One LayerSpec per layer with its attention kind (full, sliding, chunked, MLA). */
void ResolveAttentionKinds(ModelSpec& spec, const JsonValue& text);

/*! \brief Which layers have the MoE block (first_k_dense_replace, decoder_sparse_step, ...). */
void ResolveMoeLayers(ModelSpec& spec, const JsonValue& text);

/*! \brief The MLP width of each layer when the family may list one per layer (model_families.json
 *  per_layer_intermediate_size) and the config does: num_layers entries, each in range, else an
 *  InvalidArgument naming intermediate_size; empty otherwise. */
std::vector<int64_t> PerLayerIntermediateSizes(const ModelSpec& spec, const JsonValue& text);

/*! \brief Gemma-3n's per-layer embeddings, AltUp, LAuReL, its model class's per-layer-embedding
 *  buffer and the layers that reuse an earlier layer's KV cache (per_layer_extras.cc), from the
 *  fields model_families.json names; after the layer pattern, which the KV sharing reads. */
void ReadPerLayerExtras(ModelSpec& spec, const JsonValue& text);

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_MODEL_CONFIG_READERS_H_
