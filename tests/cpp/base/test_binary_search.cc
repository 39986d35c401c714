#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/binary_search.h"

namespace vllm_mem {

// Every threshold in a small range, both directions, with the range's ends included: the
// search must agree with a linear scan and evaluate the predicate about log2(n) times.
TEST(BinarySearch, LargestHoldingMatchesALinearScan) {
  for (int64_t lo = -3; lo <= 3; ++lo) {
    for (int64_t hi = lo - 1; hi <= 12; ++hi) {
      for (int64_t threshold = lo - 2; threshold <= hi + 2; ++threshold) {
        int calls = 0;
        const auto got = LargestHolding(lo, hi, [&](int64_t v) {
          ++calls;
          return v <= threshold;
        });
        std::optional<int64_t> want;
        for (int64_t v = lo; v <= hi; ++v) {
          if (v <= threshold) want = v;
        }
        EXPECT_EQ(got, want) << lo << " " << hi << " " << threshold;
        EXPECT_LE(calls, 6);  // 1 + ceil(log2(16))
      }
    }
  }
}

TEST(BinarySearch, SmallestHoldingMatchesALinearScan) {
  for (int64_t lo = -3; lo <= 3; ++lo) {
    for (int64_t hi = lo - 1; hi <= 12; ++hi) {
      for (int64_t threshold = lo - 2; threshold <= hi + 2; ++threshold) {
        int calls = 0;
        const auto got = SmallestHolding(lo, hi, [&](int64_t v) {
          ++calls;
          return v >= threshold;
        });
        std::optional<int64_t> want;
        for (int64_t v = hi; v >= lo; --v) {
          if (v >= threshold) want = v;
        }
        EXPECT_EQ(got, want) << lo << " " << hi << " " << threshold;
        EXPECT_LE(calls, 6);
      }
    }
  }
}

TEST(BinarySearch, FullInt64RangeDoesNotOverflow) {
  const int64_t big = INT64_MAX - 1;
  EXPECT_EQ(LargestHolding(0, INT64_MAX, [&](int64_t v) { return v <= big; }), big);
  EXPECT_EQ(SmallestHolding(INT64_MIN, INT64_MAX, [](int64_t v) { return v >= -7; }), -7);
  int calls = 0;
  LargestHolding(1, int64_t{1} << 40, [&](int64_t v) {
    ++calls;
    return v <= 123456789;
  });
  EXPECT_LE(calls, 42);
}

}  // namespace vllm_mem
