/*!
 * \file tests/cpp/fuzz_regression.h
 * \brief What the fuzz regression tests of every area share (tests/cpp/<area>/test_fuzz_regressions.cc):
 *        a small config, and "refused with a message that names its field and stays readable".
 */
#ifndef VLLM_MEM_TESTS_FUZZ_REGRESSION_H_
#define VLLM_MEM_TESTS_FUZZ_REGRESSION_H_

#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"

namespace vllm_mem::testing {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

/*! A small Llama-shaped config with \p extra fields appended (or overriding earlier ones is not
 *  possible: duplicate keys are refused, so callers add only new keys). */
inline std::string Config(const std::string& extra = "", int64_t heads = 8, int64_t kv_heads = 2) {
  return R"({"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 512, "intermediate_size": 1024,
             "vocab_size": 1000, "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
             "num_attention_heads": )" +
         std::to_string(heads) + R"(, "num_key_value_heads": )" + std::to_string(kv_heads) + extra + "}";
}

/*! The InvalidArgument \p body throws; fails the test when it throws nothing or another type. */
template <typename F>
InvalidArgument InvalidArgumentOf(F&& body) {
  try {
    body();
  } catch (const InvalidArgument& e) {
    return e;
  }
  ADD_FAILURE() << "expected InvalidArgument";
  return InvalidArgument("none", "none");
}

/*! Every message names its field, and stays short enough to read (issue 10: <= 300 chars). */
inline void ExpectClearMessage(const InvalidArgument& e, const std::string& field) {
  EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  EXPECT_LE(std::string(e.what()).size(), 300u) << e.what();
}

}  // namespace vllm_mem::testing

#endif  // VLLM_MEM_TESTS_FUZZ_REGRESSION_H_
