// The guide's rules of thumb: the formulas as written, and their failure modes.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "vllm_mem/model/approximations.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {

TEST(Approximations, KvFormulaAsWritten) {
  EXPECT_EQ(RuleOfThumbKvCacheBytes(2, 100, 64, 3, 2), int64_t{2} * 100 * 64 * 3 * 2 * 2);
  EXPECT_EQ(RuleOfThumbKvCacheBytes(0, 100, 64, 3, 2), 0);
  EXPECT_THROW(RuleOfThumbKvCacheBytes(-1, 100, 64, 3, 2), InvalidArgument);
  EXPECT_THROW(RuleOfThumbKvCacheBytes(std::numeric_limits<int64_t>::max(), 2, 64, 3, 2), InvalidArgument);
}

TEST(Approximations, KvFromSpecIgnoresGqa) {
  // The rule uses hidden_size, so 8 and 2 KV heads give the same figure.
  auto spec = [](int kv) {
    return ModelSpec::FromHfConfigText(R"({"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 64,
      "num_attention_heads": 8, "vocab_size": 10, "torch_dtype": "float16", "num_key_value_heads": )" +
                                       std::to_string(kv) + "}");
  };
  EXPECT_EQ(RuleOfThumbKvCacheBytes(spec(8), 1, 10, "auto"), RuleOfThumbKvCacheBytes(spec(2), 1, 10, "auto"));
  EXPECT_EQ(RuleOfThumbKvCacheBytes(spec(8), 1, 10, "auto"), 10 * 64 * 4 * 2 * 2);
  EXPECT_EQ(RuleOfThumbKvCacheBytes(spec(8), 1, 10, "fp8"), 10 * 64 * 4 * 2);
}

TEST(Approximations, WeightsAreParamsTimesDtype) {
  ModelSpec s = ModelSpec::FromHfConfigText(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 8, "vocab_size": 1000, "torch_dtype": "bfloat16"})");
  EXPECT_EQ(RuleOfThumbWeightBytes(s, "auto"), NumParameters(s) * 2);
  EXPECT_EQ(RuleOfThumbWeightBytes(s, "int8"), NumParameters(s));
  EXPECT_EQ(RuleOfThumbWeightBytes(s, "float32"), NumParameters(s) * 4);
  // The exact figure pads the vocabulary (1000 -> 1024 rows), the rule does not.
  WeightOptions o;
  EXPECT_GT(WeightBytes(s, o), RuleOfThumbWeightBytes(s, "auto"));
  EXPECT_THROW(RuleOfThumbWeightBytes(s, "int3"), InvalidArgument);
}

TEST(Approximations, ActivationTenToThirtyPercent) {
  const ActivationRange r = RuleOfThumbActivationBytes(1000);
  EXPECT_EQ(r.low_bytes, 100);
  EXPECT_EQ(r.high_bytes, 300);
  const int64_t big = std::numeric_limits<int64_t>::max();
  const ActivationRange b = RuleOfThumbActivationBytes(big);
  EXPECT_EQ(b.low_bytes, big / 10);
  EXPECT_EQ(b.high_bytes, big / 10 * 3 + (big % 10) * 3 / 10);
  EXPECT_THROW(RuleOfThumbActivationBytes(-1), InvalidArgument);
}

}  // namespace vllm_mem
