#include <gtest/gtest.h>

#include <cmath>

#include "core/base/checked_math.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {

TEST(FormatGib, MatchesPythonRoundRepr) {
  EXPECT_EQ(FormatGib(15 * kGiB), "15.0");
  EXPECT_EQ(FormatGib(static_cast<int64_t>(14.9889 * kGiB)), "14.99");
  EXPECT_EQ(FormatGib(kGiB / 10), "0.1");
  EXPECT_EQ(FormatGib(0), "0.0");
  EXPECT_EQ(FormatGib(-kGiB / 2), "-0.5");
  // 65088610304 bytes is the "60.62 GiB" of a real vLLM suggestion line.
  EXPECT_EQ(FormatGib(65088610304), "60.62");
  EXPECT_EQ(FormatGib(68789657600), "64.07");
}

TEST(FormatRounded, RoundsTheExactBinaryValue) {
  EXPECT_EQ(FormatRounded(2.675, 2), "2.67");  // 2.675 is 2.67499999... in binary
  EXPECT_EQ(FormatRounded(1.0, 2), "1.0");
  EXPECT_EQ(FormatRounded(1.5, 2), "1.5");
}

TEST(FormatThousands, Commas) {
  EXPECT_EQ(FormatThousands(126256), "126,256");
  EXPECT_EQ(FormatThousands(999), "999");
  EXPECT_EQ(FormatThousands(1000), "1,000");
  EXPECT_EQ(FormatThousands(-1234567), "-1,234,567");
  EXPECT_EQ(FormatThousands(INT64_MIN), "-9,223,372,036,854,775,808");
}

TEST(CheckedMath, OverflowThrowsNamingTheField) {
  EXPECT_EQ(CheckedMul(1 << 20, 1 << 20, "x"), int64_t{1} << 40);
  try {
    CheckedMul(INT64_MAX / 2, 3, "num_blocks");
    FAIL() << "expected overflow";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "num_blocks");
    EXPECT_NE(std::string(e.what()).find("overflows 64 bits"), std::string::npos);
  }
  EXPECT_THROW(CheckedAdd(INT64_MAX, 1, "x"), InvalidArgument);
  EXPECT_THROW(CheckedSub(INT64_MIN, 1, "x"), InvalidArgument);
  EXPECT_EQ(CeilDiv(8192, 16), 512);
  EXPECT_EQ(CeilDiv(8193, 16), 513);
  EXPECT_EQ(FloorDiv(-7, 2), -4);
  EXPECT_THROW(RequirePositive(0, "block_size"), InvalidArgument);
}

}  // namespace vllm_mem
