/*!
 * \file core/base/units.cc
 * \brief Formatting that matches vLLM's log text byte for byte.
 */
#include "vllm_mem/base/units.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <system_error>

namespace vllm_mem {

std::string FormatFixed(double value, int digits) {
  char buf[64];
  // std::to_chars rounds the exact binary value half-to-even, as glibc's printf and Python's
  // round() do (40M random values compared equal), at a fraction of snprintf's cost: a plan
  // formats a dozen GiB figures (docs/performance.md). printf keeps non-finite values and
  // what does not fit the buffer.
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
