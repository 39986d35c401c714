// Regression tests of the model area for the defect classes the libFuzzer harnesses of tests/fuzz
// found (and the earlier external fuzzing pass of issue 9 reported), and for the inputs vLLM
// refuses that the core used to size anyway (issue 10). docs/fuzzing.md lists each finding and
// its fix. Every test below failed (undefined behaviour under UBSan, a wrong number, or
// unbounded work) on the code before the fix.
#include <string>

#include <gtest/gtest.h>

#include "fuzz_regression.h"
#include "vllm_mem/model/model_spec.h"

// In vllm_mem::testing, beside the shared helpers (fuzz_regression.h).
namespace vllm_mem::testing {
namespace {

TEST(FuzzRegression, ConfigIntegerFromHugeDoubleIsRefusedNotConverted) {
  // 1e300 was cast to int64 (undefined behaviour) before the range check.
  for (const char* value : {"1e300", "-1e300", "1e19", "9.3e18", "4096.5"}) {
    ExpectClearMessage(
        InvalidArgumentOf([&] { ModelSpec::FromHfConfigText(Config(std::string(R"(, "head_dim": )") + value)); }),
        "head_dim");
  }
  // An integral float is still an integer, as before.
  EXPECT_EQ(ModelSpec::FromHfConfigText(Config(R"(, "head_dim": 64.0)")).head_dim, 64);
}

TEST(FuzzRegression, RopeScalingFactorIsRangeCheckedBeforeTheProduct) {
  // max_position_embeddings * 1e300 was cast to int64 unchecked.
  auto rope = [](const std::string& factor) {
    return ModelSpec::FromHfConfigText(
        Config(R"(, "rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 1024, "factor": )" +
               factor + "}"));
  };
  EXPECT_EQ(rope("4.0").traits.rope_cache_positions, 4096);
  for (const char* factor : {"1e300", "0", "-2.0", "0.0"}) {
    ExpectClearMessage(InvalidArgumentOf([&] { rope(factor); }), "rope_scaling.factor");
  }
  // In range but scaling past the context bound: refused, not a 10^10-row cache.
  ExpectClearMessage(InvalidArgumentOf([&] {
                       ModelSpec::FromHfConfigText(Config(R"(, "rope_scaling": {"rope_type": "yarn",
                         "original_max_position_embeddings": 1048576, "factor": 9999.0})"));
                     }),
                     "rope_scaling.factor");
  ExpectClearMessage(InvalidArgumentOf([&] {
                       ModelSpec::FromHfConfigText(Config(R"(, "rope_scaling": {"type": "linear", "factor": 2e6})"));
                     }),
                     "rope_scaling.factor");
}

TEST(FuzzRegression, ModelCountsAreBoundedBeforeTheirVectorsAreBuilt) {
  // num_hidden_layers 2^40 allocated a 2^40-entry layer vector.
  ExpectClearMessage(
      InvalidArgumentOf([] {
        ModelSpec::FromHfConfigText(R"({"model_type": "llama", "num_hidden_layers": 1099511627776, "hidden_size": 64,
                         "num_attention_heads": 1, "vocab_size": 10})");
      }),
      "num_hidden_layers");
  ExpectClearMessage(InvalidArgumentOf([] {
                       ModelSpec::FromHfConfigText(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
                         "num_attention_heads": 1, "vocab_size": 10, "max_position_embeddings": 4611686018427387904})");
                     }),
                     "max_position_embeddings");
  ExpectClearMessage(InvalidArgumentOf([] {
                       ModelSpec::FromHfConfigText(Config(R"(, "num_local_experts": 9223372036854775807,
                         "num_experts_per_tok": 2)"));
                     }),
                     "num_local_experts");
}

TEST(BadInputRefused, KvHeadsMustDivideTheAttentionHeads) {
  ExpectClearMessage(InvalidArgumentOf([] { ModelSpec::FromHfConfigText(Config("", 32, 6)); }), "num_key_value_heads");
  ExpectClearMessage(InvalidArgumentOf([] { ModelSpec::FromHfConfigText(Config("", 8, 16)); }), "num_key_value_heads");
  EXPECT_EQ(ModelSpec::FromHfConfigText(Config("", 32, 1)).num_kv_heads, 1);  // MQA
}

TEST(BadInputRefused, QuantizationGroupSizeZeroOrNegative) {
  auto gptq = [](const char* group) {
    return ModelSpec::FromHfConfigText(Config(
        std::string(R"(, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": )") + group + "}"));
  };
  EXPECT_EQ(gptq("128").quantization->group_size, 128);
  EXPECT_EQ(gptq("-1").quantization->group_size, -1);  // per-channel, as GPTQ/AWQ write it
  for (const char* bad : {"0", "-2", "-128"}) {
    ExpectClearMessage(InvalidArgumentOf([&] { gptq(bad); }), "quantization_config.group_size");
  }
  ExpectClearMessage(InvalidArgumentOf([] {
                       ModelSpec::FromHfConfigText(Config(R"(, "quantization_config": {"quant_method":
                         "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "group_size": 0}}}})"));
                     }),
                     "quantization_config.group_size");
}

}  // namespace
}  // namespace vllm_mem::testing
