/*!
 * \file tests/cpp/model/test_config_defaults.cc
 * \brief transformers' class defaults (model/config_defaults.json) filled into absent fields only.
 */
#include <gtest/gtest.h>

#include "core/model/config_defaults.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/model/model_spec.h"

namespace vllm_mem {
namespace {

int64_t IntAt(const JsonValue& obj, const char* key) { return *obj.Find(key)->AsNumber().integer; }

TEST(ConfigDefaults, EveryEntryParsesAndCitesItsFile) {
  const std::vector<std::string> types = ConfigDefaultModelTypes();
  EXPECT_GE(types.size(), 20u);
  for (const std::string& type : types) {
    const std::string source = ConfigDefaultsSource(type);
    EXPECT_TRUE(source.find("configuration_") != std::string::npos || source.find("configs/") != std::string::npos)
        << type << ": " << source;
  }
  EXPECT_EQ(ConfigDefaultsSource("no_such_type"), "");
}

TEST(ConfigDefaults, FillsOnlyAbsentFieldsOfTheSubConfigClass) {
  const JsonValue filled = ApplyConfigDefaults(ParseJson(R"({"model_type": "gemma3",
      "text_config": {"hidden_size": 2560, "num_hidden_layers": 34, "sliding_window": null},
      "vision_config": {"hidden_size": 1152}})"));
  const JsonValue& text = *filled.Find("text_config");
  EXPECT_EQ(IntAt(text, "vocab_size"), 262208);         // Gemma3TextConfig
  EXPECT_EQ(IntAt(text, "num_attention_heads"), 8);
  EXPECT_EQ(IntAt(text, "hidden_size"), 2560);          // present: kept
  EXPECT_TRUE(text.Find("sliding_window")->IsNull());   // present as null: kept, as transformers
  const JsonValue& vision = *filled.Find("vision_config");
  EXPECT_EQ(IntAt(vision, "num_hidden_layers"), 12);    // SiglipVisionConfig
  EXPECT_EQ(IntAt(vision, "hidden_size"), 1152);
  EXPECT_EQ(IntAt(filled, "mm_tokens_per_image"), 256); // the wrapper's own default
  EXPECT_EQ(VisionConfigClass(filled), "siglip_vision_model");
}

TEST(ConfigDefaults, AutoConfigWrappersFollowTheSubDictsModelType) {
  // LlavaNextConfig builds vision_config with CONFIG_MAPPING[its model_type].
  const JsonValue filled = ApplyConfigDefaults(ParseJson(R"({"model_type": "llava_next",
      "text_config": {"model_type": "granite"}, "vision_config": {"model_type": "siglip_vision_model"}})"));
  EXPECT_EQ(VisionConfigClass(filled), "siglip_vision_model");
  EXPECT_EQ(IntAt(*filled.Find("text_config"), "intermediate_size"), 11008);  // GraniteConfig
  EXPECT_EQ(IntAt(filled, "vision_feature_layer"), -2);
  // Without a model_type the wrapper's fallback class applies (clip_vision_model).
  EXPECT_EQ(VisionConfigClass(ApplyConfigDefaults(ParseJson(R"({"model_type": "llava_next", "vision_config": {}})"))),
            "clip_vision_model");
}

TEST(ConfigDefaults, Qwen25VlTextFieldsAtTheTopLevel) {
  const JsonValue filled = ApplyConfigDefaults(ParseJson(R"({"model_type": "qwen2_5_vl", "hidden_size": 3584})"));
  EXPECT_EQ(IntAt(filled, "vocab_size"), 152064);
  EXPECT_EQ(IntAt(filled, "hidden_size"), 3584);
}

TEST(ConfigDefaults, PlainTextFilesAreNotFilledUnlessTheClassOptsIn) {
  // A plain mistral file missing num_hidden_layers is still refused (see config_defaults.json _about).
  EXPECT_THROW(ModelSpec::FromHfConfigText(R"({"model_type": "mistral", "hidden_size": 64,
      "num_attention_heads": 8, "vocab_size": 10})"), InvalidArgument);
  // gemma3_text opts in: Gemma-3-1B style files omit vocab_size.
  const ModelSpec g = ModelSpec::FromHfConfigText(R"({"model_type": "gemma3_text", "num_hidden_layers": 26,
      "hidden_size": 1152, "num_attention_heads": 4, "num_key_value_heads": 1, "torch_dtype": "bfloat16"})");
  EXPECT_EQ(g.vocab_size, 262208);
  EXPECT_EQ(g.head_dim, 256);
  EXPECT_TRUE(g.tie_word_embeddings);
  EXPECT_EQ(ApplyConfigDefaults(ParseJson("[1]")).IsArray(), true);  // not an object: untouched
}

// transformers' attribute_map: ERNIE-4.5-MoE's num_experts is its moe_num_experts; a field the file
// gives under the common name, or a null, is left as it is.
TEST(ConfigDefaults, AttributeMapGivesTheCommonName) {
  const JsonValue filled = ApplyConfigDefaults(ParseJson(R"({"model_type": "ernie4_5_moe", "moe_num_experts": 64,
      "moe_k": 6, "moe_num_shared_experts": null, "num_experts_per_tok": 8})"));
  EXPECT_EQ(IntAt(filled, "num_experts"), 64);
  EXPECT_EQ(IntAt(filled, "num_experts_per_tok"), 8);
  EXPECT_EQ(filled.Find("n_shared_experts"), nullptr);
  EXPECT_EQ(IntAt(filled, "moe_num_experts"), 64);
}

TEST(ConfigDefaults, Gemma3KeepsBothRotaryCaches) {
  const ModelSpec s = ModelSpec::FromHfConfigText(R"({"model_type": "gemma3", "torch_dtype": "bfloat16",
      "text_config": {"hidden_size": 5376, "num_hidden_layers": 62, "num_attention_heads": 32,
      "num_key_value_heads": 16, "head_dim": 128, "intermediate_size": 21504,
      "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}})");
  // Global layers: linear scaling x8 of max_position_embeddings 131072 -> 1,048,576 rows; local
  // layers: rope_local_base_freq 10000, unscaled -> 131,072 rows. Different get_rope keys, so two
  // caches: (1,048,576 + 131,072) x 128 x 2 B = 301,989,888 B (288 MiB).
  EXPECT_EQ(s.traits.rope_cache_positions, 1048576);
  EXPECT_EQ(s.traits.local_rope_cache_positions, 131072);
  // Same base and no scaling: one key, one shared cache.
  const ModelSpec shared = ModelSpec::FromHfConfigText(R"({"model_type": "gemma3_text", "num_hidden_layers": 6,
      "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16,
      "rope_theta": 10000.0, "rope_local_base_freq": 10000.0})");
  EXPECT_EQ(shared.traits.local_rope_cache_positions, 0);
}

}  // namespace
}  // namespace vllm_mem
