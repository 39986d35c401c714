/*!
 * \file core/base/checked_math.h
 * \brief 64-bit size arithmetic that throws instead of wrapping. Every byte and token count in
 *        the core goes through these, so an absurd config gives an error, never a wrong number.
 */
#ifndef VLLM_MEM_CORE_BASE_CHECKED_MATH_H_
#define VLLM_MEM_CORE_BASE_CHECKED_MATH_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "vllm_mem/base/error.h"

namespace vllm_mem {

/*! \brief a + b, or InvalidArgument naming \p field when the sum leaves int64. */
inline int64_t CheckedAdd(int64_t a, int64_t b, const char* field) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) {
    throw InvalidArgument(field, "size overflows 64 bits (" + std::to_string(a) + " + " +
                                     std::to_string(b) + ")");
  }
  return out;
}

/*! \brief a - b, or InvalidArgument naming \p field when the difference leaves int64. */
inline int64_t CheckedSub(int64_t a, int64_t b, const char* field) {
  int64_t out;
  if (__builtin_sub_overflow(a, b, &out)) {
    throw InvalidArgument(field, "size overflows 64 bits (" + std::to_string(a) + " - " +
                                     std::to_string(b) + ")");
  }
  return out;
}

/*! \brief a * b, or InvalidArgument naming \p field when the product leaves int64. */
inline int64_t CheckedMul(int64_t a, int64_t b, const char* field) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) {
    throw InvalidArgument(field, "size overflows 64 bits (" + std::to_string(a) + " * " +
                                     std::to_string(b) + ")");
  }
  return out;
}

/*! \brief \p value truncated toward zero (C++'s and Python's int()), or InvalidArgument naming
 *  \p field when it is NaN, infinite or outside int64. The range is checked on the double
 *  before the conversion: converting an out-of-range double is undefined behaviour. */
inline int64_t CheckedDoubleToInt64(double value, const char* field) {
  // -2^63 is exactly representable; 2^63 is the first double above INT64_MAX.
  if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);  // std::to_string(1e300) is 300 digits
    throw InvalidArgument(field, std::string("must be a finite number within 64-bit integers, got ") + text);
  }
  return static_cast<int64_t>(value);
}

/*! \brief Throws InvalidArgument unless value <= bound; \p why says where the bound comes from. */
inline void RequireAtMost(int64_t value, int64_t bound, const char* field, const char* why) {
  if (value > bound) {
    throw InvalidArgument(field, "must be at most " + std::to_string(bound) + " (" + why + "), got " +
                                     std::to_string(value));
  }
}

/*! \brief Throws InvalidArgument unless 1 <= value <= bound. */
inline void RequirePositiveAtMost(int64_t value, int64_t bound, const char* field, const char* why) {
  if (value <= 0) {
    throw InvalidArgument(field, "must be a positive integer, got " + std::to_string(value));
  }
  RequireAtMost(value, bound, field, why);
}

/*! \brief ceil(a / b) for a >= 0, b > 0 (vLLM's cdiv). */
inline int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

/*! PyTorch's caching allocator rounds every block up to 512 bytes (kMinBlockSize in
 *  c10/cuda/CUDACachingAllocator.cpp). */
inline constexpr int64_t kAllocatorMinBlockBytes = 512;

/*! \brief A tensor of \p bytes as the caching allocator holds it, which is what
 *  torch.cuda.memory_allocated (and so vLLM's printed figures) count for a small tensor. */
inline int64_t AllocatorBlockBytes(int64_t bytes, const char* field) {
  return CheckedMul(CeilDiv(bytes, kAllocatorMinBlockBytes), kAllocatorMinBlockBytes, field);
}

/*! \brief Floor division that rounds toward negative infinity, as Python's //. */
inline int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

/*! \brief Throws InvalidArgument unless value > 0. */
inline void RequirePositive(int64_t value, const char* field) {
  if (value <= 0) {
    throw InvalidArgument(field, "must be a positive integer, got " + std::to_string(value));
  }
}

/*! \brief Throws InvalidArgument unless value >= 0. */
inline void RequireNonNegative(int64_t value, const char* field) {
  if (value < 0) {
    throw InvalidArgument(field, "must be >= 0, got " + std::to_string(value));
  }
}

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_BASE_CHECKED_MATH_H_
