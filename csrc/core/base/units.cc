/*!
 * \file core/base/units.cc
 * \brief Formatting that matches vLLM's log text byte for byte.
 */
#include "vllm_mem/base/units.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <string>
#include <system_error>

namespace vllm_mem {

namespace {

constexpr uint64_t kPow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000};

/*! |value| x 10^digits rounded half-to-even on the exact binary value, when that fits 64-bit
 *  integers: |value| = m / 2^shift exactly, so rounding is one shift and one compare. This is
 *  what std::to_chars (and printf) compute, at a third of to_chars' cost for the dozen GiB
 *  figures a plan formats (docs/performance.md); 3M random values incl. ties compared equal. */
bool ScaledDigits(double magnitude, int digits, uint64_t& scaled) {
  if (digits < 0 || digits > 6 || !(magnitude < 9.0e15)) return false;
  int exp2 = 0;
  const double frac = std::frexp(magnitude, &exp2);  // magnitude = frac x 2^exp2, frac in [0.5, 1)
  uint64_t m = static_cast<uint64_t>(std::ldexp(frac, 53));  // exact: a double has 53 bits
  int shift = 53 - exp2;                                      // >= 0: magnitude < 2^53
  if (m == 0) {
    scaled = 0;
    return true;
  }
  const int zeros = std::min(std::countr_zero(m), shift);
  m >>= zeros;
  shift -= zeros;
  const uint64_t pow = kPow10[digits];
  if (shift >= 64 || m > UINT64_MAX / pow) return false;
  const uint64_t n = m * pow;
  if (shift == 0) {
    scaled = n;
    return true;
  }
  uint64_t q = n >> shift;
  const uint64_t rem = n & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (rem > half || (rem == half && (q & 1) != 0)) ++q;
  scaled = q;
  return true;
}

}  // namespace

std::string FormatFixed(double value, int digits) {
  char buf[64];
  uint64_t scaled = 0;
  if (std::isfinite(value) && ScaledDigits(std::fabs(value), digits, scaled)) {
    char* p = buf;
    if (std::signbit(value)) *p++ = '-';  // "-0.00" for -0.001, as printf and to_chars print
    const uint64_t pow = kPow10[digits];
    p = std::to_chars(p, buf + sizeof(buf), scaled / pow).ptr;
    if (digits > 0) {
      *p++ = '.';
      uint64_t fraction = scaled % pow;
      for (int i = digits - 1; i >= 0; --i, fraction /= 10) p[i] = static_cast<char>('0' + fraction % 10);
      p += digits;
    }
    return std::string(buf, p);
  }
  // std::to_chars rounds the exact binary value half-to-even, as glibc's printf and Python's
  // round() do (40M random values compared equal). printf keeps non-finite values and what
  // does not fit the buffer.
  if (std::isfinite(value) && digits >= 0) {
    const auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed, digits);
    if (res.ec == std::errc()) return std::string(buf, res.ptr);
  }
  std::snprintf(buf, sizeof(buf), "%.*f", digits, value);
  return buf;
}

std::string FormatRounded(double value, int ndigits) {
  // Python prints round(-0.001, 2) as "-0.0"; printf keeps that sign too.
  std::string s = FormatFixed(value, ndigits);
  auto dot = s.find('.');
  if (dot == std::string::npos) return s + ".0";
  size_t end = s.size();
  while (end > dot + 2 && s[end - 1] == '0') --end;
  return s.substr(0, end);
}

std::string FormatGib(int64_t bytes) {
  return FormatRounded(static_cast<double>(bytes) / static_cast<double>(kGiB), 2);
}

std::string FormatMib(int64_t bytes) {
  return FormatRounded(static_cast<double>(bytes) / static_cast<double>(kMiB), 2);
}

std::string FormatThousands(int64_t value) {
  // Magnitude as unsigned so that INT64_MIN does not overflow on negation.
  unsigned long long magnitude = value < 0 ? 0ULL - static_cast<unsigned long long>(value)
                                           : static_cast<unsigned long long>(value);
  std::string digits = std::to_string(magnitude);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return value < 0 ? "-" + out : out;
}

}  // namespace vllm_mem
