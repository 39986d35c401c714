/*!
 * \file vllm_mem/kv_cache/kv_cache_skip_layers.h
 * \brief vLLM's --kv-cache-dtype-skip-layers (CacheConfig.kv_cache_dtype_skip_layers, PR #33695):
 *        the attention layers whose KV cache keeps the model dtype beside a quantized
 *        --kv-cache-dtype. vLLM's Attention.__init__ (vllm/model_executor/layers/attention/
 *        attention.py) sets a layer's kv_cache_dtype to "auto" when the list holds
 *        "sliding_window" and the layer has a sliding window, or holds str(layer index). The
 *        skipped layers' pages are then larger than the others', so the model's layers no
 *        longer share one page size: get_kv_cache_groups groups them as it groups any layers of
 *        different specs (kv_cache_groups.h: one UniformType group when every layer is of one
 *        type, else page unification by block size). Rules and sources: docs/kv_cache.md.
 */
#ifndef VLLM_MEM_KV_CACHE_KV_CACHE_SKIP_LAYERS_H_
#define VLLM_MEM_KV_CACHE_KV_CACHE_SKIP_LAYERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief The layers a skip list names, read against one model. */
struct KvSkipLayers {
  bool sliding_window = false;         //!< "sliding_window": every layer with a sliding window
  std::vector<int64_t> layer_indices;  //!< decoder-layer indices, sorted, each once
  bool empty() const { return !sliding_window && layer_indices.empty(); }
  /*! Whether the layer \p layer_index (with a sliding window or not) keeps the model dtype. */
  bool Skips(int64_t layer_index, bool has_sliding_window) const;
  bool operator==(const KvSkipLayers&) const = default;
};

/*! \brief Reads \p items as vLLM matches them: "sliding_window", or a layer index written as
 *  Python's str(int) ("7", not "07" or "+7", which vLLM's equality test never matches).
 *  vLLM ignores an item that matches no layer; here it is InvalidArgument naming \p field and the
 *  item, since a skip list that skips nothing is a mistake the plan would otherwise hide: an
 *  unknown word, an index past the model's layers (a drafter's layers count, numbered after the
 *  target's as vLLM numbers them), or an index of a layer that holds no attention KV cache.
 *  Unsupported (refused by name) for what no rule here covers: MLA models (MLAAttention honours
 *  the list only from PR #47309) and hybrid attention + Mamba models (their page unification with
 *  the state is the mamba_state.h rule, not read with two attention page sizes). */
KvSkipLayers ParseKvSkipLayers(const std::vector<std::string>& items, const ModelSpec& model,
                               const char* field = "kv_cache_dtype_skip_layers");

}  // namespace vllm_mem

#endif  // VLLM_MEM_KV_CACHE_KV_CACHE_SKIP_LAYERS_H_
