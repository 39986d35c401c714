/*!
 * \file core/stages/memory_imbalance.cc
 * \brief SGLang-style imbalance check over per-rank free memory.
 */
#include "vllm_mem/stages/memory_imbalance.h"

#include <cmath>
#include <string>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {

MemoryImbalance CheckMemoryImbalance(const std::vector<int64_t>& free_bytes_per_rank, double ratio) {
  if (free_bytes_per_rank.empty()) throw InvalidArgument("free_bytes_per_rank", "needs one figure per rank, got none");
  if (!(ratio > 0.0 && ratio <= 1.0)) {
    throw InvalidArgument("ratio", "must be in (0, 1], got " + FormatRounded(ratio, 6));
  }
  MemoryImbalance out;
  out.ratio = ratio;
  out.free_bytes_per_rank = free_bytes_per_rank;
  for (size_t r = 0; r < free_bytes_per_rank.size(); ++r) {
    const int64_t free = free_bytes_per_rank[r];
    RequireNonNegative(free, "free_bytes_per_rank");
    if (r == 0 || free < out.min_free_bytes) {
      out.min_free_bytes = free;
      out.min_rank = static_cast<int64_t>(r);
    }
    if (r == 0 || free > out.max_free_bytes) {
      out.max_free_bytes = free;
      out.max_rank = static_cast<int64_t>(r);
    }
  }
  // SGLang compares GiB floats, min < local * 0.9; the same comparison in double is exact enough
  // for byte counts below 2^53 and has no rounding cliff that integer GiB would add.
  for (size_t r = 0; r < free_bytes_per_rank.size(); ++r) {
    if (static_cast<double>(out.min_free_bytes) < static_cast<double>(free_bytes_per_rank[r]) * ratio) {
      out.warning_ranks.push_back(static_cast<int64_t>(r));
    }
  }
  out.imbalanced = !out.warning_ranks.empty();
  out.lost_bytes = out.max_free_bytes - out.min_free_bytes;
  if (out.imbalanced) {
    std::string per_rank;
    for (size_t r = 0; r < free_bytes_per_rank.size(); ++r) {
      if (r > 0) per_rank += ", ";
      per_rank += "rank ";
      per_rank += std::to_string(r);
      per_rank += ": " + FormatGib(free_bytes_per_rank[r]) + " GiB";
    }
    const double max_gib = static_cast<double>(out.max_free_bytes) / static_cast<double>(kGiB);
    out.message = "The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
                  "min_per_gpu_memory=" + FormatGib(out.min_free_bytes) + " GiB (rank " +
                  std::to_string(out.min_rank) + "), local_gpu_memory=" + FormatGib(out.max_free_bytes) +
                  " GiB (rank " + std::to_string(out.max_rank) + "), local_gpu_memory * " + FormatRounded(ratio, 6) +
                  "=" + FormatRounded(max_gib * ratio, 2) + " GiB. Free memory per rank: " + per_rank +
                  ". Every rank is sized by the tightest one, so " + FormatGib(out.lost_bytes) +
                  " GiB per GPU go unused on rank " + std::to_string(out.max_rank) + ".";
  }
  return out;
}

}  // namespace vllm_mem
