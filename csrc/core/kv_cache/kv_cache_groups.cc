/*!
 * \file core/kv_cache/kv_cache_groups.cc
 * \brief KV-cache groups and per-worker block counts, as vLLM's kv_cache_utils.py.
 */
#include "vllm_mem/kv_cache/kv_cache_groups.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"

namespace vllm_mem {
namespace {

bool AllMergeable(const std::vector<LayerKvSpec>& layers) {
  return std::all_of(layers.begin(), layers.end(),
                     [&](const LayerKvSpec& l) { return KvSpecsMergeable(layers.front().spec, l.spec); });
}

bool AllSameType(const std::vector<LayerKvSpec>& layers) {
  return std::all_of(layers.begin(), layers.end(),
                     [&](const LayerKvSpec& l) { return KvSpecsSameType(layers.front().spec, l.spec); });
}

bool IsAttentionLike(const KvCacheSpec& s) { return !std::holds_alternative<MambaKvSpec>(s); }

/*! unify_hybrid_kv_cache_specs: with a full-attention layer present, sliding-window and
 *  chunked-local layers become full attention (memory for every token) so one group fits. */
bool UnifyHybridSpecs(std::vector<LayerKvSpec>& layers) {
  if (AllMergeable(layers)) return false;
  const bool has_full = std::any_of(layers.begin(), layers.end(), [](const LayerKvSpec& l) {
    // MLAAttentionSpec subclasses FullAttentionSpec in vLLM.
    return std::holds_alternative<FullAttentionKvSpec>(l.spec) || std::holds_alternative<MlaKvSpec>(l.spec);
  });
  const bool has_local = std::any_of(layers.begin(), layers.end(), [](const LayerKvSpec& l) {
    return std::holds_alternative<SlidingWindowKvSpec>(l.spec) || std::holds_alternative<ChunkedLocalKvSpec>(l.spec);
  });
  bool converted = false;
  if (has_full && has_local) {
    for (LayerKvSpec& l : layers) l.spec = ToFullAttention(l.spec);
    converted = true;
  }
  if (!(AllMergeable(layers) || AllSameType(layers))) {
    throw InvalidArgument("disable_hybrid_kv_cache_manager",
                          "Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one "
                          "unified type.");
  }
  return converted;
}

/*! unify_kv_cache_spec_page_size: grow every smaller page to the largest one by scaling its
 *  block size; Mamba state pages that do not divide are padded instead. */
void UnifyPageSizes(std::vector<LayerKvSpec>& layers) {
  int64_t max_page = 0;
  for (const LayerKvSpec& l : layers) max_page = std::max(max_page, PageSizeBytes(l.spec));
  for (LayerKvSpec& l : layers) {
    const int64_t page = PageSizeBytes(l.spec);
    if (page == max_page) continue;
    if (max_page % page == 0 && IsAttentionLike(l.spec)) {
      l.spec = WithBlockSize(l.spec, CheckedMul(BlockSizeTokens(l.spec), max_page / page, "block_size"));
    } else if (!IsAttentionLike(l.spec)) {
      l.spec = WithPageSizePadded(l.spec, max_page);  // a Mamba state is one page per request
    } else {
      throw Unsupported("Layer " + std::to_string(l.layer_index) +
                        ": The page size of the layer is not divisible by the maximum page size. Cannot unify by "
                        "adjusting block_size.");
    }
  }
}

}  // namespace

KvCacheGrouping GetKvCacheGroups(const std::vector<LayerKvSpec>& input, bool disable_hybrid_kv_cache_manager,
                                 double group_size_max_ratio) {
  KvCacheGrouping out;
  std::vector<LayerKvSpec> layers = input;
  if (layers.empty()) return out;  // attention-free
  if (disable_hybrid_kv_cache_manager) out.converted_to_full_attention = UnifyHybridSpecs(layers);

  if (AllMergeable(layers)) {
    KvCacheGroupSpec g;
    g.spec = layers.front().spec;
    for (const LayerKvSpec& l : layers) g.layer_indices.push_back(l.layer_index);
    out.groups.push_back(std::move(g));
    return out;
  }
  if (AllSameType(layers)) {
    KvCacheGroupSpec g;
    g.spec = layers.front().spec;
    g.uniform_type = true;
    for (const LayerKvSpec& l : layers) {
      g.layer_indices.push_back(l.layer_index);
      g.layer_specs.push_back(l.spec);
    }
    out.groups.push_back(std::move(g));
    return out;
  }

  UnifyPageSizes(layers);
  // Bucket layers by identical spec, in first-seen order (a Python dict keyed by spec).
  std::vector<std::pair<KvCacheSpec, std::vector<int64_t>>> buckets;
  for (const LayerKvSpec& l : layers) {
    auto it = std::find_if(buckets.begin(), buckets.end(), [&](const auto& b) { return b.first == l.spec; });
    if (it == buckets.end()) {
      buckets.push_back({l.spec, {l.layer_index}});
    } else {
      it->second.push_back(l.layer_index);
    }
  }
  int64_t min_layers = std::numeric_limits<int64_t>::max();
  int64_t max_layers = 0;
  for (const auto& b : buckets) {
    min_layers = std::min<int64_t>(min_layers, static_cast<int64_t>(b.second.size()));
    max_layers = std::max<int64_t>(max_layers, static_cast<int64_t>(b.second.size()));
  }
  // Groups of the smallest type's size, unless padding every type up to the largest wastes
  // less (max < 1.5 * min; e.g. gpt-oss + eagle: 12 sliding + 13 full -> 13 + 13).
  int64_t group_size = min_layers;
  if (group_size_max_ratio == 1.5) {
    if (2 * max_layers < 3 * min_layers) group_size = max_layers;  // exact in integers
  } else if (group_size_max_ratio > 0.0 &&
             static_cast<double>(max_layers) < group_size_max_ratio * static_cast<double>(min_layers)) {
    group_size = max_layers;
  }
  for (const auto& [spec, indices] : buckets) {
    const int64_t n = static_cast<int64_t>(indices.size());
    const int64_t padding = group_size - n % group_size;
    if (padding != group_size) out.num_padding_layers += padding;
    const int64_t num_groups = CeilDiv(n, group_size);
    for (int64_t i = 0; i < num_groups; ++i) {
      KvCacheGroupSpec g;
      g.spec = spec;
      for (int64_t j = i; j < n; j += num_groups) g.layer_indices.push_back(indices[static_cast<size_t>(j)]);
      out.groups.push_back(std::move(g));
    }
  }
  return out;
}

std::vector<KvCacheGroupSpec> ProjectKvCacheGroupsToWorker(const std::vector<KvCacheGroupSpec>& groups,
                                                           int64_t first_layer, int64_t last_layer) {
  std::vector<KvCacheGroupSpec> out;
  for (const KvCacheGroupSpec& g : groups) {
    KvCacheGroupSpec p;
    p.spec = g.spec;
    p.uniform_type = g.uniform_type;
    for (size_t i = 0; i < g.layer_indices.size(); ++i) {
      const int64_t idx = g.layer_indices[i];
      if (idx < first_layer || idx >= last_layer) continue;
      p.layer_indices.push_back(idx);
      if (g.uniform_type) p.layer_specs.push_back(g.layer_specs[i]);
    }
    out.push_back(std::move(p));
  }
  return out;
}

int64_t GroupPageSizeBytes(const KvCacheGroupSpec& group) {
  if (!group.uniform_type) return PageSizeBytes(group.spec);
  int64_t sum = 0;
  for (const KvCacheSpec& s : group.layer_specs) sum = CheckedAdd(sum, PageSizeBytes(s), "page_size_bytes");
  return sum;
}

int64_t GroupMaxMemoryUsageBytes(const KvCacheGroupSpec& group, const KvRequestShape& shape) {
  if (!group.uniform_type) return MaxMemoryUsageBytes(group.spec, shape);
  int64_t max_blocks = 0;
  for (const KvCacheSpec& s : group.layer_specs) {
    max_blocks = std::max(max_blocks, CeilDiv(MaxMemoryUsageBytes(s, shape), PageSizeBytes(s)));
  }
  return CheckedMul(max_blocks, GroupPageSizeBytes(group), "max_memory_usage_bytes");
}

namespace {

int64_t GroupSize(const std::vector<KvCacheGroupSpec>& groups) {
  int64_t size = 0;
  for (const KvCacheGroupSpec& g : groups) size = std::max<int64_t>(size, static_cast<int64_t>(g.layer_indices.size()));
  return size;
}

bool SingleUniformType(const std::vector<KvCacheGroupSpec>& groups) {
  return groups.size() == 1 && groups.front().uniform_type;
}

}  // namespace

int64_t WorkerBytesPerBlock(const std::vector<KvCacheGroupSpec>& worker_groups) {
  if (worker_groups.empty()) return 0;
  if (SingleUniformType(worker_groups)) return GroupPageSizeBytes(worker_groups.front());
  return CheckedMul(PageSizeBytes(worker_groups.front().spec), GroupSize(worker_groups), "bytes_per_block");
}

KvCacheWorkerConfig KvCacheWorkerBlocks(const std::vector<KvCacheGroupSpec>& worker_groups,
                                        int64_t available_bytes, int64_t num_gpu_blocks_override) {
  KvCacheWorkerConfig cfg;
  if (worker_groups.empty()) {
    cfg.num_blocks = 1;  // the BlockPool's null block
    return cfg;
  }
  cfg.bytes_per_block = WorkerBytesPerBlock(worker_groups);
  if (cfg.bytes_per_block == 0) {
    // vLLM divides by zero here (a worker holding no KV layer of a grouped model).
    throw Unsupported("a worker holds no KV-cache layer of the model's KV-cache groups");
  }
  cfg.num_blocks = std::max<int64_t>(FloorDiv(available_bytes, cfg.bytes_per_block), 0);
  if (num_gpu_blocks_override > 0) cfg.num_blocks = num_gpu_blocks_override;
  // Each KVCacheTensor is page x blocks bytes: checked here so callers that skip the tensor
  // lists refuse the same overflow.
  if (SingleUniformType(worker_groups)) {
    for (const KvCacheSpec& s : worker_groups.front().layer_specs) {
      CheckedMul(PageSizeBytes(s), cfg.num_blocks, "kv_cache_bytes");
    }
  } else {
    CheckedMul(PageSizeBytes(worker_groups.front().spec), cfg.num_blocks, "kv_cache_bytes");
  }
  return cfg;
}

KvCacheWorkerConfig GetKvCacheConfigFromGroups(const std::vector<KvCacheGroupSpec>& worker_groups,
                                               int64_t available_bytes, int64_t num_gpu_blocks_override) {
  RequireNonNegative(num_gpu_blocks_override, "num_gpu_blocks_override");
  KvCacheWorkerConfig cfg = KvCacheWorkerBlocks(worker_groups, available_bytes, num_gpu_blocks_override);
  if (worker_groups.empty()) return cfg;

  if (SingleUniformType(worker_groups)) {
    const KvCacheGroupSpec& g = worker_groups.front();
    for (size_t i = 0; i < g.layer_specs.size(); ++i) {
      cfg.tensor_bytes.push_back(CheckedMul(PageSizeBytes(g.layer_specs[i]), cfg.num_blocks, "kv_cache_bytes"));
      cfg.tensor_shared_by.push_back({g.layer_indices[i]});
    }
    return cfg;
  }
  cfg.group_size = GroupSize(worker_groups);
  const int64_t page = PageSizeBytes(worker_groups.front().spec);
  for (int64_t i = 0; i < cfg.group_size; ++i) {
    cfg.tensor_bytes.push_back(CheckedMul(page, cfg.num_blocks, "kv_cache_bytes"));
    std::vector<int64_t> shared;
    for (const KvCacheGroupSpec& g : worker_groups) {
      if (i < static_cast<int64_t>(g.layer_indices.size())) shared.push_back(g.layer_indices[static_cast<size_t>(i)]);
    }
    cfg.tensor_shared_by.push_back(std::move(shared));
  }
  return cfg;
}

int64_t MaxMemoryUsageBytesFromGroups(const std::vector<KvCacheGroupSpec>& worker_groups,
                                      const KvRequestShape& shape) {
  if (worker_groups.empty()) return 0;
  if (SingleUniformType(worker_groups)) {
    int64_t sum = 0;
    for (const KvCacheSpec& s : worker_groups.front().layer_specs) {
      sum = CheckedAdd(sum, MaxMemoryUsageBytes(s, shape), "max_memory_usage_bytes");
    }
    return sum;
  }
  const int64_t page = PageSizeBytes(worker_groups.front().spec);
  int64_t blocks = 0;
  for (const KvCacheGroupSpec& g : worker_groups) {
    blocks = CheckedAdd(blocks, CeilDiv(MaxMemoryUsageBytes(g.spec, shape), page), "max_memory_usage_bytes");
  }
  return CheckedMul(CheckedMul(GroupSize(worker_groups), page, "max_memory_usage_bytes"), blocks,
                    "max_memory_usage_bytes");
}

int64_t BlocksPerRequest(const std::vector<KvCacheGroupSpec>& groups, const KvRequestShape& shape) {
  if (groups.empty()) return 0;
  int64_t per_request = 0;
  for (const KvCacheGroupSpec& g : groups) {
    per_request = CheckedAdd(per_request, GroupMaxMemoryUsageBytes(g, shape), "max_memory_usage_bytes");
  }
  return CeilDiv(per_request, GroupPageSizeBytes(groups.front()));
}

double MaxConcurrency(int64_t num_blocks, const std::vector<KvCacheGroupSpec>& groups, const KvRequestShape& shape) {
  return MaxConcurrencyOf(num_blocks, BlocksPerRequest(groups, shape));
}

double MaxConcurrencyOf(int64_t num_blocks, int64_t blocks_per_request) {
  if (blocks_per_request == 0) return 0.0;  // attention-free: no KV bound on concurrency
  return static_cast<double>(num_blocks) / static_cast<double>(blocks_per_request);
}

int64_t KvCacheNumTokens(double max_concurrency, int64_t max_model_len) {
  // Python's int() of the float product: truncation toward zero, range-checked first (the
  // product of 2^50 blocks' concurrency and a long context left int64, and the unchecked
  // conversion printed a negative token count).
  return CheckedDoubleToInt64(max_concurrency * static_cast<double>(max_model_len), "num_tokens");
}

}  // namespace vllm_mem
