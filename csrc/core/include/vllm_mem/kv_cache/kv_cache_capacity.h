/*!
 * \file vllm_mem/kv_cache/kv_cache_capacity.h
 * \brief From available bytes to KV-cache blocks, tokens and concurrency, exactly as vLLM's
 *        kv_cache_utils computes them (see docs/kv_cache.md).
 */
#ifndef VLLM_MEM_KV_CACHE_KV_CACHE_CAPACITY_H_
#define VLLM_MEM_KV_CACHE_KV_CACHE_CAPACITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

/*! \brief The serving settings that change KV-cache sizing. */
struct KvCacheOptions {
  int64_t max_model_len = 0;           //!< required, > 0
  int64_t block_size = 0;              //!< tokens per block; 0: vLLM's default (16; 64 for MLA)
  std::string kv_cache_dtype = "auto"; //!< vLLM --kv-cache-dtype
  /*! --kv-cache-dtype-skip-layers: layer indices ("7") or "sliding_window" whose KV cache keeps
   *  the model dtype (kv_cache_skip_layers.h); empty: every layer stores kv_cache_dtype. */
  std::vector<std::string> kv_cache_dtype_skip_layers;
  std::string model_dtype = "auto";    //!< vLLM --dtype, which "auto" KV dtype follows
  int64_t tensor_parallel_size = 1;
  int64_t pipeline_parallel_size = 1;
  /*! --decode-context-parallel-size (vLLM >= 0.11): the KV cache is sharded along tokens over
   *  this many ranks of each TP group, so one request needs cdiv(max_model_len, dcp) tokens of
   *  full-attention / MLA KV per rank (kv_cache_interface.py AttentionSpec.max_memory_usage_bytes)
   *  and the grouped token count is multiplied by it (_report_kv_cache_config). Must divide TP. */
  int64_t decode_context_parallel_size = 1;
  int64_t max_num_batched_tokens = 0;  //!< 0: 8192, vLLM's API-server default on large GPUs
  int64_t max_concurrent_batches = 1;  //!< in-flight batches for sliding-window reservations
  bool disable_hybrid_kv_cache_manager = false;
  int64_t num_gpu_blocks_override = 0; //!< 0: none
  /*! vLLM turns the hybrid manager off for chunked-local models (Llama-4) unless
   *  VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is set: this is that variable. */
  bool allow_chunked_local_with_hybrid = false;
  /*! v0.19 behaviour: a sliding-window group never needs more blocks per request than full
   *  attention (docs/kv_cache.md); false gives the plain cdiv(...) + 1 of the source. */
  bool cap_sliding_window_at_full = true;

  // ---- hybrid state-space / linear-attention models (vllm_mem/kv_cache/mamba_state.h) ----
  std::string mamba_cache_dtype = "auto";      //!< --mamba-cache-dtype (conv state): auto, float32, float16, bfloat16
  std::string mamba_ssm_cache_dtype = "auto";  //!< --mamba-ssm-cache-dtype (SSM / recurrent state)
  /*! --mamba-cache-mode: "none" (one state per request), "align" (2 + spec states, prefix
   *  caching at block boundaries) or "all" (one state per block of the request). vLLM >= 0.11
   *  picks "align" / "all" itself when prefix caching is on (models/config.py
   *  MambaModelConfig); the caller passes what vLLM resolved. */
  std::string mamba_cache_mode = "none";
  int64_t num_speculative_tokens = 0;          //!< speculative tokens: extra Mamba blocks (and conv rows)
  int64_t mamba_block_size = 0;                //!< --mamba-block-size ("all" aligns to it); 0: the model's chunk_size
  /*! The attention backend's smallest kernel block, which the unified block size is a
   *  multiple of. 0: 16 (FlashAttention / FlashInfer; 64 for MLA backends), as
   *  HybridAttentionMambaModelConfig chooses on CUDA (Blackwell FlashInfer with head size 256
   *  uses 32). */
  int64_t hybrid_kernel_block_alignment = 0;
  /*! vLLM PR 37467 (merged 2026-03, _align_hybrid_block_size in
   *  Platform.update_block_size_for_backend): the alignment is max(kernel block, --block-size).
   *  false: the releases before it (alignment 16; --block-size only a floor). */
  bool hybrid_align_to_user_block_size = true;
  /*! NemotronHForCausalLMConfig / Qwen3_5ForConditionalGenerationConfig (models/config.py):
   *  an "auto" SSM dtype becomes the checkpoint's mamba_ssm_cache_dtype / mamba_ssm_dtype
   *  (float32 for Nemotron-Nano-9B-v2). false: the release of vLLM issue 24280, where the state
   *  followed the model dtype (16-bit). */
  bool mamba_ssm_dtype_from_config = true;
  /*! mamba_utils.py since speculative decoding of hybrids: the Mamba-2 / GDN conv state keeps
   *  conv_kernel - 1 + num_speculative_tokens rows. false: conv_kernel - 1 (earlier releases). */
  bool mamba_conv_state_includes_spec_tokens = true;
  /*! "GPU KV cache size: N tokens": true, int(max_concurrency * max_model_len) (vLLM main in
   *  2026, after issue 40691 / PR 38364); false, num_blocks // len(kv_cache_groups) *
   *  min(block sizes), what vLLM 0.19 printed (issue 40691: 290,864 tokens beside 33.04x). */
  bool kv_tokens_from_concurrency = true;
  /*! get_kv_cache_groups: groups of the smallest layer type's size, unless the largest type
   *  has fewer than this many times as many layers, then the largest's (1.5: vLLM main,
   *  kv_cache_utils.py, the gpt-oss + eagle comment). 0: always the smallest (earlier releases,
   *  release unverified). */
  double group_size_max_ratio = 1.5;

  bool operator==(const KvCacheOptions&) const = default;
};

/*! \brief One KV-cache group (layers sharing a block table). */
struct KvCacheGroupInfo {
  std::string kind;                    //!< "full_attention", "sliding_window", "mla", ...
  std::vector<int64_t> layer_indices;  //!< global decoder-layer indices
  int64_t block_size = 0;              //!< tokens per block of this group (after page unification)
  int64_t page_size_bytes = 0;         //!< bytes of one block of one layer
  int64_t sliding_window_tokens = 0;
  int64_t max_memory_per_request_bytes = 0;  //!< for one layer of the group at max_model_len
  int64_t blocks_per_request = 0;      //!< block ids one max_model_len request takes in this group
  bool uniform_type = false;           //!< UniformTypeKVCacheSpecs (same type, different shapes)
};

/*! \brief The answer to "how much fits". */
struct KvCacheCapacity {
  int64_t num_blocks = 0;          //!< engine-wide (min over workers), vLLM's num_gpu_blocks
  int64_t num_tokens = 0;          //!< vLLM's "GPU KV cache size: N tokens"
  double max_concurrency = 0.0;    //!< vLLM's "Maximum concurrency for L tokens per request"
  int64_t block_size = 0;          //!< min block size over groups (cache_config.block_size)
  int64_t bytes_per_block = 0;     //!< bytes one block id costs across all layers of a worker
  int64_t bytes_per_request = 0;   //!< KV bytes one max_model_len request needs on a worker
  int64_t kv_cache_bytes = 0;      //!< bytes actually allocated per worker (num_blocks * bytes_per_block)
  int64_t available_bytes = 0;     //!< the per-worker budget the tightest worker had
  int64_t max_model_len = 0;
  std::vector<int64_t> num_blocks_per_worker;  //!< before the min-reduction
  std::vector<KvCacheGroupInfo> groups;
  std::string kv_cache_dtype;      //!< the resolved KV storage dtype ("auto" replaced)
  int64_t num_padding_layers = 0;  //!< vLLM's "Add %d padding layers"

  // ---- hybrid models (empty / 0 otherwise) ----
  int64_t mamba_state_bytes = 0;            //!< one recurrent layer's state on one rank, unpadded
  int64_t mamba_page_size_padded_bytes = 0; //!< the state padded to the attention page (0: no padding)
  double mamba_padding_percent = 0.0;       //!< vLLM's "Padding mamba page size by P%"
  int64_t attention_block_size = 0;         //!< the unified attention block size (tokens)
  /*! What vLLM logs while unifying the pages, in its words: "Setting attention block size to
   *  N tokens to ensure that attention page size is >= mamba page size." and "Padding mamba
   *  page size by P% to ensure that mamba page size and attention page size are exactly
   *  equal." (the second only when the pages differ). */
  std::vector<std::string> hybrid_log_lines;
};

/*! \brief KV capacity for \p available_bytes_per_worker: one entry (every worker alike), one per
 *  pipeline rank, or one per worker (tp * pp, rank-major by pp). Raises InsufficientMemory with
 *  vLLM's messages when nothing (or not one max_model_len request) fits, InvalidArgument for bad
 *  settings. */
KvCacheCapacity ComputeKvCacheCapacity(const ModelSpec& spec,
                                       const std::vector<int64_t>& available_bytes_per_worker,
                                       const KvCacheOptions& options);

/*! \brief vLLM's estimate_max_model_len: the largest L in [1, options.max_model_len] whose one
 *  request fits in \p available_bytes on every worker; 0 when even L = 1 does not. */
int64_t EstimateMaxModelLen(const ModelSpec& spec, const std::vector<int64_t>& available_bytes_per_worker,
                            const KvCacheOptions& options);

/*! \brief vLLM's check_enough_kv_cache_memory: throws InsufficientMemory with vLLM's exact
 *  message when available <= 0 or one max_model_len request does not fit. */
void CheckEnoughKvCacheMemory(const ModelSpec& spec, const std::vector<int64_t>& available_bytes_per_worker,
                              const KvCacheOptions& options);

/*! \brief The message CheckEnoughKvCacheMemory would raise, or "" when one request fits on
 *  every worker (lets callers tell "does not fit" from bad input without catching). */
std::string KvCacheMemoryShortfall(const ModelSpec& spec, const std::vector<int64_t>& available_bytes_per_worker,
                                   const KvCacheOptions& options);

/*! \brief vLLM's auto-fit (--max-model-len -1, _estimate_max_model_len_from_groups): like
 *  EstimateMaxModelLen but counting the tensor slots grouped layers share, so padding layers of
 *  hybrid models cost what they cost. Searches [1, options.max_model_len]; 0 if nothing fits. */
int64_t AutoFitMaxModelLen(const ModelSpec& spec, const std::vector<int64_t>& available_bytes_per_worker,
                           const KvCacheOptions& options);

/*! \brief The two lines vLLM logs for \p capacity, worded as vLLM words them:
 *  "GPU KV cache size: 476,016 tokens" and
 *  "Maximum concurrency for 8,192 tokens per request: 58.11x". */
std::vector<std::string> KvCacheLogLines(const KvCacheCapacity& capacity);

/*! \brief How a vLLM release words and rounds its KV capacity lines (the release's rule is in
 *  plan/vllm_versions.json): kV0Blocks "# GPU blocks: N, # CPU blocks: M" + concurrency of
 *  blocks x block_size / L (L without thousands separators); kBlockTokens (V1 0.8-0.9) tokens =
 *  blocks x block_size; kGroupedTokens (0.9.1-0.20) tokens = blocks // groups x min block size,
 *  concurrency over the groups, two lines; kCombinedLine one line, tokens = int(concurrency x L)
 *  (0.28+: v0.28.0 logs); kConcurrencyTokens (0.21-0.27: v0.22-v0.27 logs) the same tokens on the
 *  two lines of before. */
enum class KvLogFormat { kV0Blocks, kBlockTokens, kGroupedTokens, kCombinedLine, kConcurrencyTokens };

/*! \brief The lines \p format gives for \p capacity; \p cpu_swap_bytes is V0's swap space (the
 *  CPU blocks of kV0Blocks). */
std::vector<std::string> KvCacheLogLinesFor(const KvCacheCapacity& capacity, KvLogFormat format,
                                         int64_t cpu_swap_bytes = int64_t{4} << 30);

}  // namespace vllm_mem

#endif  // VLLM_MEM_KV_CACHE_KV_CACHE_CAPACITY_H_
