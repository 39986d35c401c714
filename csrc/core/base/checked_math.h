/*!
 * \file core/base/checked_math.h
 * \brief 64-bit size arithmetic that throws instead of wrapping. Every byte and token count in
 *        the core goes through these, so an absurd config gives an error, never a wrong number.
 */
#ifndef VLLM_MEM_CORE_BASE_CHECKED_MATH_H_
#define VLLM_MEM_CORE_BASE_CHECKED_MATH_H_

#include <cstdint>
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

/*! \brief ceil(a / b) for a >= 0, b > 0 (vLLM's cdiv). */
inline int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

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
