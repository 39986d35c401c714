/*!
 * \file tests/cpp/expect_invalid_argument.h
 * \brief One assertion for "this call is refused, naming this field": the core's
 *        InvalidArgument carries its field to Python (vllm_mem.InvalidArgumentError.field) and
 *        the CLI maps it to a flag, so the field is part of the contract the tests check.
 */
#ifndef VLLM_MEM_TESTS_EXPECT_INVALID_ARGUMENT_H_
#define VLLM_MEM_TESTS_EXPECT_INVALID_ARGUMENT_H_

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "vllm_mem/base/error.h"

namespace vllm_mem::testing {

/*! \brief Fails unless \p call throws InvalidArgument whose field() is \p field. */
inline void ExpectInvalidArgument(const std::function<void()>& call, const std::string& field) {
  try {
    call();
    ADD_FAILURE() << "expected InvalidArgument(" << field << ")";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

}  // namespace vllm_mem::testing

#endif  // VLLM_MEM_TESTS_EXPECT_INVALID_ARGUMENT_H_
