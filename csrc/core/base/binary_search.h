/*!
 * \file core/base/binary_search.h
 * \brief The one binary search of the core, over an integer range and a monotone predicate:
 *        the largest value that still fits (a max_model_len, a max_num_seqs, a capture size)
 *        or the smallest that does (a utilization, a KV budget). Every caller's predicate is
 *        a re-plan or a re-size, so the search evaluates it about log2(hi - lo) times.
 */
#ifndef VLLM_MEM_CORE_BASE_BINARY_SEARCH_H_
#define VLLM_MEM_CORE_BASE_BINARY_SEARCH_H_

#include <cstdint>
#include <optional>

namespace vllm_mem {

/*! \brief hi - lo as unsigned: no overflow for any lo <= hi of int64. */
inline uint64_t SearchWidth(int64_t lo, int64_t hi) { return static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo); }

/*! \brief The largest v in [lo, hi] with holds(v), for a predicate true up to a threshold and
 *  false above it; nullopt when lo > hi or holds(lo) is false. */
template <typename Predicate>
std::optional<int64_t> LargestHolding(int64_t lo, int64_t hi, Predicate&& holds) {
  if (lo > hi || !holds(lo)) return std::nullopt;
  while (lo < hi) {  // invariant: holds(lo)
    const uint64_t width = SearchWidth(lo, hi);
    const int64_t mid = static_cast<int64_t>(static_cast<uint64_t>(lo) + width / 2 + (width & 1));  // rounds up
    if (holds(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

/*! \brief The smallest v in [lo, hi] with holds(v), for a predicate false below a threshold and
 *  true from it; nullopt when lo > hi or holds(hi) is false. */
template <typename Predicate>
std::optional<int64_t> SmallestHolding(int64_t lo, int64_t hi, Predicate&& holds) {
  if (lo > hi || !holds(hi)) return std::nullopt;
  while (lo < hi) {  // invariant: holds(hi)
    const int64_t mid = static_cast<int64_t>(static_cast<uint64_t>(lo) + SearchWidth(lo, hi) / 2);
    if (holds(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return hi;
}

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_BASE_BINARY_SEARCH_H_
