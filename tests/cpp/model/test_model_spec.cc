#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_family.h"
#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {

TEST(ModelSpec, LlamaGqa) {
  ModelSpec s = ModelSpec::FromHfConfigText(R"({
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32,
    "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "max_position_embeddings": 131072})");
  EXPECT_EQ(s.num_layers, 32);
  EXPECT_EQ(s.num_kv_heads, 8);
  EXPECT_EQ(s.head_dim, 128);
  EXPECT_EQ(s.dtype, DType::kBFloat16);
  EXPECT_EQ(s.CountLayers(AttentionKind::kFull), 32);
  EXPECT_FALSE(s.UsesMla());
}

TEST(ModelSpec, KvHeadSpellingsAndDefaults) {
  auto kv = [](const char* extra) {
    std::string text = std::string(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 8,
                                       "vocab_size": 10)") + extra + "}";
    return ModelSpec::FromHfConfigText(text).num_kv_heads;
  };
  EXPECT_EQ(kv(""), 8);  // MHA
  EXPECT_EQ(kv(R"(, "multi_query_group_num": 2)"), 2);
  EXPECT_EQ(kv(R"(, "n_head_kv": 1, "num_key_value_heads": 4)"), 1);  // vLLM's order
  EXPECT_EQ(kv(R"(, "attn_config": {"kv_n_heads": 4})"), 4);
  EXPECT_EQ(ModelSpec::FromHfConfigText(R"({"model_type": "falcon", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 8, "vocab_size": 10, "multi_query": true})").num_kv_heads, 1);
}

TEST(ModelSpec, TextConfigNestingAndSlidingPatterns) {
  ModelSpec g3 = ModelSpec::FromHfConfigText(R"({"model_type": "gemma3", "torch_dtype": "bfloat16",
    "text_config": {"model_type": "gemma3_text", "num_hidden_layers": 12, "hidden_size": 256,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 256, "vocab_size": 1000,
    "sliding_window": 1024, "sliding_window_pattern": 6}})");
  EXPECT_EQ(g3.head_dim, 256);
  EXPECT_EQ(g3.CountLayers(AttentionKind::kSlidingWindow), 10);
  EXPECT_EQ(g3.layers[5].attention, AttentionKind::kFull);
  EXPECT_EQ(g3.layers[0].sliding_window_tokens, 1024);
  EXPECT_TRUE(g3.tie_word_embeddings);

  ModelSpec qwen = ModelSpec::FromHfConfigText(R"({"model_type": "qwen2", "num_hidden_layers": 4,
    "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "sliding_window": 131072,
    "use_sliding_window": false, "max_window_layers": 28})");
  EXPECT_EQ(qwen.CountLayers(AttentionKind::kFull), 4);

  ModelSpec mistral = ModelSpec::FromHfConfigText(R"({"model_type": "mistral", "num_hidden_layers": 4,
    "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "sliding_window": 4096})");
  EXPECT_EQ(mistral.CountLayers(AttentionKind::kSlidingWindow), 4);
}

TEST(ModelSpec, MlaAndMoe) {
  ModelSpec s = ModelSpec::FromHfConfigText(R"({"model_type": "deepseek_v3", "num_hidden_layers": 61,
    "hidden_size": 7168, "num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 129280,
    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
    "v_head_dim": 128, "intermediate_size": 18432, "moe_intermediate_size": 2048,
    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "first_k_dense_replace": 3, "moe_layer_freq": 1, "topk_method": "noaux_tc"})");
  ASSERT_TRUE(s.UsesMla());
  EXPECT_EQ(s.mla->kv_lora_rank + s.mla->qk_rope_head_dim, 576);
  EXPECT_EQ(s.CountLayers(AttentionKind::kMla), 61);
  ASSERT_TRUE(s.moe.has_value());
  EXPECT_FALSE(s.layers[2].moe);
  EXPECT_TRUE(s.layers[3].moe);
  EXPECT_TRUE(s.moe->router_bias);
}

TEST(ModelSpec, BadInputNamesTheField) {
  auto field_of = [](const char* text) -> std::string {
    try {
      ModelSpec::FromHfConfigText(text);
    } catch (const InvalidArgument& e) {
      return e.field();
    }
    return "no error";
  };
  EXPECT_EQ(field_of(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 8, "vocab_size": 10})"),
            "num_hidden_layers / n_layer / num_layers / n_layers");
  // A value that is present but wrong is named by the spelling the file used.
  EXPECT_EQ(field_of(R"({"model_type": "llama", "num_hidden_layers": 0, "hidden_size": 64, "num_attention_heads": 8, "vocab_size": 10})"),
            "num_hidden_layers");
  EXPECT_EQ(field_of(R"({"model_type": "llama", "n_layer": -1, "hidden_size": 64, "num_attention_heads": 8, "vocab_size": 10})"),
            "n_layer");
  EXPECT_EQ(field_of(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 60, "num_attention_heads": 8, "vocab_size": 10})"),
            "head_dim");
  EXPECT_EQ(field_of(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 8, "vocab_size": 10,
                         "torch_dtype": "float12"})"), "torch_dtype");
  EXPECT_EQ(field_of(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 8, "vocab_size": 10,
                         "quantization_config": {"quant_method": "magic"}})"),
            "quantization_config.quant_method");
  EXPECT_EQ(field_of(R"([1, 2])"), "config");
  EXPECT_EQ(field_of(R"({"model_type": "llama", "num_hidden_layers": "32", "hidden_size": 64, "num_attention_heads": 8, "vocab_size": 10})"),
            "num_hidden_layers");
}

TEST(ModelSpec, FamiliesWithoutRulesAreRefusedOrLabelled) {
  const std::string body = R"("num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 8,
                              "vocab_size": 10})";
  auto config = [&](const std::string& type) { return R"({"model_type": ")" + type + R"(", )" + body; };
  // No rules at all: refused by name, the supported families listed, the way out said.
  try {
    ModelSpec::FromHfConfigText(config("brand_new_arch"));
    FAIL() << "expected a refusal";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.field(), "model_type");
    EXPECT_NE(what.find("'brand_new_arch'"), std::string::npos) << what;
    // The supported list, or (once it no longer fits in 300 characters) where to find it.
    EXPECT_TRUE(what.find("llama") != std::string::npos || what.find("supported_model_types()") != std::string::npos)
        << what;
    EXPECT_NE(what.find("allow_unknown"), std::string::npos) << what;
    EXPECT_LE(what.size(), 300u) << what;
  }
  // An escaped name is 4x its bytes (found by fuzz_model_config): still within 300 characters.
  std::string escaped;
  for (int i = 0; i < 40; ++i) escaped += "\\u007f";
  try {
    ModelSpec::FromHfConfigText(config(escaped));
    FAIL() << "expected a refusal";
  } catch (const InvalidArgument& e) {
    EXPECT_LE(std::string(e.what()).size(), 300u) << e.what();
  }
  // A config without a model_type is not a Hugging Face config: refused too.
  EXPECT_THROW(ModelSpec::FromHfConfigText("{" + body), InvalidArgument);
  // A hybrid state-space model would be sized as a transformer: refused as not modelled.
  for (const char* hybrid : {"minimax", "plamo2", "zamba"}) {
    try {
      ModelSpec::FromHfConfigText(config(hybrid));
      FAIL() << hybrid;
    } catch (const Unsupported& e) {
      EXPECT_NE(std::string(e.what()).find("not modelled"), std::string::npos) << e.what();
    }
  }
  // Asked for, a generic estimate carries its reason; a supported family carries none.
  const ModelSpec generic = ModelSpec::FromHfConfigText(config("zamba"), ModelReadOptions{true});
  EXPECT_FALSE(generic.HasExactRules());
  EXPECT_NE(generic.generic_estimate_reason.find("Mamba"), std::string::npos);
  const ModelSpec unknown = ModelSpec::FromHfConfigText(config("brand_new_arch"), ModelReadOptions{true});
  EXPECT_NE(unknown.generic_estimate_reason.find("no sizing rules"), std::string::npos);
  EXPECT_TRUE(ModelSpec::FromHfConfigText(config("llama")).HasExactRules());
  // Every supported family classifies as such, and the list is what the message names.
  for (const std::string& type : SupportedModelTypes()) {
    EXPECT_EQ(ClassifyModelType(type).support, ModelSupport::kSupported) << type;
  }
}

TEST(ModelSpec, MultimodalCheckpointsCarryTheirCaveat) {
  const ModelSpec vl = ModelSpec::FromHfConfigText(R"({"model_type": "gemma3",
      "text_config": {"model_type": "gemma3_text", "num_hidden_layers": 2, "hidden_size": 64,
                      "num_attention_heads": 8, "vocab_size": 10, "head_dim": 8}})");
  EXPECT_TRUE(vl.HasExactRules());
  ASSERT_EQ(vl.caveats.size(), 1u);
  EXPECT_NE(vl.caveats[0].find("vision tower"), std::string::npos);
  EXPECT_TRUE(ModelSpec::FromHfConfigText(R"({"model_type": "llama", )" R"("num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 8, "vocab_size": 10})").caveats.empty());
}

}  // namespace vllm_mem
