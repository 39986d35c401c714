// Families added as data (model_families.json "traits") and the strict reading of config fields:
// each family's parameter count against a published figure, its per-rank tensors by hand from
// vLLM's model file, and each malformed field refused by name.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/kv_cache/kv_cache_dtype.h"
#include "vllm_mem/model/model_family.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/vision_encoder.h"
#include "vllm_mem/model/weights.h"
#include "expect_invalid_argument.h"

namespace vllm_mem {
namespace {

using testing::ExpectInvalidArgument;

// facebook/opt-125m config.json (https://huggingface.co/facebook/opt-125m/blob/main/config.json),
// the fields that decide memory.
const char* const kOpt125m = R"({"architectures": ["OPTForCausalLM"], "model_type": "opt",
  "do_layer_norm_before": true, "ffn_dim": 3072, "hidden_size": 768, "max_position_embeddings": 2048,
  "num_attention_heads": 12, "num_hidden_layers": 12, "torch_dtype": "float16", "vocab_size": 50272,
  "word_embed_proj_dim": 768, "activation_function": "relu", "enable_bias": true})";

// facebook/opt-350m config.json: post-LN (do_layer_norm_before false: no final norm) and a
// 512-wide embedding with project_in / project_out.
const char* const kOpt350m = R"({"architectures": ["OPTForCausalLM"], "model_type": "opt",
  "do_layer_norm_before": false, "ffn_dim": 4096, "hidden_size": 1024, "max_position_embeddings": 2048,
  "num_attention_heads": 16, "num_hidden_layers": 24, "torch_dtype": "float16", "vocab_size": 50272,
  "word_embed_proj_dim": 512, "activation_function": "relu"})";

// microsoft/Phi-3-mini-4k-instruct config.json (sliding_window 2047, no rope_scaling).
const char* const kPhi3Mini4k = R"({"architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
  "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 4096,
  "original_max_position_embeddings": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 32, "rope_scaling": null, "sliding_window": 2047, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "vocab_size": 32064})";

// microsoft/phi-4 config.json (model_type phi3, GQA 40/10, sliding_window null).
const char* const kPhi4 = R"({"architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
  "hidden_size": 5120, "intermediate_size": 17920, "max_position_embeddings": 16384,
  "original_max_position_embeddings": 16384, "num_attention_heads": 40, "num_hidden_layers": 40,
  "num_key_value_heads": 10, "rope_scaling": null, "rope_theta": 250000, "sliding_window": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 100352})";

// microsoft/Phi-4-mini-instruct config.json: tied embeddings, partial_rotary_factor 0.75,
// longrope from 4096 to 131072 positions (factor lists shortened: they do not change memory).
const char* const kPhi4Mini = R"({"architectures": ["Phi3ForCausalLM"], "model_type": "phi3",
  "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 131072,
  "original_max_position_embeddings": 4096, "num_attention_heads": 24, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "partial_rotary_factor": 0.75,
  "rope_scaling": {"long_factor": [1.0, 1.1], "short_factor": [1.0, 1.0], "type": "longrope"},
  "sliding_window": 262144, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "vocab_size": 200064})";

// Qwen/Qwen3.5-35B-A3B (and Qwen3.6-35B-A3B) config.json text_config: 40 layers, 3 gated-DeltaNet
// : 1 gated attention, 256 experts of 512 + a 512 shared expert; its vision_config as published
// (Qwen3_5MoeVisionConfig, model_type qwen3_5_moe; the sizes code-index id 62049265089 writes for
// this model, and the 35,951,822,704-parameter total below confirms them).
const char* const kQwen35Moe = R"({"architectures": ["Qwen3_5MoeForConditionalGeneration"],
  "model_type": "qwen3_5_moe", "tie_word_embeddings": false,
  "text_config": {"model_type": "qwen3_5_moe_text", "dtype": "bfloat16", "hidden_size": 2048,
    "num_hidden_layers": 40, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "vocab_size": 248320, "full_attention_interval": 4, "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
    "linear_value_head_dim": 128, "num_experts": 256, "num_experts_per_tok": 8,
    "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "mlp_only_layers": [],
    "max_position_embeddings": 262144, "partial_rotary_factor": 0.25, "attn_output_gate": true,
    "mamba_ssm_dtype": "float32", "tie_word_embeddings": false,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "mrope_interleaved": true,
                        "mrope_section": [11, 11, 10]}},
  "vision_config": {"deepstack_visual_indexes": [], "depth": 27, "hidden_act": "gelu_pytorch_tanh",
    "hidden_size": 1152, "in_channels": 3, "intermediate_size": 4304, "model_type": "qwen3_5_moe",
    "num_heads": 16, "num_position_embeddings": 2304, "out_hidden_size": 2048, "patch_size": 16,
    "spatial_merge_size": 2, "temporal_patch_size": 2}})";

WeightOptions Opts(int64_t tp = 1, int64_t pp = 1) {
  WeightOptions o;
  o.tensor_parallel_size = tp;
  o.pipeline_parallel_size = pp;
  return o;
}

/*! \p config with \p key's value replaced by \p value (a JSON fragment). */
std::string With(std::string config, const std::string& key, const std::string& value) {
  const std::string needle = "\"" + key + "\": ";
  const size_t at = config.find(needle);
  if (at == std::string::npos) return config.substr(0, config.size() - 1) + ", " + needle + value + "}";
  size_t end = at + needle.size();
  int depth = 0;
  for (; end < config.size(); ++end) {
    const char c = config[end];
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (depth == 0) break;
      --depth;
    }
    if (c == ',' && depth == 0) break;
  }
  return config.replace(at + needle.size(), end - at - needle.size(), value);
}

}  // namespace

// opt-125m: 125,239,296 parameters (transformers' OPTForCausalLM.num_parameters(), the figure the
// model card's "125M" rounds); opt-350m: 331,196,416 (same source). By hand (vLLM opt.py):
// 125m: embed 50272x768 + positions (2048+2)x768 + 12 x [qkv 768x2304+2304, out 768^2+768,
//       fc1 768x3072+3072, fc2 3072x768+768, 2 LayerNorms 2x1536] + final LayerNorm 1536.
// 350m: embed 50272x512 + project_in/out 2x512x1024 + positions 2050x1024 + 24 layers, no final norm.
TEST(ModelFamilies, OptPublishedCountsAndTensors) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kOpt125m);
  EXPECT_TRUE(s.tie_word_embeddings);  // PretrainedConfig's default; the file does not say
  EXPECT_EQ(s.traits.learned_position_rows, 2050);
  EXPECT_EQ(s.traits.rope_cache_positions, 0);  // no rotary embedding
  const int64_t layer = (768 * 2304 + 2304) + (768 * 768 + 768) + (768 * 3072 + 3072) + (3072 * 768 + 768) + 2 * 1536;
  EXPECT_EQ(NumParameters(s), 50272 * 768 + 2050 * 768 + 12 * layer + 1536);
  EXPECT_EQ(NumParameters(s), 125239296);
  const ModelSpec m = ModelSpec::FromHfConfigText(kOpt350m);
  EXPECT_FALSE(m.traits.final_norm);
  EXPECT_EQ(m.traits.embed_dim, 512);
  EXPECT_EQ(NumParameters(m), 331196416);

  // TP 2 (fp16): vocab 50272 padded to 50304 rows, split; positions and projections replicated.
  const WeightBreakdown w = ComputeWeights(m, Opts(2));
  const RankWeights& r = w.per_pp_rank[0];
  EXPECT_EQ(r.embedding_bytes, (50304 / 2 * 512 + 2050 * 1024 + 2 * 512 * 1024) * 2);
  EXPECT_EQ(r.lm_head_bytes, 0);  // tied: the LM head is embed_tokens
  EXPECT_EQ(r.norm_bytes, 24 * 2 * 2 * 1024 * 2);  // per-layer LayerNorms only
  EXPECT_EQ(r.attention_bytes, 24 * ((1024 * 1536 + 1536) + (512 * 1024 + 1024)) * 2);
  EXPECT_EQ(r.mlp_bytes, 24 * ((1024 * 2048 + 2048) + (2048 * 1024 + 1024)) * 2);
  EXPECT_EQ(r.buffer_bytes, 0);

  // PP 2: OPTDecoder builds the embedding side and the final norm on every rank.
  const WeightBreakdown p = ComputeWeights(s, Opts(1, 2));
  ASSERT_EQ(p.per_pp_rank.size(), 2u);
  for (const RankWeights& rank : p.per_pp_rank) {
    EXPECT_EQ(rank.embedding_bytes, (50304 * 768 + 2050 * 768) * 2);
    EXPECT_EQ(rank.lm_head_bytes, 0);
  }
  EXPECT_EQ(p.per_pp_rank[0].norm_bytes, p.per_pp_rank[1].norm_bytes);
  // An untied OPT keeps a ParallelLMHead of the embedding's width.
  const ModelSpec untied =
      ModelSpec::FromHfConfigText(With(kOpt350m, "word_embed_proj_dim", "512, \"tie_word_embeddings\": false"));
  EXPECT_EQ(NumParameters(untied), 331196416 + 50272 * 512);
  EXPECT_EQ(ComputeWeights(untied, Opts(2)).per_pp_rank[0].lm_head_bytes, 50304 / 2 * 512 * 2);
  // enable_bias false drops every linear bias (OPTAttention / fc1 / fc2 bias=config.enable_bias).
  const ModelSpec nobias = ModelSpec::FromHfConfigText(With(kOpt125m, "enable_bias", "false"));
  EXPECT_EQ(NumParameters(nobias), 125239296 - 12 * (2304 + 768 + 3072 + 768));
}

// Published counts (Hugging Face safetensors metadata, BF16): Phi-3-mini-4k-instruct 3,821,079,552;
// phi-4 14,659,507,200 (model.safetensors.index.json total_size 29,319,014,400 bytes / 2);
// Phi-4-mini-instruct 3,836,021,760 (tied embeddings counted once).
TEST(ModelFamilies, Phi3PublishedCountsRopeAndWindow) {
  const ModelSpec mini = ModelSpec::FromHfConfigText(kPhi3Mini4k);
  EXPECT_EQ(NumParameters(mini), 3821079552);
  // vLLM's LlamaAttention takes cache_config.sliding_window (the config's) on every layer when
  // the config has no layer_types.
  EXPECT_EQ(mini.CountLayers(AttentionKind::kSlidingWindow), 32);
  EXPECT_EQ(mini.layers[0].sliding_window_tokens, 2047);
  const ModelSpec phi4 = ModelSpec::FromHfConfigText(kPhi4);
  EXPECT_EQ(NumParameters(phi4), 14659507200);
  EXPECT_EQ(NumParameters(phi4) * 2, 29319014400);
  EXPECT_EQ(phi4.CountLayers(AttentionKind::kFull), 40);
  // Plain rope: a 16384 x 128 cache (bf16).
  EXPECT_EQ(ComputeWeights(phi4, Opts()).per_pp_rank[0].buffer_bytes, 16384 * 128 * 2);

  const ModelSpec four_mini = ModelSpec::FromHfConfigText(kPhi4Mini);
  EXPECT_TRUE(four_mini.tie_word_embeddings);
  EXPECT_EQ(NumParameters(four_mini), 3836021760);
  // longrope: Phi3LongRoPEScaledRotaryEmbedding holds the short (4096 rows) and long (131072
  // rows) caches, each rotary_dim = 0.75 x 128 = 96 wide, in the model dtype.
  EXPECT_EQ(four_mini.traits.short_rope_cache_positions, 4096);
  EXPECT_EQ(four_mini.traits.rope_cache_positions, 131072);
  EXPECT_EQ(ComputeWeights(four_mini, Opts()).per_pp_rank[0].buffer_bytes, (4096 + 131072) * 96 * 2);
  // "su" is longrope's older name (vLLM renames it); the original length may sit in the dict.
  const ModelSpec su = ModelSpec::FromHfConfigText(
      With(kPhi4Mini, "rope_scaling", R"({"type": "su", "original_max_position_embeddings": 8192})"));
  EXPECT_EQ(su.traits.short_rope_cache_positions, 8192);
  ExpectInvalidArgument(
      [] {
        ModelSpec::FromHfConfigText(With(With(kPhi4Mini, "original_max_position_embeddings", "null"), "rope_scaling",
                                         R"({"type": "longrope"})"));
      },
      "original_max_position_embeddings");
}

// The language model of Qwen3.5/3.6-35B-A3B: 34,660,610,688 parameters, the Hugging Face Hub's
// GGUF metadata total for its qwen35moe GGUF (language model only: no vision tower, no MTP
// layer; llama.cpp prints the same n_params for Qwen3.6-35B-A3B-Q4_K_M.gguf). By hand:
// embeddings 2 x 248320 x 2048; 10 attention layers [q+gate 2x16x256, k/v 2x2x256 from 2048,
// o 4096x2048, q/k norms 512]; 30 gated-DeltaNet layers [qkvz 2048x(2x2048+2x4096), ba 2048x64,
// conv 8192x4, dt_bias + A_log 64, norm 128, out 4096x2048]; 40 MoE blocks [256 x 3 x 2048 x 512,
// router 2048x256, shared expert 3 x 2048 x 512, its gate 2048]; 2 norms per layer; final norm.
TEST(ModelFamilies, Qwen35MoePublishedCount) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kQwen35Moe);
  ASSERT_TRUE(s.hybrid.has_value());
  ASSERT_TRUE(s.moe.has_value());
  EXPECT_EQ(s.model_type, "qwen3_5_moe_text");
  EXPECT_EQ(s.hybrid->num_attention_layers, 10);
  EXPECT_EQ(s.hybrid->num_state_layers, 30);
  EXPECT_EQ(s.layers[3].attention, AttentionKind::kFull);
  EXPECT_TRUE(s.moe->shared_expert_gate);
  const int64_t attention = 2048 * (2 * 16 * 256 + 2 * 2 * 256) + 4096 * 2048 + 512;
  const int64_t gdn = 2048 * 12288 + 2048 * 64 + 8192 * 4 + 64 + 128 + 4096 * 2048;
  const int64_t moe = 256 * 3 * 2048 * 512 + 2048 * 256 + 3 * 2048 * 512 + 2048;
  ASSERT_TRUE(s.vision.has_value());
  const int64_t language_model = NumParameters(s) - VisionEncoderParameters(*s.vision);
  EXPECT_EQ(language_model, 2 * 248320 * 2048 + 10 * attention + 30 * gdn + 40 * (moe + 2 * 2048) + 2048);
  EXPECT_EQ(language_model, 34660610688);
  // vllm qwen3_5.py builds qwen3_vl.py's Qwen3_VisionTransformer: Conv3d (with bias), the
  // 2304-row position table, 27 blocks [LayerNorms 4 x 1152, qkv / proj / fc1 / fc2 with biases],
  // the patch merger [LayerNorm over 1152, fc1 4608^2, fc2 4608 -> 2048, biases]; no DeepStack.
  const int64_t h = 1152;
  const int64_t block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * 4304 + 4304) + (4304 * h + h);
  const int64_t merger = 2 * h + (4608LL * 4608 + 4608) + (4608LL * 2048 + 2048);
  EXPECT_EQ(VisionEncoderParameters(*s.vision), (h * 3 * 2 * 16 * 16 + h) + 2304 * h + 27 * block + merger);
  // The checkpoint also holds the MTP layer vLLM skips (skip_prefixes ["mtp."]): fc 2h -> h, two
  // pre-fc norms, one gated-attention MoE layer with its two norms, the final norm. With it, the
  // Hub's safetensors total of Qwen/Qwen3.5-35B-A3B and Qwen/Qwen3.6-35B-A3B (BF16), 35,951,822,704
  // (code-index ids 55778153074, 71142266638).
  const int64_t mtp = 2 * 2048 * 2048 + 2 * 2048 + attention + moe + 2 * 2048 + 2048;
  EXPECT_EQ(NumParameters(s) + mtp, 35951822704);
  // Both the tower and vLLM's profile run of it have rules: no caveat.
  EXPECT_TRUE(s.caveats.empty());
}

// Item 3 of issue 20: each malformed field is refused by name instead of read as absent.
TEST(ModelFamilies, MalformedFieldsAreRefusedByName) {
  const std::string llama = R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 8, "vocab_size": 10, "max_position_embeddings": 128})";
  auto read = [](const std::string& text) { return [text] { ModelSpec::FromHfConfigText(text); }; };
  ExpectInvalidArgument(read(With(llama, "architectures", "\"LlamaForCausalLM\"")), "architectures");
  ExpectInvalidArgument(read(With(llama, "architectures", "[1, 2]")), "architectures");
  ExpectInvalidArgument(read(With(llama, "rope_scaling", "\"linear\"")), "rope_scaling");
  ExpectInvalidArgument(read(With(llama, "rope_scaling", R"({"rope_type": "fancy", "factor": 2.0})")),
                        "rope_scaling.rope_type");
  ExpectInvalidArgument(read(With(llama, "partial_rotary_factor", "\"0.5\"")), "partial_rotary_factor");
  ExpectInvalidArgument(read(With(llama, "max_position_embeddings", "0")), "max_position_embeddings");
  ExpectInvalidArgument(read(R"({"model_type": "gemma3", "text_config": "gemma3_text"})"), "text_config");
  ExpectInvalidArgument(read(R"({"model_type": "gemma3", "text_config": [{"model_type": "gemma3_text"}]})"),
                        "text_config");
  const std::string moe = With(With(llama, "num_experts_per_tok", "2"), "model_type", "\"qwen3_moe\"");
  ExpectInvalidArgument(read(With(moe, "num_experts", "-8")), "num_experts");
  ExpectInvalidArgument(read(With(With(moe, "num_experts", "8"), "mlp_only_layers", "\"0,1\"")), "mlp_only_layers");
  ExpectInvalidArgument(
      read(With(llama, "quantization_config",
                R"({"quant_method": "compressed-tensors", "config_groups": [{"weights": {"num_bits": 4}}]})")),
      "quantization_config.config_groups");
  // What vLLM accepts still reads: known rope types, the old "type" key, null fields.
  EXPECT_NO_THROW(ModelSpec::FromHfConfigText(With(llama, "rope_scaling", R"({"type": "dynamic", "factor": 2.0})")));
  EXPECT_NO_THROW(ModelSpec::FromHfConfigText(With(llama, "rope_scaling", "null")));
  EXPECT_NO_THROW(ModelSpec::FromHfConfigText(With(llama, "architectures", "null")));
  EXPECT_NO_THROW(ModelSpec::FromHfConfigText(With(moe, "num_experts", "0")));  // dense (Granite writes 0)
  // An empty --kv-cache-dtype is not "auto" (vLLM's choices refuse it).
  ExpectInvalidArgument([] { ResolveKvCacheDType("", DType::kBFloat16, "kv_cache_dtype"); }, "kv_cache_dtype");
  EXPECT_EQ(ResolveKvCacheDType("auto", DType::kBFloat16, "kv_cache_dtype").element_size_bytes, 2);
}

// The traits table is data the readers trust: every entry belongs to a supported family.
TEST(ModelFamilies, TraitsBelongToSupportedFamilies) {
  for (const char* type : {"opt", "phi3", "qwen3_5_moe", "qwen3_5_moe_text", "mamba", "falcon_mamba", "lfm2",
                           "qwen3_vl_text", "qwen3_vl_moe_text", "exaone4", "internlm2", "nemotron", "ernie4_5",
                           "ernie4_5_moe", "seed_oss", "starcoder2", "gpt_bigcode", "minimax_m2", "hunyuan_v1_dense",
                           "hunyuan_v1_moe", "deepseek_v32", "gemma3n", "gemma3n_text"}) {
    EXPECT_EQ(ClassifyModelType(type).support, ModelSupport::kSupported) << type;
    const JsonValue* traits = FamilyTraits(type);
    ASSERT_NE(traits, nullptr) << type;
    EXPECT_NE(traits->Find("source"), nullptr) << type;
  }
  // Families vLLM serves but whose memory vllm_mem cannot size stay refused by name.
  EXPECT_EQ(ClassifyModelType("bart").support, ModelSupport::kNotModelled);
  // Llama's and Mistral's sizing rules are the readers' defaults (no sizing trait); their entries
  // hold only how vLLM's LoRA manager wraps them (plan/lora_estimate.h).
  for (const char* type : {"llama", "mistral"}) {
    const JsonValue* traits = FamilyTraits(type);
    ASSERT_NE(traits, nullptr) << type;
    for (const auto& [key, value] : traits->AsObject()) {
      EXPECT_TRUE(key == "source" || key.starts_with("lora_")) << type << ": " << key;
    }
  }
  EXPECT_EQ(FamilyTraits("_about"), nullptr);
}

}  // namespace vllm_mem
