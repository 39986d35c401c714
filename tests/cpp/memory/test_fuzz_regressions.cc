// Regression tests of the memory area for the defect classes the libFuzzer harnesses of tests/fuzz
// found (and the earlier external fuzzing pass of issue 9 reported), and for the inputs vLLM
// refuses that the core used to size anyway (issue 10). docs/fuzzing.md lists each finding and
// its fix. Every test below failed (undefined behaviour under UBSan, a wrong number, or
// unbounded work) on the code before the fix.
#include <limits>

#include <gtest/gtest.h>

#include "fuzz_regression.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/memory/memory_budget.h"

// In vllm_mem::testing, beside the shared helpers (fuzz_regression.h).
namespace vllm_mem::testing {
namespace {

TEST(FuzzRegression, RequestedMemoryOfAHugeTotalIsRefusedNotConverted) {
  // ceil(double(INT64_MAX) * 1.0) is 2^63, which no int64 holds.
  ExpectClearMessage(InvalidArgumentOf([] { RequestedMemoryBytes(kInt64Max, 1.0); }), "total_memory_bytes");
  EXPECT_EQ(RequestedMemoryBytes(kMaxDeviceBytes, 1.0), kMaxDeviceBytes);
  EXPECT_EQ(RequestedMemoryBytes(85029158912, 0.9), 76526243021);  // ceil(total * 0.9), as vLLM
}

}  // namespace
}  // namespace vllm_mem::testing
