/*!
 * \file core/kv_cache/kv_cache_layout.cc
 * \brief The budget-independent part of KV sizing, built once per (model, layout settings):
 *        the first half of vLLM's get_kv_cache_configs (specs, get_kv_cache_groups, the
 *        projection onto each pipeline rank). kv_cache_capacity.cc does the per-call half.
 */
#include "vllm_mem/kv_cache/kv_cache_layout.h"

#include <algorithm>
#include <string>
#include <variant>

#include "core/base/checked_math.h"
#include "core/model/parallelism.h"
#include "vllm_mem/base/error.h"

namespace vllm_mem {
namespace {

constexpr int64_t kDefaultBlockSizeTokens = 16;     // vLLM's DEFAULT_BLOCK_SIZE
constexpr int64_t kDefaultMlaBlockSizeTokens = 64;  // FlashMLA's page (Hopper's MLA backend)

/*! DeepSeek-V3.2 (vLLM models/config.py DeepseekV32ForCausalLM.verify_and_update_config, which asserts
 *  the config has index_topk): its sparse MLA stores every fp8 KV dtype in the fp8_ds_mla layout, and
 *  bfloat16 as "auto" (the model dtype); "auto" stays the model dtype. */
std::string SparseMlaKvCacheDType(const ModelSpec& spec, const std::string& requested) {
  if (!spec.mla || spec.mla->index_topk == 0) return requested;
  if (requested.rfind("fp8", 0) == 0) return "fp8_ds_mla";
  if (requested == "bfloat16") return "auto";
  return requested;
}

/*! Skipped layers' larger pages are unified with the others' by scaling block sizes. With the
 *  default block size the rule of the releases that added the flag and the later one (PR #42890:
 *  the smallest page per token is the primary, the others scale or pad to a multiple of it) give
 *  the same groups; with an explicit --block-size they differ (#42890 applies it to the primary
 *  only), and the release that changed it was not read: refused by name, not guessed. */
void RefuseSkipWithScaledUserBlockSize(const KvSkipLayers& skip, int64_t user_block_size,
                                       const KvCacheGrouping& grouping) {
  if (skip.empty() || user_block_size == 0) return;
  for (const KvCacheGroupSpec& g : grouping.groups) {
    if (BlockSizeTokens(g.spec) == user_block_size) continue;
    throw Unsupported("kv_cache_dtype_skip_layers with block_size=" + std::to_string(user_block_size) +
                      " is not modelled: the skipped layers' pages are unified by scaling block sizes, which vLLM "
                      "releases do differently with an explicit --block-size (PR #42890); leave block_size unset");
  }
}

}  // namespace

KvCacheLayoutKey KvCacheLayoutKeyOf(const KvCacheOptions& o) {
  KvCacheLayoutKey k;
  k.block_size = o.block_size;
  k.kv_cache_dtype = o.kv_cache_dtype;
  k.kv_cache_dtype_skip_layers = o.kv_cache_dtype_skip_layers;
  k.model_dtype = o.model_dtype;
  k.tensor_parallel_size = o.tensor_parallel_size;
  k.pipeline_parallel_size = o.pipeline_parallel_size;
  k.disable_hybrid_kv_cache_manager = o.disable_hybrid_kv_cache_manager;
  k.allow_chunked_local_with_hybrid = o.allow_chunked_local_with_hybrid;
  k.hybrid = HybridKvOptionsOf(o);
  return k;
}

void CheckAvailableCount(size_t num_available, int64_t tp, int64_t pp) {
  const int64_t world = CheckedMul(tp, pp, "tensor_parallel_size");
  const int64_t n = static_cast<int64_t>(num_available);
  if (n != 1 && n != pp && n != world) {
    throw InvalidArgument("available_bytes", "must hold 1 value, one per pipeline rank (" + std::to_string(pp) +
                                                 ") or one per worker (" + std::to_string(world) + "), got " +
                                                 std::to_string(n));
  }
}

std::shared_ptr<const KvCacheLayout> BuildKvCacheLayout(const ModelSpec& spec, const KvCacheOptions& o,
                                                        size_t num_available) {
  ValidateParallelism(spec.num_layers, o.tensor_parallel_size, o.pipeline_parallel_size);
  // vLLM refuses a TP size that does not divide the query heads before any sizing; without
  // this, a split of 32 heads over 3 ranks was sized as if it existed.
  AttentionHeadsPerRank(spec.num_attention_heads, o.tensor_parallel_size);
  if (static_cast<int64_t>(spec.layers.size()) != spec.num_layers) {
    throw InvalidArgument("layers", "the model spec must list num_layers layers");
  }
  const int64_t tp = o.tensor_parallel_size;
  const int64_t pp = o.pipeline_parallel_size;
  CheckAvailableCount(num_available, tp, pp);

  auto layout = std::make_shared<KvCacheLayout>();
  const DType model_dtype = ResolveModelDType(o.model_dtype, spec.dtype, "dtype");
  // A checkpoint with KV scales turns "auto" into fp8 (vLLM attention.py).
  const std::string requested =
      (o.kv_cache_dtype == "auto" && !spec.checkpoint_kv_cache_dtype.empty()) ? spec.checkpoint_kv_cache_dtype
                                                                             : o.kv_cache_dtype;
  layout->dtype = ResolveKvCacheDType(SparseMlaKvCacheDType(spec, requested), model_dtype, "kv_cache_dtype");
  layout->default_block_size = spec.mla ? kDefaultMlaBlockSizeTokens : kDefaultBlockSizeTokens;

  KvSpecBuildOptions build;
  build.block_size_tokens = o.block_size > 0 ? o.block_size : layout->default_block_size;
  build.dtype = layout->dtype;
  build.tensor_parallel_size = tp;
  build.hybrid = HybridKvOptionsOf(o);
  build.skip = ParseKvSkipLayers(o.kv_cache_dtype_skip_layers, spec);
  build.skip_dtype = ResolveKvCacheDType("auto", model_dtype, "dtype");  // vLLM: the layer's dtype "auto"
  if (spec.hybrid) {
    const HybridLayerPlan hybrid = PlanHybridLayers(spec, build, build.block_size_tokens);
    layout->hybrid_alignment = hybrid.alignment;
    layout->mamba_state_bytes = hybrid.state.page_size_bytes;
  }
  // Every tensor rank builds the same specs, so the model's layers are built once.
  const std::vector<LayerKvSpec> all = BuildLayerKvSpecs(spec, build, 0, spec.num_layers);
  const bool chunked = std::any_of(all.begin(), all.end(), [](const LayerKvSpec& l) {
    return std::holds_alternative<ChunkedLocalKvSpec>(l.spec);
  });
  const bool disable_hybrid = o.disable_hybrid_kv_cache_manager || (chunked && !o.allow_chunked_local_with_hybrid);
  layout->grouping = GetKvCacheGroups(all, disable_hybrid, build.hybrid.group_size_max_ratio);
  RefuseSkipWithScaledUserBlockSize(build.skip, o.block_size, layout->grouping);

  layout->ranks.resize(static_cast<size_t>(pp));
  for (int64_t r = 0; r < pp; ++r) {
    const auto [first, last] = PipelineLayerRange(spec.num_layers, r, pp);
    KvRankLayout& rank = layout->ranks[static_cast<size_t>(r)];
    for (const LayerKvSpec& l : all) {
      if (l.layer_index < first || l.layer_index >= last) continue;
      ++rank.num_layers;
      rank.layers.push_back(l);
      auto it = std::find_if(rank.layer_specs.begin(), rank.layer_specs.end(),
                             [&](const auto& entry) { return entry.first == l.spec; });
      if (it == rank.layer_specs.end()) {
        rank.layer_specs.emplace_back(l.spec, 1);
      } else {
        ++it->second;
      }
    }
    rank.groups = ProjectKvCacheGroupsToWorker(layout->grouping.groups, first, last);
  }
  for (const KvCacheGroupSpec& g : layout->grouping.groups) {
    KvCacheGroupInfo info;
    info.kind = KvSpecKindName(g.spec);
    info.layer_indices = g.layer_indices;
    info.block_size = BlockSizeTokens(g.spec);
    info.page_size_bytes = PageSizeBytes(g.spec);
    info.sliding_window_tokens = SlidingWindowTokens(g.spec);
    info.uniform_type = g.uniform_type;
    layout->group_infos.push_back(std::move(info));
  }
  return layout;
}

std::shared_ptr<const KvCacheLayout> KvCacheLayoutCache::Get(const KvCacheOptions& options,
                                                             size_t num_available) const {
  KvCacheLayoutKey key = KvCacheLayoutKeyOf(options);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (!(entries_[i].first == key)) continue;
      std::shared_ptr<const KvCacheLayout> hit = entries_[i].second;
      if (i > 0) std::rotate(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(i),
                             entries_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      // Everything else BuildKvCacheLayout checks passed when this entry was built.
      CheckAvailableCount(num_available, key.tensor_parallel_size, key.pipeline_parallel_size);
      return hit;
    }
  }
  // Built outside the lock (it may throw, and it is the slow part); a racing builder of the
  // same key only wastes its work.
  std::shared_ptr<const KvCacheLayout> built = BuildKvCacheLayout(spec_, options, num_available);
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.insert(entries_.begin(), {std::move(key), built});
  if (entries_.size() > kCapacity) entries_.pop_back();
  return built;
}

size_t KvCacheLayoutCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace vllm_mem
