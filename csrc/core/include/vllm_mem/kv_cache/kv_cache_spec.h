/*!
 * \file vllm_mem/kv_cache/kv_cache_spec.h
 * \brief One layer's KV-cache spec, as vLLM's kv_cache_interface.py defines it: how many bytes
 *        one block (page) of the layer takes, and how many bytes one request of max_model_len
 *        tokens can need. A small sum type, one alternative per vLLM spec class we size.
 */
#ifndef VLLM_MEM_KV_CACHE_KV_CACHE_SPEC_H_
#define VLLM_MEM_KV_CACHE_KV_CACHE_SPEC_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "vllm_mem/kv_cache/kv_cache_dtype.h"
#include "vllm_mem/kv_cache/kv_cache_skip_layers.h"
#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief The page geometry every attention spec shares (vLLM's AttentionSpec fields). */
struct AttentionPageLayout {
  int64_t block_size_tokens = 16;
  int64_t num_kv_heads = 1;           //!< per tensor-parallel rank (1 for MLA)
  int64_t head_size = 0;              //!< D (MLA: kv_lora_rank + qk_rope_head_dim)
  int64_t head_size_v = 0;            //!< Dv; equal to D unless the model says otherwise
  KvCacheDType dtype;
  int64_t page_size_padded_bytes = 0; //!< 0: no padding (vLLM's page_size_padded = None)
  bool operator==(const AttentionPageLayout&) const = default;
};

/*! \brief FullAttentionSpec. The window / chunk fields are only set when the hybrid manager is
 *  disabled and a sliding or chunked layer was converted to full attention: they do not change
 *  the page size or the memory a request needs. */
struct FullAttentionKvSpec {
  AttentionPageLayout layout;
  int64_t sliding_window_tokens = 0;
  int64_t attention_chunk_size_tokens = 0;
  bool operator==(const FullAttentionKvSpec&) const = default;
};

/*! \brief SlidingWindowSpec: keeps only the last W tokens (plus the in-flight chunk). */
struct SlidingWindowKvSpec {
  AttentionPageLayout layout;
  int64_t sliding_window_tokens = 0;
  bool operator==(const SlidingWindowKvSpec&) const = default;
};

/*! \brief ChunkedLocalAttentionSpec (Llama-4 local layers): attends within chunks of C. */
struct ChunkedLocalKvSpec {
  AttentionPageLayout layout;
  int64_t attention_chunk_size_tokens = 0;
  bool operator==(const ChunkedLocalKvSpec&) const = default;
};

/*! \brief MLAAttentionSpec: one latent per token, shared by K and V (no factor 2), H = 1. */
struct MlaKvSpec {
  AttentionPageLayout layout;
  bool operator==(const MlaKvSpec&) const = default;
};

/*! \brief Which Mamba states vLLM keeps per request (mamba_cache_mode). */
enum class MambaCacheMode { kNone, kAlign, kAll };

/*! \brief MambaSpec (vllm/v1/kv_cache_interface.py): one recurrent layer's per-request state
 *  (conv + SSM tensors, vllm_mem/kv_cache/mamba_state.h), padded to the attention page of the
 *  hybrid's unified page size. */
struct MambaKvSpec {
  /*! vLLM's mamba_block_size: max_model_len in mode "none" (0 here: the request length, which
   *  the layout does not know; PlanHybridLayers sets it), the attention block size in "align" /
   *  "all". */
  int64_t block_size_tokens = 16;
  int64_t state_bytes = 0;             //!< Σ prod(shape_i) * dtype_size_i
  int64_t page_size_padded_bytes = 0;  //!< 0: none
  int64_t num_speculative_blocks = 0;
  MambaCacheMode cache_mode = MambaCacheMode::kNone;
  bool operator==(const MambaKvSpec&) const = default;
};

using KvCacheSpec =
    std::variant<FullAttentionKvSpec, SlidingWindowKvSpec, MlaKvSpec, ChunkedLocalKvSpec, MambaKvSpec>;

/*! \brief What bounds one request's KV need (vLLM reads them from vllm_config). */
struct KvRequestShape {
  int64_t max_model_len = 0;
  int64_t max_num_batched_tokens = 8192;
  int64_t max_concurrent_batches = 1;  //!< in-flight tokens = this * max_num_batched_tokens
  /*! v0.19 behaviour (see docs/kv_cache.md): a sliding-window layer never needs more blocks
   *  than a full-attention layer would, min(cdiv(min(W-1+T, L), B) + 1, cdiv(L, B)). */
  bool cap_sliding_window_at_full = true;
  /*! Decode context parallelism: each rank keeps cdiv(max_model_len, this) tokens of a
   *  full-attention / MLA layer (vLLM's AttentionSpec.max_memory_usage_bytes; sliding-window,
   *  chunked-local and Mamba specs keep their own rules). */
  int64_t context_parallel_size = 1;
};

/*! \brief "full_attention", "sliding_window", "mla", "chunked_local" or "mamba". */
std::string KvSpecKindName(const KvCacheSpec& spec);

/*! \brief Tokens per block. */
int64_t BlockSizeTokens(const KvCacheSpec& spec);
/*! \brief The window of a sliding-window spec (or a full spec converted from one), else 0. */
int64_t SlidingWindowTokens(const KvCacheSpec& spec);

/*! \brief vLLM's real_page_size_bytes + per-token-head scales (unpadded_page_size_bytes). */
int64_t UnpaddedPageSizeBytes(const KvCacheSpec& spec);
/*! \brief vLLM's page_size_bytes: page_size_padded when set (checked >= unpadded), else the
 *  unpadded size. */
int64_t PageSizeBytes(const KvCacheSpec& spec);
/*! \brief vLLM's max_memory_usage_bytes: bytes one request of shape.max_model_len tokens can
 *  need in this layer. */
int64_t MaxMemoryUsageBytes(const KvCacheSpec& spec, const KvRequestShape& shape);

/*! \brief A copy with another block size (page-size unification scales it). */
KvCacheSpec WithBlockSize(const KvCacheSpec& spec, int64_t block_size_tokens);
/*! \brief A copy padded to \p page_size_padded_bytes. */
KvCacheSpec WithPageSizePadded(const KvCacheSpec& spec, int64_t page_size_padded_bytes);
/*! \brief unify_hybrid_kv_cache_specs for one layer: sliding and chunked specs become full
 *  attention that remembers the window (the disable_hybrid_kv_cache_manager path). */
KvCacheSpec ToFullAttention(const KvCacheSpec& spec);
/*! \brief Specs that may share one group as-is: equal, where a full spec's window / chunk
 *  fields are ignored (vLLM's FullAttentionSpec.merge accepts both). */
bool KvSpecsMergeable(const KvCacheSpec& a, const KvCacheSpec& b);
/*! \brief Same spec class (and window / chunk size), maybe different shapes:
 *  UniformTypeKVCacheSpecs.is_uniform_type for two specs. */
bool KvSpecsSameType(const KvCacheSpec& a, const KvCacheSpec& b);

/*! \brief The block sizes (tokens) vLLM accepts for --block-size: CacheConfig's
 *  `BlockSize = Literal[1, 8, 16, 32, 64, 128, 256]` (vllm/config/cache.py). The CUDA platform
 *  adds no list of its own; its attention backends pick among these (FlashMLA needs 64). */
inline constexpr int64_t kVllmBlockSizesTokens[] = {1, 8, 16, 32, 64, 128, 256};

/*! \brief InvalidArgument naming \p field unless \p block_size_tokens is 0 (vLLM's default) or
 *  one of kVllmBlockSizesTokens. */
void ValidateBlockSize(int64_t block_size_tokens, const char* field);

/*! \brief One layer that holds KV cache, by global decoder-layer index. */
struct LayerKvSpec {
  int64_t layer_index = 0;
  KvCacheSpec spec;
};

/*! \brief The settings of hybrid (Mamba / linear-attention) models, vLLM's CacheConfig fields and
 *  the release-dependent rules of mamba_state.h (KvCacheOptions documents each). */
struct HybridKvOptions {
  std::string model_dtype = "auto";            //!< --dtype: "auto" Mamba dtypes follow it
  std::string mamba_cache_dtype = "auto";
  std::string mamba_ssm_cache_dtype = "auto";
  MambaCacheMode cache_mode = MambaCacheMode::kNone;
  int64_t num_speculative_tokens = 0;
  int64_t user_block_size_tokens = 0;          //!< --block-size as given; 0: not given
  int64_t mamba_block_size_tokens = 0;         //!< --mamba-block-size; 0: not given
  int64_t kernel_block_alignment_tokens = 0;   //!< 0: 16 (64 for MLA), vLLM's CUDA default
  bool align_to_user_block_size = true;
  bool ssm_dtype_from_config = true;
  bool conv_state_includes_spec_tokens = true;
  double group_size_max_ratio = 1.5;           //!< KvCacheOptions::group_size_max_ratio (any model)
  bool operator==(const HybridKvOptions&) const = default;
};

/*! \brief Settings that shape every layer's spec. */
struct KvSpecBuildOptions {
  int64_t block_size_tokens = 16;
  KvCacheDType dtype;
  int64_t tensor_parallel_size = 1;
  HybridKvOptions hybrid;  //!< read only for models with ModelSpec::hybrid
  KvSkipLayers skip;       //!< --kv-cache-dtype-skip-layers: these layers store skip_dtype
  KvCacheDType skip_dtype;  //!< "auto" resolved: the model dtype (read only when skip is not empty)
};

/*! \brief One attention layer's page layout on one tensor-parallel rank at \p options' block size:
 *  MLA's one latent of kv_lora_rank + qk_rope_head_dim (replicated on every rank), else the KV heads
 *  per rank by head_dim. The spec is an MlaKvSpec when \p model has MLA. */
AttentionPageLayout AttentionLayoutOf(const ModelSpec& model, const KvSpecBuildOptions& options);

/*! \brief The KV specs of the decoder layers [first_layer, last_layer) of \p model on one
 *  tensor-parallel rank; layers without KV cache are skipped. */
std::vector<LayerKvSpec> BuildLayerKvSpecs(const ModelSpec& model, const KvSpecBuildOptions& options,
                                           int64_t first_layer, int64_t last_layer);

/*! \brief The layers pipeline rank \p pp_rank of \p pp_size holds (vLLM's get_pp_indices). */
std::vector<LayerKvSpec> BuildLayerKvSpecsForRank(const ModelSpec& model, const KvSpecBuildOptions& options,
                                                  int64_t pp_rank, int64_t pp_size);

}  // namespace vllm_mem

#endif  // VLLM_MEM_KV_CACHE_KV_CACHE_SPEC_H_
