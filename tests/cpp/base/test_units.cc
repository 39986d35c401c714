#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

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

// FormatFixed's integer fast path must print what glibc's "%.*f" prints (the exact binary value
// rounded half-to-even): ties, GiB figures, tiny and huge magnitudes, random bit patterns.
TEST(FormatFixed, MatchesPrintfOnRandomValues) {
  std::mt19937_64 gen(20261126);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto expect_printf = [](double v, int digits) {
    char want[512];
    const int n = std::snprintf(want, sizeof(want), "%.*f", digits, v);
    if (n > 0 && n < 60) {
      ASSERT_EQ(FormatFixed(v, digits), std::string(want)) << v << " digits " << digits;
    }
  };
  for (double v : {0.0, -0.0, 0.5, 1.5, 2.5, 0.125, 0.005, 0.015, 2.675, -0.001, 9.995, 0.92, 5e-324, 8.9e15}) {
    for (int d = 0; d <= 8; ++d) expect_printf(v, d);
  }
  for (int i = 0; i < 200000; ++i) {
    double v = 0.0;
    switch (i % 4) {
      case 0: v = static_cast<double>(gen() % (200ULL << 30)) / static_cast<double>(1ULL << 30); break;
      case 1: v = static_cast<double>(gen() % 100000) / 1000.0 + static_cast<double>(gen() % 3) * 0.0005; break;
      case 2: v = std::ldexp(unit(gen), static_cast<int>(gen() % 120) - 80); break;
      default: {
        const uint64_t bits = gen();
        std::memcpy(&v, &bits, sizeof(v));
      }
    }
    if ((gen() & 1) != 0) v = -v;
    if (std::isfinite(v)) expect_printf(v, i % 8);
  }
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
