/*!
 * \file core/kv_cache/kv_cache_spec.cc
 * \brief Page sizes and per-request needs of each KV-cache spec (vLLM kv_cache_interface.py).
 */
#include "vllm_mem/kv_cache/kv_cache_spec.h"

#include <algorithm>
#include <optional>
#include <type_traits>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "core/model/parallelism.h"
#include "vllm_mem/kv_cache/mamba_state.h"

namespace vllm_mem {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

/*! Bytes of one head's K (or V) vector for one token under the dtype's packing. */
int64_t HeadBytes(int64_t dim, const KvCacheDType& dtype) {
  switch (dtype.quant_mode) {
    case KvQuantMode::kNvfp4:
      return dim / 2 + dim / 16;  // nvfp4_kv_cache_full_dim: 4-bit values + fp8 block scales
    case KvQuantMode::kInt4PerTokenHead:
      return dim / 2;  // two 4-bit values per byte
    case KvQuantMode::kTurboQuant:
      // vLLM's TQFullAttentionSpec page is B*H*tq_slot_size with the slot size taken from
      // TurboQuantConfig.from_cache_dtype(dtype, head_size): a layout this library does not
      // reproduce, so say so rather than return a wrong number.
      throw Unsupported("kv_cache_dtype " + dtype.name +
                        ": TurboQuant pages (B*H*tq_slot_size) are not modelled by vllm_mem");
    default:
      return CheckedMul(dim, dtype.element_size_bytes, "page_size_bytes");
  }
}

/*! fp32 scales of K and V for every token and head when quantized per token-head. */
int64_t ScaleBytes(const AttentionPageLayout& l) {
  if (l.dtype.quant_mode != KvQuantMode::kPerTokenHead && l.dtype.quant_mode != KvQuantMode::kInt4PerTokenHead) {
    return 0;
  }
  return CheckedMul(CheckedMul(2 * 4, l.block_size_tokens, "page_size_bytes"), l.num_kv_heads, "page_size_bytes");
}

/*! FullAttentionSpec / SlidingWindowSpec: K of D and V of Dv per head and token. */
int64_t KvPairPageBytes(const AttentionPageLayout& l) {
  const int64_t per_token_head =
      CheckedAdd(HeadBytes(l.head_size, l.dtype), HeadBytes(l.head_size_v, l.dtype), "page_size_bytes");
  const int64_t real =
      CheckedMul(CheckedMul(l.block_size_tokens, l.num_kv_heads, "page_size_bytes"), per_token_head, "page_size_bytes");
  return CheckedAdd(real, ScaleBytes(l), "page_size_bytes");
}

/*! The base AttentionSpec formula 2*B*H*D*s (ChunkedLocalAttentionSpec keeps it). */
int64_t BasePageBytes(const AttentionPageLayout& l) {
  const int64_t real = CheckedMul(CheckedMul(2 * l.block_size_tokens, l.num_kv_heads, "page_size_bytes"),
                                  HeadBytes(l.head_size, l.dtype), "page_size_bytes");
  return CheckedAdd(real, ScaleBytes(l), "page_size_bytes");
}

int64_t MlaPageBytes(const AttentionPageLayout& l) {
  if (l.dtype.name == "fp8_ds_mla") {
    // DeepSeek-V3.2's fp8_ds_mla layout: 656 bytes per token (512 fp8 latent + 4 fp32 scales
    // + 64 bf16 rope dims).
    return CheckedMul(l.block_size_tokens, 656, "page_size_bytes");
  }
  if (l.dtype.quant_mode != KvQuantMode::kNone && l.dtype.quant_mode != KvQuantMode::kFp8PerTensor) {
    throw Unsupported("kv_cache_dtype " + l.dtype.name + " is not supported for MLA layers");
  }
  return CheckedMul(CheckedMul(l.block_size_tokens, l.num_kv_heads, "page_size_bytes"),
                    CheckedMul(l.head_size, l.dtype.element_size_bytes, "page_size_bytes"), "page_size_bytes");
}

int64_t Padded(int64_t unpadded, int64_t padded) {
  if (padded == 0) return unpadded;
  if (padded < unpadded) {
    throw InvalidArgument("page_size_padded", "must be >= the unpadded page size " + std::to_string(unpadded) +
                                                  ", got " + std::to_string(padded));
  }
  return padded;
}

/*! Blocks one request of the full max_model_len needs in a layer of block size B. */
int64_t FullBlocks(const KvRequestShape& s, int64_t block_size) { return CeilDiv(s.max_model_len, block_size); }

int64_t InFlightTokens(const KvRequestShape& s) {
  return CheckedMul(s.max_concurrent_batches, s.max_num_batched_tokens, "max_num_batched_tokens");
}

/*! DeepSeek-V3.2's indexer key cache beside each MLA layer (vLLM deepseek_v2.py DeepseekV32IndexerCache):
 *  an MLAAttentionSpec of one head of index_head_dim fp8 values plus one float32 scale per 128 of them
 *  (quant_block_size), stored as uint8 whatever --kv-cache-dtype says. nullopt without an indexer. */
std::optional<AttentionPageLayout> IndexerPageLayout(const ModelSpec& model, const AttentionPageLayout& latent) {
  if (!model.mla || model.mla->index_head_dim == 0) return std::nullopt;
  constexpr int64_t kQuantBlock = 128;
  constexpr int64_t kScaleBytes = 4;
  AttentionPageLayout l = latent;
  l.num_kv_heads = 1;
  l.head_size =
      CheckedAdd(model.mla->index_head_dim, model.mla->index_head_dim / kQuantBlock * kScaleBytes, "index_head_dim");
  l.head_size_v = l.head_size;
  l.dtype = KvCacheDType{"uint8", 1, KvQuantMode::kNone};
  return l;
}

}  // namespace

std::string KvSpecKindName(const KvCacheSpec& spec) {
  return std::visit(Overloaded{[](const FullAttentionKvSpec&) { return std::string("full_attention"); },
                               [](const SlidingWindowKvSpec&) { return std::string("sliding_window"); },
                               [](const MlaKvSpec&) { return std::string("mla"); },
                               [](const ChunkedLocalKvSpec&) { return std::string("chunked_local"); },
                               [](const MambaKvSpec&) { return std::string("mamba"); }},
                    spec);
}

int64_t BlockSizeTokens(const KvCacheSpec& spec) {
  return std::visit(Overloaded{[](const MambaKvSpec& m) { return m.block_size_tokens; },
                               [](const auto& a) { return a.layout.block_size_tokens; }},
                    spec);
}

int64_t SlidingWindowTokens(const KvCacheSpec& spec) {
  if (const auto* s = std::get_if<SlidingWindowKvSpec>(&spec)) return s->sliding_window_tokens;
  if (const auto* f = std::get_if<FullAttentionKvSpec>(&spec)) return f->sliding_window_tokens;
  return 0;
}

int64_t UnpaddedPageSizeBytes(const KvCacheSpec& spec) {
  return std::visit(Overloaded{[](const FullAttentionKvSpec& s) { return KvPairPageBytes(s.layout); },
                               [](const SlidingWindowKvSpec& s) { return KvPairPageBytes(s.layout); },
                               [](const MlaKvSpec& s) { return MlaPageBytes(s.layout); },
                               [](const ChunkedLocalKvSpec& s) { return BasePageBytes(s.layout); },
                               [](const MambaKvSpec& s) { return s.state_bytes; }},
                    spec);
}

int64_t PageSizeBytes(const KvCacheSpec& spec) {
  const int64_t padded = std::visit(Overloaded{[](const MambaKvSpec& m) { return m.page_size_padded_bytes; },
                                               [](const auto& a) { return a.layout.page_size_padded_bytes; }},
                                    spec);
  return Padded(UnpaddedPageSizeBytes(spec), padded);
}

int64_t MaxMemoryUsageBytes(const KvCacheSpec& spec, const KvRequestShape& shape) {
  RequirePositive(shape.max_model_len, "max_model_len");
  const int64_t page = PageSizeBytes(spec);
  const int64_t block = BlockSizeTokens(spec);
  int64_t blocks = 0;
  if (std::holds_alternative<FullAttentionKvSpec>(spec) || std::holds_alternative<MlaKvSpec>(spec)) {
    // Decode context parallelism: "each dcp rank only need save (max_model_len//dcp_world_size)
    // tokens locally" (vLLM rounds up, cdiv).
    blocks = shape.context_parallel_size > 1
                 ? CeilDiv(CeilDiv(shape.max_model_len, shape.context_parallel_size), block)
                 : FullBlocks(shape, block);
  } else if (const auto* sw = std::get_if<SlidingWindowKvSpec>(&spec)) {
    // The last W-1 computed tokens plus the tokens scheduled in flight, never more than
    // max_model_len; +1 because the window may start mid-block.
    const int64_t tokens = std::min(
        CheckedAdd(sw->sliding_window_tokens - 1, InFlightTokens(shape), "sliding_window"), shape.max_model_len);
    blocks = CeilDiv(tokens, block) + 1;
    if (shape.cap_sliding_window_at_full) blocks = std::min(blocks, FullBlocks(shape, block));
  } else if (const auto* cl = std::get_if<ChunkedLocalKvSpec>(&spec)) {
    // A chunk boundary is block-aligned, hence no +1.
    const int64_t tokens = std::min(
        CheckedAdd(cl->attention_chunk_size_tokens, InFlightTokens(shape), "attention_chunk_size"),
        shape.max_model_len);
    blocks = CeilDiv(tokens, block);
  } else {
    const auto& m = std::get<MambaKvSpec>(spec);
    switch (m.cache_mode) {
      case MambaCacheMode::kAll:
        // One state per block of the request (block 0: mamba_block_size = max_model_len).
        blocks = CheckedAdd(block > 0 ? FullBlocks(shape, block) : 1, m.num_speculative_blocks,
                            "num_speculative_blocks");
        break;
      case MambaCacheMode::kAlign:
        blocks = CheckedAdd(2, m.num_speculative_blocks, "num_speculative_blocks");
        break;
      case MambaCacheMode::kNone:
        blocks = CheckedAdd(1, m.num_speculative_blocks, "num_speculative_blocks");
        break;
    }
  }
  return CheckedMul(blocks, page, "max_memory_usage_bytes");
}

KvCacheSpec WithBlockSize(const KvCacheSpec& spec, int64_t block_size_tokens) {
  RequirePositive(block_size_tokens, "block_size");
  KvCacheSpec out = spec;
  std::visit(Overloaded{[&](MambaKvSpec& m) { m.block_size_tokens = block_size_tokens; },
                        [&](auto& a) { a.layout.block_size_tokens = block_size_tokens; }},
             out);
  return out;
}

KvCacheSpec WithPageSizePadded(const KvCacheSpec& spec, int64_t page_size_padded_bytes) {
  KvCacheSpec out = spec;
  std::visit(Overloaded{[&](MambaKvSpec& m) { m.page_size_padded_bytes = page_size_padded_bytes; },
                        [&](auto& a) { a.layout.page_size_padded_bytes = page_size_padded_bytes; }},
             out);
  PageSizeBytes(out);  // checks padded >= unpadded
  return out;
}

KvCacheSpec ToFullAttention(const KvCacheSpec& spec) {
  if (const auto* sw = std::get_if<SlidingWindowKvSpec>(&spec)) {
    return FullAttentionKvSpec{sw->layout, sw->sliding_window_tokens, 0};
  }
  if (const auto* cl = std::get_if<ChunkedLocalKvSpec>(&spec)) {
    return FullAttentionKvSpec{cl->layout, 0, cl->attention_chunk_size_tokens};
  }
  return spec;
}

bool KvSpecsMergeable(const KvCacheSpec& a, const KvCacheSpec& b) {
  const auto* fa = std::get_if<FullAttentionKvSpec>(&a);
  const auto* fb = std::get_if<FullAttentionKvSpec>(&b);
  if (fa != nullptr && fb != nullptr) return fa->layout == fb->layout;
  return a == b;
}

bool KvSpecsSameType(const KvCacheSpec& a, const KvCacheSpec& b) {
  if (a.index() != b.index() || BlockSizeTokens(a) != BlockSizeTokens(b)) return false;
  if (const auto* sa = std::get_if<SlidingWindowKvSpec>(&a)) {
    return sa->sliding_window_tokens == std::get<SlidingWindowKvSpec>(b).sliding_window_tokens;
  }
  if (const auto* ca = std::get_if<ChunkedLocalKvSpec>(&a)) {
    return ca->attention_chunk_size_tokens == std::get<ChunkedLocalKvSpec>(b).attention_chunk_size_tokens;
  }
  if (const auto* ma = std::get_if<MambaKvSpec>(&a)) {
    return ma->num_speculative_blocks == std::get<MambaKvSpec>(b).num_speculative_blocks;
  }
  return true;
}

void ValidateBlockSize(int64_t block_size_tokens, const char* field) {
  if (block_size_tokens == 0) return;
  for (int64_t allowed : kVllmBlockSizesTokens) {
    if (block_size_tokens == allowed) return;
  }
  throw InvalidArgument(field, "must be one of 1, 8, 16, 32, 64, 128, 256 (vLLM's CacheConfig.block_size) or 0 "
                               "for vLLM's default, got " + std::to_string(block_size_tokens));
}

AttentionPageLayout AttentionLayoutOf(const ModelSpec& model, const KvSpecBuildOptions& options) {
  AttentionPageLayout base;
  base.block_size_tokens = options.block_size_tokens;
  base.dtype = options.dtype;
  if (model.mla) {
    // MLAAttention: head_size = kv_lora_rank + qk_rope_head_dim; one latent replicated on
    // every tensor-parallel rank (get_num_kv_heads returns 1 for MLA).
    base.num_kv_heads = 1;
    base.head_size = CheckedAdd(model.mla->kv_lora_rank, model.mla->qk_rope_head_dim, "kv_lora_rank");
    base.head_size_v = base.head_size;
  } else {
    base.num_kv_heads = KvHeadsPerRank(model.num_kv_heads, options.tensor_parallel_size);
    base.head_size = model.head_dim;
    base.head_size_v = model.head_dim;
  }
  return base;
}

std::vector<LayerKvSpec> BuildLayerKvSpecs(const ModelSpec& model, const KvSpecBuildOptions& options,
                                           int64_t first_layer, int64_t last_layer) {
  RequirePositive(options.block_size_tokens, "block_size");
  if (first_layer < 0 || last_layer > static_cast<int64_t>(model.layers.size()) || first_layer > last_layer) {
    throw InvalidArgument("layers", "range [" + std::to_string(first_layer) + ", " + std::to_string(last_layer) +
                                        ") is outside the model's " + std::to_string(model.layers.size()) +
                                        " layers");
  }
  AttentionPageLayout base = AttentionLayoutOf(model, options);
  // Hybrids: the attention block size is raised until one attention page holds one recurrent
  // state, whose page is padded to equal it (mamba_state.h).
  std::optional<HybridLayerPlan> hybrid;
  if (model.hybrid) {
    hybrid = PlanHybridLayers(model, options, options.block_size_tokens);
    base.block_size_tokens = hybrid->attention_block_size_tokens;
  }
  const std::optional<AttentionPageLayout> indexer = IndexerPageLayout(model, base);
  std::vector<LayerKvSpec> out;
  for (int64_t i = first_layer; i < last_layer; ++i) {
    const LayerSpec& layer = model.layers[static_cast<size_t>(i)];
    // vLLM's get_kv_cache_spec skips a layer with a kv_sharing_target_layer_name (Gemma-3n's last
    // layers): it reads its target's cache, so it is in no KV cache group and allocates nothing.
    if (layer.kv_shared) continue;
    // Falcon-H1 layers hold both: the attention layer's spec first, then the Mamba mixer's.
    if (hybrid && layer.recurrent_state && layer.attention == AttentionKind::kNone) {
      out.push_back({i, hybrid->mamba});
      continue;
    }
    // A skipped layer keeps the model dtype beside the quantized others (kv_cache_skip_layers.h).
    AttentionPageLayout page = base;
    if (options.skip.Skips(i, layer.attention == AttentionKind::kSlidingWindow)) page.dtype = options.skip_dtype;
    switch (layer.attention) {
      case AttentionKind::kNone:
        continue;  // no KV cache (linear attention / Mamba layers are sized elsewhere)
      case AttentionKind::kMla:
        out.push_back({i, MlaKvSpec{base}});
        // Both are MLAAttentionSpecs of one block size: vLLM groups them as UniformTypeKVCacheSpecs.
        if (indexer) out.push_back({i, MlaKvSpec{*indexer}});
        break;
      case AttentionKind::kSlidingWindow:
        RequirePositive(layer.sliding_window_tokens, "sliding_window");
        out.push_back({i, SlidingWindowKvSpec{page, layer.sliding_window_tokens}});
        break;
      case AttentionKind::kFull:
        if (layer.attention_chunk_size_tokens > 0) {
          out.push_back({i, ChunkedLocalKvSpec{page, layer.attention_chunk_size_tokens}});
        } else {
          out.push_back({i, FullAttentionKvSpec{page, 0, 0}});
        }
        break;
    }
    if (hybrid && layer.recurrent_state) out.push_back({i, hybrid->mamba});
  }
  return out;
}

std::vector<LayerKvSpec> BuildLayerKvSpecsForRank(const ModelSpec& model, const KvSpecBuildOptions& options,
                                                  int64_t pp_rank, int64_t pp_size) {
  const auto [first, last] = PipelineLayerRange(model.num_layers, pp_rank, pp_size);
  return BuildLayerKvSpecs(model, options, first, last);
}

}  // namespace vllm_mem
