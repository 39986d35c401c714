/*!
 * \file core/kv_cache_capacity.cc
 * \brief KV-cache capacity (first cut: uniform full attention; exact rules follow).
 */
#include "core/kv_cache_capacity.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/parallelism.h"
#include "core/units.h"

namespace vllm_mem {
namespace {

int64_t BytesPerTokenPerWorker(const ModelSpec& spec, const KvCacheOptions& o) {
  const int64_t heads = spec.mla ? 1 : KvHeadsPerRank(spec.num_kv_heads, o.tensor_parallel_size);
  const int64_t dim = spec.mla ? spec.mla->kv_lora_rank + spec.mla->qk_rope_head_dim : 2 * spec.head_dim;
  const int64_t elem = DTypeSizeBytes(ResolveModelDType(o.model_dtype, spec.dtype, "dtype"));
  const auto [first, last] = PipelineLayerRange(spec.num_layers, 0, o.pipeline_parallel_size);
  return CheckedMul(CheckedMul(heads, dim, "kv"), CheckedMul(elem, last - first, "kv"), "kv");
}

}  // namespace

KvCacheCapacity ComputeKvCacheCapacity(const ModelSpec& spec, const std::vector<int64_t>& available,
                                       const KvCacheOptions& options) {
  RequirePositive(options.max_model_len, "max_model_len");
  if (available.empty()) throw InvalidArgument("available_bytes", "must not be empty");
  const int64_t block = options.block_size > 0 ? options.block_size : 16;
  KvCacheCapacity cap;
  cap.block_size = block;
  cap.bytes_per_block = CheckedMul(BytesPerTokenPerWorker(spec, options), block, "bytes_per_block");
  cap.available_bytes = *std::min_element(available.begin(), available.end());
  cap.num_blocks = std::max<int64_t>(cap.available_bytes / cap.bytes_per_block, 0);
  cap.max_model_len = options.max_model_len;
  const int64_t blocks_per_req = CeilDiv(options.max_model_len, block);
  cap.max_concurrency = static_cast<double>(cap.num_blocks) / static_cast<double>(blocks_per_req);
  cap.num_tokens = static_cast<int64_t>(cap.max_concurrency * static_cast<double>(options.max_model_len));
  cap.bytes_per_request = CheckedMul(blocks_per_req, cap.bytes_per_block, "bytes_per_request");
  cap.kv_cache_bytes = CheckedMul(cap.num_blocks, cap.bytes_per_block, "kv_cache_bytes");
  return cap;
}

int64_t EstimateMaxModelLen(const ModelSpec& spec, const std::vector<int64_t>& available,
                            const KvCacheOptions& options) {
  KvCacheCapacity cap = ComputeKvCacheCapacity(spec, available, options);
  return std::min(options.max_model_len, cap.num_blocks * cap.block_size);
}

void CheckEnoughKvCacheMemory(const ModelSpec& spec, const std::vector<int64_t>& available,
                              const KvCacheOptions& options) {
  KvCacheCapacity cap = ComputeKvCacheCapacity(spec, available, options);
  if (cap.max_concurrency < 1.0) throw InsufficientMemory("not enough KV cache memory");
}

}  // namespace vllm_mem
