/*!
 * \file tests/cpp/model/test_hybrid_config.cc
 * \brief Hybrid and multimodal configs that transformers or vLLM refuse, refused here by field
 *        (issue 22): Jamba offsets at or past their period, Nemotron-H MoE layers without
 *        experts, Mamba-2 groups that do not split the heads or the TP ranks, a fractional
 *        Mistral-3 spatial_merge_size. Each would otherwise be sized as a different model.
 */
#include <gtest/gtest.h>

#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/mamba_state.h"
#include "vllm_mem/model/dtype.h"
#include "vllm_mem/model/hybrid_spec.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {
namespace {

// ai21labs/Jamba-v0.1's config.json (the fields that decide its size), with the offsets given.
std::string Jamba(int expert_offset = 1, int attn_offset = 4) {
  return R"({"architectures": ["JambaForCausalLM"], "model_type": "jamba", "torch_dtype": "bfloat16",
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "vocab_size": 65536, "num_experts": 16, "num_experts_per_tok": 2,
    "expert_layer_period": 2, "attn_layer_period": 8,
    "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": 256,
    "mamba_conv_bias": true, "mamba_proj_bias": false, "tie_word_embeddings": false,
    "expert_layer_offset": )" + std::to_string(expert_offset) + R"(, "attn_layer_offset": )" +
         std::to_string(attn_offset) + "}";
}

// A small Nemotron-H (Mamba-2 M, attention *, MLP -, MoE E) with \p extra appended.
std::string NemotronH(const std::string& pattern, const std::string& extra = "", int n_groups = 4) {
  return R"({"model_type": "nemotron_h", "torch_dtype": "bfloat16", "hidden_size": 256,
    "num_hidden_layers": )" + std::to_string(pattern.size()) + R"(, "num_attention_heads": 8,
    "num_key_value_heads": 2, "head_dim": 32, "intermediate_size": 512, "vocab_size": 1024,
    "mamba_num_heads": 8, "mamba_head_dim": 32, "n_groups": )" + std::to_string(n_groups) + R"(, "ssm_state_size": 16,
    "hybrid_override_pattern": ")" + pattern + "\"" + extra + "}";
}

std::string FieldOf(const std::string& config) {
  try {
    (void)ModelSpec::FromHfConfigText(config);
  } catch (const InvalidArgument& e) {
    return e.field();
  }
  return "(accepted)";
}

TEST(HybridConfig, JambaReadAsPublished) {
  // Jamba-v0.1 has 51.6 B parameters: 4 attention layers (4, 12, 20, 28), 16 MoE layers (odd).
  const ModelSpec m = ModelSpec::FromHfConfigText(Jamba());
  ASSERT_TRUE(m.hybrid.has_value());
  EXPECT_EQ(m.hybrid->num_attention_layers, 4);
  EXPECT_EQ(m.hybrid->num_state_layers, 28);
  const double params = static_cast<double>(NumParameters(m));
  EXPECT_NEAR(params / 1e9, 51.6, 0.1);
}

TEST(HybridConfig, JambaOffsetAtOrPastItsPeriodIsRefused) {
  // transformers' JambaConfig._check_supported_offset: offset < period. At the period no layer
  // gets experts (read as 9.29 B parameters) or attention (no KV cache at all).
  EXPECT_EQ(FieldOf(Jamba(2, 4)), "expert_layer_offset");
  EXPECT_EQ(FieldOf(Jamba(7, 4)), "expert_layer_offset");
  EXPECT_EQ(FieldOf(Jamba(1, 8)), "attn_layer_offset");
  EXPECT_EQ(FieldOf(Jamba(1, -1)), "attn_layer_offset");
  try {
    (void)ModelSpec::FromHfConfigText(Jamba(1, 8));
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("attention layer offset (8) must be smaller than attention layer period (8"),
              std::string::npos)
        << e.what();
  }
  // The last in-range offsets are still read.
  EXPECT_EQ(FieldOf(Jamba(0, 7)), "(accepted)");
}

TEST(HybridConfig, NemotronHMoeLayersNeedExperts) {
  // vLLM's NemotronHMoE reads n_routed_experts & co. for every E layer.
  EXPECT_EQ(FieldOf(NemotronH("ME*E")), "n_routed_experts");
  EXPECT_EQ(FieldOf(NemotronH("ME*E", R"(, "n_routed_experts": 0)")), "n_routed_experts");
  const std::string experts = R"(, "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 128)";
  EXPECT_EQ(FieldOf(NemotronH("ME*E", experts)), "(accepted)");
  EXPECT_EQ(FieldOf(NemotronH("M-*-")), "(accepted)");  // no E: no experts needed
}

TEST(HybridConfig, Mamba2GroupsMustDivideTheHeads) {
  // 8 heads in 3 groups: vLLM's SSD kernels assert nheads % ngroups == 0.
  EXPECT_EQ(FieldOf(NemotronH("M-*-", "", 3)), "n_groups");
  EXPECT_EQ(FieldOf(R"({"model_type": "mamba2", "hidden_size": 256, "num_hidden_layers": 2,
    "vocab_size": 1024, "num_heads": 8, "head_dim": 64, "n_groups": 5})"),
            "n_groups");
  EXPECT_EQ(FieldOf(R"({"model_type": "bamba", "hidden_size": 256, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 1024, "mamba_n_heads": 8, "mamba_d_head": 64,
    "mamba_n_groups": 3})"),
            "mamba_n_groups");
}

TEST(HybridConfig, Mamba2GroupsNotDividingTpMustBeOne) {
  // MambaMixer2: "If tensor parallel world size does not divide num_groups, then num_groups
  // must equal 1." 4 groups at TP 8 once became 4 + (8 - 4) = 8; 12 groups at TP 8 would be
  // 12 + (8 - 12) = 8, a smaller state than the checkpoint's.
  EXPECT_EQ(Mamba2GroupsAfterReplication(1, 8), 8);
  EXPECT_EQ(Mamba2GroupsAfterReplication(16, 8), 16);
  EXPECT_THROW(Mamba2GroupsAfterReplication(12, 8), InvalidArgument);
  EXPECT_THROW(Mamba2GroupsAfterReplication(2, 4), InvalidArgument);
  const ModelSpec m = ModelSpec::FromHfConfigText(NemotronH("M-*-"));  // 8 heads, 4 groups
  MambaStateOptions o;
  o.tensor_parallel_size = 8;
  try {
    (void)ComputeMambaState(m, DType::kBFloat16, o);
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "tensor_parallel_size");
    EXPECT_NE(std::string(e.what()).find("num_groups must equal 1"), std::string::npos) << e.what();
  }
  WeightOptions w;
  w.tensor_parallel_size = 8;
  try {
    (void)ComputeWeights(m, w);
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "tensor_parallel_size");
  }
  o.tensor_parallel_size = 2;  // 4 groups over 2 ranks: fine
  EXPECT_GT(ComputeMambaState(m, DType::kBFloat16, o).page_size_bytes, 0);
}

// mistralai/Mistral-Small-3.1-24B-Instruct-2503 (the fields the tower and projector read).
std::string Mistral3(const std::string& merge) {
  return R"({"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
    "multimodal_projector_bias": false, "projector_hidden_act": "gelu")" + merge + R"(,
    "text_config": {"head_dim": 128, "hidden_size": 5120, "intermediate_size": 32768, "model_type": "mistral",
      "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8, "vocab_size": 131072},
    "torch_dtype": "bfloat16", "vision_config": {"head_dim": 64, "hidden_size": 1024, "image_size": 1540,
      "intermediate_size": 4096, "model_type": "pixtral", "num_attention_heads": 16, "num_channels": 3,
      "num_hidden_layers": 24, "patch_size": 14}, "vision_feature_layer": -1})";
}

TEST(HybridConfig, Mistral3SpatialMergeSizeIsAPositiveInteger) {
  // 2.5 once fell back to 2 (the default) and was sized as 2.
  EXPECT_EQ(FieldOf(Mistral3(R"(, "spatial_merge_size": 2.5)")), "spatial_merge_size");
  EXPECT_EQ(FieldOf(Mistral3(R"(, "spatial_merge_size": "2")")), "spatial_merge_size");
  EXPECT_EQ(FieldOf(Mistral3(R"(, "spatial_merge_size": 0)")), "spatial_merge_size");
  EXPECT_EQ(FieldOf(Mistral3(R"(, "spatial_merge_size": true)")), "spatial_merge_size");
  // Absent, null, 2 and 2.0 are the same model.
  const int64_t two = NumParameters(ModelSpec::FromHfConfigText(Mistral3(R"(, "spatial_merge_size": 2)")));
  EXPECT_EQ(NumParameters(ModelSpec::FromHfConfigText(Mistral3(""))), two);
  EXPECT_EQ(NumParameters(ModelSpec::FromHfConfigText(Mistral3(R"(, "spatial_merge_size": null)"))), two);
  EXPECT_EQ(NumParameters(ModelSpec::FromHfConfigText(Mistral3(R"(, "spatial_merge_size": 2.0)"))), two);
  EXPECT_NE(NumParameters(ModelSpec::FromHfConfigText(Mistral3(R"(, "spatial_merge_size": 3)"))), two);
}

}  // namespace
}  // namespace vllm_mem
