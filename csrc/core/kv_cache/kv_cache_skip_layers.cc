/*!
 * \file core/kv_cache/kv_cache_skip_layers.cc
 * \brief Which attention layers --kv-cache-dtype-skip-layers keeps in the model dtype.
 */
#include "vllm_mem/kv_cache/kv_cache_skip_layers.h"

#include <algorithm>
#include <cctype>

#include "vllm_mem/base/error.h"

namespace vllm_mem {
namespace {

constexpr const char kSlidingWindowWord[] = "sliding_window";  // the one attention-type word vLLM reads

/*! Python's str(int) of a non-negative index: digits, no sign, no leading zero; -1 otherwise
 *  (also past 9 digits: more layers than any bound here). */
int64_t IndexOf(const std::string& item) {
  if (item.empty() || item.size() > 9 || (item.size() > 1 && item.front() == '0')) return -1;
  int64_t value = 0;
  for (char c : item) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

void RefuseUnmodelledModel(const ModelSpec& model) {
  if (model.mla) {
    throw Unsupported(
        "kv_cache_dtype_skip_layers on an MLA model is not modelled: vLLM's MLAAttention ignored the "
        "list before PR #47309 and its release was not read");
  }
  if (model.hybrid) {
    throw Unsupported(
        "kv_cache_dtype_skip_layers on a hybrid attention + Mamba model is not modelled: two "
        "attention page sizes beside the state's page are unified by rules not read here");
  }
}

int64_t CheckedIndex(const std::string& item, const ModelSpec& model, const std::string& field) {
  const int64_t n = static_cast<int64_t>(model.layers.size());
  const int64_t index = IndexOf(item);
  if (index < 0) {
    throw InvalidArgument(field,
                          "must be 'sliding_window' or a decoder-layer index written as a plain integer (0 "
                          "to " +
                              std::to_string(n - 1) + "); got " + EchoValue(item) +
                              " (vLLM compares each item with str(layer index) and ignores one that matches "
                              "no layer)");
  }
  if (index >= n) {
    throw InvalidArgument(field, "layer " + item + " is past the model's " + std::to_string(n) + " layers (0 to " +
                                     std::to_string(n - 1) + "); vLLM would ignore it");
  }
  if (model.layers[static_cast<size_t>(index)].attention == AttentionKind::kNone) {
    throw InvalidArgument(field, "layer " + item + " holds no attention KV cache; vLLM would ignore it");
  }
  return index;
}

}  // namespace

bool KvSkipLayers::Skips(int64_t layer_index, bool has_sliding_window) const {
  if (sliding_window && has_sliding_window) return true;
  return std::binary_search(layer_indices.begin(), layer_indices.end(), layer_index);
}

KvSkipLayers ParseKvSkipLayers(const std::vector<std::string>& items, const ModelSpec& model, const char* field) {
  KvSkipLayers out;
  if (items.empty()) return out;
  RefuseUnmodelledModel(model);
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i] == kSlidingWindowWord) {
      out.sliding_window = true;
      continue;
    }
    out.layer_indices.push_back(CheckedIndex(items[i], model, std::string(field) + "[" + std::to_string(i) + "]"));
  }
  std::sort(out.layer_indices.begin(), out.layer_indices.end());
  out.layer_indices.erase(std::unique(out.layer_indices.begin(), out.layer_indices.end()), out.layer_indices.end());
  return out;
}

}  // namespace vllm_mem
