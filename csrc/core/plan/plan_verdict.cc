/*!
 * \file core/plan/plan_verdict.cc
 * \brief The verdict chain, once: free memory, weights, profile peak, KV cache.
 */
#include "vllm_mem/plan/plan_verdict.h"

#include <algorithm>

#include "core/base/checked_math.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

// V0's own words (vllm/worker/worker.py raise_if_cache_size_invalid).
std::string V0KvMessage(const VerdictFigures& f, const VerdictWords& w) {
  if (f.any_rank_without_blocks) {
    return "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
           "initializing the engine.";
  }
  return "The model's max seq len (" + std::to_string(w.max_model_len) +
         ") is larger than the maximum number of tokens that can be stored in KV cache (" +
         std::to_string(CheckedMul(f.min_blocks, w.block_size, "num_tokens")) +
         "). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.";
}

}  // namespace

std::string FailurePhaseName(FailurePhase phase) {
  switch (phase) {
    case FailurePhase::kNone:
      return "";
    case FailurePhase::kFreeMemory:
      return "free_memory";
    case FailurePhase::kWeights:
      return "weights";
    case FailurePhase::kProfilePeak:
      return "profile_peak";
    case FailurePhase::kNoKvBlocks:
      return "no_kv_blocks";
    case FailurePhase::kMaxModelLen:
      return "max_model_len";
  }
  return "";
}

void AddRank(VerdictFigures& f, int64_t weights_bytes, int64_t non_kv_bytes, int64_t available_kv_bytes,
             int64_t bytes_per_block, int64_t bytes_per_request, int64_t num_blocks, bool kv_fits) {
  f.worst_weights_bytes = std::max(f.worst_weights_bytes, weights_bytes);
  f.worst_non_kv_bytes = std::max(f.worst_non_kv_bytes, non_kv_bytes);
  f.kv_fits = f.kv_fits && kv_fits;
  f.any_rank_without_blocks = f.any_rank_without_blocks || num_blocks == 0;
  f.min_blocks = f.min_blocks < 0 ? num_blocks : std::min(f.min_blocks, num_blocks);
  f.block_shortfall_bytes = std::max(f.block_shortfall_bytes, bytes_per_block - available_kv_bytes);
  f.request_shortfall_bytes = std::max(f.request_shortfall_bytes, bytes_per_request - available_kv_bytes);
}

Verdict DecideVerdict(const VerdictFigures& f, const VerdictWords* words) {
  Verdict v;
  const int64_t free = f.free_memory_bytes;
  if (!f.request_fits) {
    v.phase = FailurePhase::kFreeMemory;
    v.shortfall_bytes = f.requested_bytes - free;
    if (words) v.message = std::string(words->request_memory_error);
  } else if (f.worst_weights_bytes > free) {
    v.phase = FailurePhase::kWeights;
    v.shortfall_bytes = f.worst_weights_bytes - free;
    if (words) {
      v.message = "Failed to load model - not enough GPU memory: the weights (" + FormatGib(f.worst_weights_bytes) +
                  " GiB per GPU) exceed the free memory (" + FormatGib(free) +
                  " GiB). Try increasing --tensor-parallel-size or using --quantization.";
    }
  } else if (f.worst_non_kv_bytes > free) {
    v.phase = FailurePhase::kProfilePeak;
    v.shortfall_bytes = f.worst_non_kv_bytes - free;
    if (words) {
      v.message = "CUDA out of memory in the profile run: weights + peak activation + non-torch (" +
                  FormatGib(f.worst_non_kv_bytes) + " GiB per GPU) exceed the free memory (" + FormatGib(free) +
                  " GiB).";
    }
  } else if (!f.kv_fits) {
    v.phase = f.any_rank_without_blocks ? FailurePhase::kNoKvBlocks : FailurePhase::kMaxModelLen;
    v.shortfall_bytes = f.any_rank_without_blocks ? f.block_shortfall_bytes : f.request_shortfall_bytes;
    if (words) v.message = words->v0_engine ? V0KvMessage(f, *words) : std::string(words->kv_shortfall);
  }
  return v;
}

}  // namespace vllm_mem
