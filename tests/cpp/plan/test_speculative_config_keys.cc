// The --speculative-config key table (plan/speculative_config_keys.json) and the check of a
// user's keys by release. Each key's release range and source are data; the releases asserted
// here are those the table cites (PR #31541: unknown keys refused from 0.14; PR #35060:
// disable_by_batch_size gone from 0.16; [C] vllm/config/speculative.py at 002e77c).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/plan/speculative_config_keys.h"

namespace vllm_mem {
namespace {

std::vector<std::string> Check(const std::string& json, const std::string& version = "") {
  return CheckSpeculativeConfigKeys(ParseJson(json), version);
}

TEST(SpeculativeConfigKeys, EveryRowHasASourceAndKeysAreUnique) {
  std::set<std::string> seen;
  for (const SpeculativeConfigKey& k : SpeculativeConfigKeys()) {
    EXPECT_TRUE(seen.insert(k.key).second) << k.key;
    EXPECT_FALSE(k.source.empty()) << k.key;
    if (k.use != SpeculativeKeyUse::kInternal && k.use != SpeculativeKeyUse::kRefused) {
      EXPECT_FALSE(k.effect.empty()) << k.key;
    }
  }
  // The fields of vLLM's SpeculativeConfig at [C] that a user sets, every one in the table.
  for (const char* key : {"enforce_eager",
                          "num_speculative_tokens",
                          "model",
                          "method",
                          "draft_tensor_parallel_size",
                          "tensor_parallel_size",
                          "quantization",
                          "moe_backend",
                          "attention_backend",
                          "kv_cache_dtype",
                          "max_model_len",
                          "revision",
                          "code_revision",
                          "index_share_for_mtp_iteration",
                          "disable_padded_drafter_batch",
                          "disable_eagle_block_drop",
                          "use_local_argmax_reduction",
                          "use_heterogeneous_vocab",
                          "prompt_lookup_max",
                          "prompt_lookup_min",
                          "parallel_drafting",
                          "num_speculative_tokens_per_batch_size",
                          "suffix_decoding_max_tree_depth",
                          "suffix_decoding_max_cached_requests",
                          "suffix_decoding_max_spec_factor",
                          "suffix_decoding_min_token_prob",
                          "draft_load_config",
                          "rejection_sample_method",
                          "synthetic_acceptance_rates",
                          "synthetic_acceptance_length",
                          "draft_sample_method",
                          "enable_adaptive_verification",
                          "dspark_draft_topk"}) {
    EXPECT_TRUE(seen.count(key)) << key;
  }
}

TEST(SpeculativeConfigKeys, NoMemoryKeysAreListedForTheNotes) {
  const auto keys = Check(R"({"method": "eagle3", "model": "x", "num_speculative_tokens": 3, "revision": "main",
                              "disable_padded_drafter_batch": true, "enforce_eager": false, "max_model_len": 2048,
                              "draft_sample_method": "greedy"})");
  EXPECT_EQ(keys, (std::vector<std::string>{"disable_padded_drafter_batch", "draft_sample_method", "enforce_eager",
                                            "max_model_len", "revision"}));
  // Used keys and unset (null) ones are not listed.
  EXPECT_TRUE(Check(R"({"method": "ngram", "num_speculative_tokens": 3, "quantization": null, "kv_cache_dtype": null})")
                  .empty());
}

TEST(SpeculativeConfigKeys, UnknownKeyRefusedFromTheReleaseThatForbidsExtraFields) {
  try {
    Check(R"({"method": "ngram", "num_speculative_tokens": 3, "num_speculative_token": 3})", "0.19.0");
    FAIL() << "expected a refusal";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "speculative_config.num_speculative_token");
    EXPECT_NE(std::string(e.what()).find("Unexpected keyword argument"), std::string::npos) << e.what();
  }
  // Before 0.14 pydantic's extra='ignore' dropped it: accepted, with no effect.
  EXPECT_EQ(Check(R"({"method": "ngram", "num_speculative_token": 3})", "0.13.0"),
            std::vector<std::string>{"num_speculative_token"});
}

TEST(SpeculativeConfigKeys, KeysByRelease) {
  // disable_by_batch_size: a field until PR #35060 (0.16.0, inferred).
  EXPECT_EQ(Check(R"({"disable_by_batch_size": 4})", "0.15.0"), std::vector<std::string>{"disable_by_batch_size"});
  try {
    Check(R"({"disable_by_batch_size": 4})", "0.16.0");
    FAIL() << "expected a refusal";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("removed by 0.16.0"), std::string::npos) << e.what();
  }
  // The V0 sampler's keys: read in the 0.9/0.10 line, absent from every version after 0.14.
  EXPECT_EQ(Check(R"({"acceptance_method": "typical_acceptance_sampler"})", "0.9.2").size(), 1U);
  EXPECT_THROW(Check(R"({"acceptance_method": "typical_acceptance_sampler"})", "0.14.0"), InvalidArgument);
  // rejection_sample_method appeared with PR #35461 (0.17.0, inferred).
  try {
    Check(R"({"rejection_sample_method": "strict"})", "0.16.0");
    FAIL() << "expected a refusal";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("it appeared in 0.17.0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Check(R"({"rejection_sample_method": "strict"})", "0.17.0").size(), 1U);
}

TEST(SpeculativeConfigKeys, ValuesWhoseMemoryIsNotModelledAreRefusedByName) {
  for (const char* json : {R"({"draft_sample_method": "probabilistic"})", R"({"kv_cache_dtype": "fp8"})",
                           R"({"rejection_sample_method": "probabilistic"})", R"({"use_heterogeneous_vocab": true})",
                           R"({"num_speculative_tokens_per_batch_size": [[1, 8, 3]]})"}) {
    try {
      Check(json);
      FAIL() << json;
    } catch (const Unsupported& e) {
      EXPECT_NE(std::string(e.what()).find("speculative_config."), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(Check(R"({"speculative_token_tree": "[(0,), (1,)]"})", "0.10.0"), Unsupported);
}

// SpeculativeMethod by release: the 0.11.0 docs list mtp and mimo_mtp (absent from the Literal PR
// #24904 moved); glm4_moe_mtp, pangu_ultra_moe_mtp and suffix appear in 0.12.0's.
TEST(SpeculativeConfigKeys, MethodNamesByRelease) {
  EXPECT_NO_THROW(Check(R"({"method": "deepseek_mtp"})", "0.10.0"));
  try {
    Check(R"({"method": "mtp"})", "0.10.0");
    FAIL() << "expected a refusal";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "speculative_config.method");
    const std::string what = e.what();
    EXPECT_NE(what.find("Input should be"), std::string::npos) << what;
    EXPECT_NE(what.find("'mtp' appeared in 0.11.0"), std::string::npos) << what;
    EXPECT_NE(what.find("'qwen3_next_mtp'"), std::string::npos) << what;  // in 0.10's list
  }
  EXPECT_NO_THROW(Check(R"({"method": "mtp"})", "0.11.0"));
  EXPECT_THROW(Check(R"({"method": "glm4_moe_mtp"})", "0.11.0"), InvalidArgument);
  EXPECT_NO_THROW(Check(R"({"method": "glm4_moe_mtp"})", "0.12.0"));
  EXPECT_THROW(Check(R"({"method": "qwen3_5_mtp"})", "0.12.0"), InvalidArgument);
  EXPECT_NO_THROW(Check(R"({"method": "qwen3_5_mtp"})"));
  // Every alias is sized as one of the five modelled methods or marked not modelled.
  for (const SpeculativeMethodRow& m : SpeculativeMethodRows()) {
    const std::set<std::string> sized{"", "ngram", "draft_model", "eagle", "eagle3", "mtp"};
    EXPECT_TRUE(sized.count(m.sized_as)) << m.name;
    if (m.name.size() > 4 && m.name.substr(m.name.size() - 4) == "_mtp") {
      EXPECT_EQ(m.sized_as, "mtp") << m.name;
    }
  }
  EXPECT_EQ(FindSpeculativeMethodRow("medusa")->sized_as, "");
  EXPECT_EQ(FindSpeculativeMethodRow("eagle4"), nullptr);
}

TEST(SpeculativeConfigKeys, VllmRefusalsAndInternalFields) {
  try {
    Check(R"({"tensor_parallel_size": 2})");
    FAIL() << "expected a refusal";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "speculative_config.tensor_parallel_size");
    EXPECT_NE(std::string(e.what()).find("Please pass 'draft_tensor_parallel_size' instead."), std::string::npos);
  }
  EXPECT_TRUE(Check(R"({"tensor_parallel_size": null})").empty());  // vLLM: "is not None"
  EXPECT_THROW(Check(R"({"draft_model_config": {}})"), InvalidArgument);
  EXPECT_THROW(Check(R"([1, 2])"), InvalidArgument);
  EXPECT_EQ(SpeculativeUnknownKeysRefusedSince(), "0.14.0");
}

}  // namespace
}  // namespace vllm_mem
