// Weight counting: published parameter counts of real checkpoints, and per-rank bytes checked
// against shapes worked out by hand in each test (not against earlier outputs).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"
#include "expect_invalid_argument.h"
#include "bundled_config.h"

namespace vllm_mem {
namespace {

using testing::ExpectInvalidArgument;

ModelSpec Bundled(const std::string& id) {
  std::string file = id;
  file.replace(file.find('/'), 1, "--");
  return testing::BundledModel(file + ".json");
}

WeightOptions Opts(int64_t tp = 1, int64_t pp = 1, std::string dtype = "auto", std::string quant = "") {
  WeightOptions o;
  o.tensor_parallel_size = tp;
  o.pipeline_parallel_size = pp;
  o.dtype = std::move(dtype);
  o.quantization = std::move(quant);
  return o;
}

// A small Llama-style model whose every tensor is easy to write down.
// H=64, 8 heads x 8, 2 KV heads, I=128, vocab 1000 (padded to 1024), 4 layers, no rope cache.
// \p extra adds fields; \p dtype and \p intermediate override (configs may not repeat a key).
std::string TinyLlama(const std::string& extra = "", const std::string& dtype = "bfloat16",
                      int intermediate = 128) {
  return R"({"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 64,
    "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": )" +
         std::to_string(intermediate) + R"(, "vocab_size": 1000, "torch_dtype": ")" + dtype +
         R"(", "tie_word_embeddings": false)" + extra + "}";
}

}  // namespace

// Published counts (model cards / safetensors metadata of the real checkpoints).
TEST(Weights, PublishedParameterCounts) {
  EXPECT_EQ(NumParameters(Bundled("meta-llama/Llama-3.1-8B-Instruct")), 8030261248);
  EXPECT_EQ(NumParameters(Bundled("meta-llama/Llama-3.1-70B-Instruct")), 70553706496);
  EXPECT_EQ(NumParameters(Bundled("Qwen/Qwen2.5-7B-Instruct")), 7615616512);
  EXPECT_EQ(NumParameters(Bundled("microsoft/phi-2")), 2779683840);
  EXPECT_EQ(NumParameters(Bundled("mistralai/Mixtral-8x7B-Instruct-v0.1")), 46702792704);
  // DeepSeek-V3: "671B total parameters" (the main model; the MTP layer vLLM does not load for
  // the main model is not counted). Published rounded, so within 0.5B.
  EXPECT_NEAR(static_cast<double>(NumParameters(Bundled("deepseek-ai/DeepSeek-V3"))), 671e9, 0.5e9);
}

TEST(Weights, TinyModelTensorByTensor) {
  ModelSpec s = ModelSpec::FromHfConfigText(TinyLlama());
  const int64_t h = 64, hd = 8, inter = 128, layers = 4;
  const int64_t attn = h * (8 + 2 * 2) * hd + 8 * hd * h;
  const int64_t mlp = 3 * h * inter;
  EXPECT_EQ(NumParameters(s), 2 * 1000 * h + layers * (attn + mlp + 2 * h) + h);

  WeightBreakdown b = ComputeWeights(s, Opts());
  ASSERT_EQ(b.per_pp_rank.size(), 1u);
  const RankWeights& r = b.per_pp_rank[0];
  EXPECT_EQ(r.embedding_bytes, 1024 * h * 2);  // vocab padded to a multiple of 64
  EXPECT_EQ(r.lm_head_bytes, 1024 * h * 2);
  EXPECT_EQ(r.attention_bytes, layers * attn * 2);
  EXPECT_EQ(r.mlp_bytes, layers * mlp * 2);
  EXPECT_EQ(r.norm_bytes, (layers * 2 * h + h) * 2);
  EXPECT_EQ(r.buffer_bytes, 0);  // no max_position_embeddings: no rope cache rows
  EXPECT_EQ(r.total_bytes, b.fullest_rank_bytes);
  EXPECT_EQ(b.dtype, "bfloat16");
}

TEST(Weights, TensorParallelSplitsAndReplicatesKvHeads) {
  ModelSpec s = ModelSpec::FromHfConfigText(TinyLlama());
  const int64_t h = 64, hd = 8;
  // tp 4 > 2 KV heads: each rank keeps one KV head (replicated), 2 query heads.
  const RankWeights r = ComputeWeights(s, Opts(4)).per_pp_rank[0];
  EXPECT_EQ(r.attention_bytes, 4 * (h * (2 + 2 * 1) * hd + 2 * hd * h) * 2);
  EXPECT_EQ(r.mlp_bytes, 4 * (3 * h * (128 / 4)) * 2);
  EXPECT_EQ(r.embedding_bytes, (1024 / 4) * h * 2);
  EXPECT_EQ(r.norm_bytes, (4 * 2 * h + h) * 2);  // norms are replicated
}

TEST(Weights, PipelineRanksSplitLayersAndEnds) {
  ModelSpec s = ModelSpec::FromHfConfigText(TinyLlama(R"(, "max_position_embeddings": 32)"));
  WeightBreakdown one = ComputeWeights(s, Opts());
  WeightBreakdown two = ComputeWeights(s, Opts(1, 2));
  ASSERT_EQ(two.per_pp_rank.size(), 2u);
  const RankWeights &a = two.per_pp_rank[0], &z = two.per_pp_rank[1];
  EXPECT_GT(a.embedding_bytes, 0);
  EXPECT_EQ(a.lm_head_bytes, 0);
  EXPECT_EQ(z.embedding_bytes, 0);
  EXPECT_GT(z.lm_head_bytes, 0);
  EXPECT_EQ(a.first_layer, 0);
  EXPECT_EQ(a.end_layer, 2);
  EXPECT_EQ(z.end_layer, 4);
  EXPECT_EQ(a.attention_bytes + z.attention_bytes, one.per_pp_rank[0].attention_bytes);
  EXPECT_EQ(a.mlp_bytes + z.mlp_bytes, one.per_pp_rank[0].mlp_bytes);
  // Every rank builds its own rotary cache (32 positions x head_dim 8, bf16).
  EXPECT_EQ(a.buffer_bytes, 32 * 8 * 2);
  EXPECT_EQ(z.buffer_bytes, 32 * 8 * 2);
  EXPECT_EQ(two.fullest_rank_bytes, std::max(a.total_bytes, z.total_bytes));
}

TEST(Weights, TiedEmbeddingsOnOneRankAndAcrossPipeline) {
  ModelSpec s = ModelSpec::FromHfConfigText(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 8, "vocab_size": 128, "intermediate_size": 128,
    "torch_dtype": "float16", "tie_word_embeddings": true})");
  const RankWeights single = ComputeWeights(s, Opts()).per_pp_rank[0];
  EXPECT_EQ(single.lm_head_bytes, 0);  // one tensor serves both
  WeightBreakdown pp = ComputeWeights(s, Opts(1, 2));
  EXPECT_EQ(pp.per_pp_rank[1].lm_head_bytes, single.embedding_bytes);  // the last rank's own copy
  EXPECT_EQ(NumParameters(s), 128 * 64 + 2 * (64 * 64 * 3 + 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64);
}

TEST(Weights, DtypeResolution) {
  ModelSpec s = ModelSpec::FromHfConfigText(TinyLlama());
  const int64_t bf16 = WeightBytes(s, Opts());
  EXPECT_EQ(WeightBytes(s, Opts(1, 1, "float32")), 2 * bf16);
  EXPECT_EQ(WeightBytes(s, Opts(1, 1, "half")), bf16);
  ModelSpec fp32 = ModelSpec::FromHfConfigText(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 8, "vocab_size": 128, "torch_dtype": "float32"})");
  EXPECT_EQ(ComputeWeights(fp32, Opts()).dtype, "bfloat16");  // vLLM serves fp32 as bf16
  ExpectInvalidArgument([&] { WeightBytes(s, Opts(1, 1, "int3")); }, "dtype");
}

TEST(Weights, OnlineFp8HalvesLinearLayersOnly) {
  ModelSpec s = ModelSpec::FromHfConfigText(TinyLlama());
  const RankWeights bf16 = ComputeWeights(s, Opts()).per_pp_rank[0];
  const WeightBreakdown fp8 = ComputeWeights(s, Opts(1, 1, "auto", "fp8"));
  const RankWeights& r = fp8.per_pp_rank[0];
  EXPECT_EQ(fp8.quantization, "fp8");
  EXPECT_EQ(r.attention_bytes * 2, bf16.attention_bytes);
  EXPECT_EQ(r.mlp_bytes * 2, bf16.mlp_bytes);
  EXPECT_EQ(r.embedding_bytes, bf16.embedding_bytes);
  EXPECT_EQ(r.lm_head_bytes, bf16.lm_head_bytes);
  EXPECT_EQ(r.norm_bytes, bf16.norm_bytes);
  // One float32 scale per linear layer (qkv, o, gate_up, down) per decoder layer.
  EXPECT_EQ(r.quantization_overhead_bytes, 4 * 4 * 4);
}

TEST(Weights, AwqStorage) {
  ModelSpec s = ModelSpec::FromHfConfigText(TinyLlama(R"(,
    "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": true})",
    "float16"));
  const RankWeights r = ComputeWeights(s, Opts()).per_pp_rank[0];
  const int64_t h = 64;
  // Per linear: in*out/2 packed bytes; (in/32)*out fp16 scales; (in/32)*out/2 packed zeros.
  auto overhead = [](int64_t in, int64_t out) { return (in / 32) * out * 2 + (in / 32) * out / 2; };
  EXPECT_EQ(r.attention_bytes, 4 * (h * 96 / 2 + h * h / 2));
  EXPECT_EQ(r.mlp_bytes, 4 * (h * 256 / 2 + 128 * h / 2));
  EXPECT_EQ(r.quantization_overhead_bytes,
            4 * (overhead(h, 96) + overhead(h, h) + overhead(h, 256) + overhead(128, h)));
  EXPECT_EQ(r.embedding_bytes, 1024 * h * 2);  // embeddings stay fp16
}

TEST(Weights, QuantizationOptionErrors) {
  ModelSpec plain = ModelSpec::FromHfConfigText(TinyLlama());
  ExpectInvalidArgument([&] { WeightBytes(plain, Opts(1, 1, "auto", "int2-magic")); }, "quantization");
  ExpectInvalidArgument([&] { WeightBytes(plain, Opts(1, 1, "auto", "awq")); }, "quantization");
  ModelSpec awq = ModelSpec::FromHfConfigText(TinyLlama(R"(, "quantization_config": {"quant_method": "awq"})"));
  ExpectInvalidArgument([&] { WeightBytes(awq, Opts(1, 1, "auto", "fp8")); }, "quantization");
  EXPECT_EQ(WeightBytes(awq, Opts(1, 1, "auto", "awq_marlin")), WeightBytes(awq, Opts()));
  ExpectInvalidArgument([] { ModelSpec::FromHfConfigText(TinyLlama(R"(, "quantization_config": {"quant_method": "qqq9"})")); },
                "quantization_config.quant_method");
}

TEST(Weights, ParallelLayoutErrors) {
  ModelSpec s = ModelSpec::FromHfConfigText(TinyLlama());
  ExpectInvalidArgument([&] { WeightBytes(s, Opts(3)); }, "tensor_parallel_size");  // 8 heads
  ExpectInvalidArgument([&] { WeightBytes(s, Opts(0)); }, "tensor_parallel_size");
  ExpectInvalidArgument([&] { WeightBytes(s, Opts(1, 5)); }, "pipeline_parallel_size");  // 4 layers
  ModelSpec odd = ModelSpec::FromHfConfigText(TinyLlama("", "bfloat16", 100));
  ExpectInvalidArgument([&] { WeightBytes(odd, Opts(8)); }, "tensor_parallel_size");
}

TEST(Weights, OverflowIsAnError) {
  // Every dimension within the bounds of vllm_mem/base/limits.h, and still 3 * 2^62 parameters
  // per layer: each product is checked, not the result.
  ModelSpec s = ModelSpec::FromHfConfigText(R"({"model_type": "llama", "num_hidden_layers": 16384, "hidden_size": 4194304,
    "num_attention_heads": 64, "vocab_size": 67108864, "intermediate_size": 16777216,
    "num_local_experts": 65536, "num_experts_per_tok": 1})");
  EXPECT_THROW(NumParameters(s), InvalidArgument);
  EXPECT_THROW(WeightBytes(s, Opts()), InvalidArgument);
}

TEST(Weights, MoeExpertsRouterAndSharedExperts) {
  // Qwen2-MoE style: 4 experts of 32, a shared expert of 64 with its sigmoid gate.
  ModelSpec s = ModelSpec::FromHfConfigText(R"({"model_type": "qwen2_moe", "num_hidden_layers": 2,
    "hidden_size": 64, "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 128,
    "vocab_size": 128, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 64, "torch_dtype": "bfloat16"})");
  const int64_t h = 64;
  const int64_t attn = h * 3 * h + 3 * h + h * h;  // Qwen2: q/k/v biases
  const int64_t moe = 4 * 3 * h * 32 + h * 4 + 3 * h * 64 + h;
  EXPECT_EQ(NumParameters(s), 2 * 128 * h + 2 * (attn + moe + 2 * h) + h);
  const RankWeights r = ComputeWeights(s, Opts(2)).per_pp_rank[0];
  // Experts and the shared expert split over TP; router and shared gate replicated.
  EXPECT_EQ(r.mlp_bytes, 2 * (4 * 3 * h * 16 + h * 4 + 3 * h * 32 + h) * 2);
  ModelSpec odd = ModelSpec::FromHfConfigText(R"({"model_type": "llama", "num_hidden_layers": 1, "hidden_size": 64,
    "num_attention_heads": 8, "intermediate_size": 128, "vocab_size": 128, "num_local_experts": 4,
    "num_experts_per_tok": 2, "moe_intermediate_size": 36})");
  ExpectInvalidArgument([&] { WeightBytes(odd, Opts(8)); }, "tensor_parallel_size");  // 36 experts' width / 8
}

TEST(Weights, MlaProjections) {
  ModelSpec s = ModelSpec::FromHfConfigText(R"({"model_type": "deepseek_v3", "num_hidden_layers": 1,
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 96,
    "vocab_size": 128, "kv_lora_rank": 16, "q_lora_rank": 24, "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4, "v_head_dim": 8, "torch_dtype": "bfloat16"})");
  const int64_t h = 64;
  const int64_t attn = h * 24 + 24 + 24 * 4 * 12 + h * (16 + 4) + 16 + 16 * 4 * (8 + 8) + 4 * 8 * h;
  EXPECT_EQ(NumParameters(s), 2 * 128 * h + attn + 3 * h * 96 + 2 * h + h);
  // TP 2: q_a / kv_a replicated, q_b / kv_b / o split over heads.
  const RankWeights r = ComputeWeights(s, Opts(2)).per_pp_rank[0];
  EXPECT_EQ(r.attention_bytes, (h * 24 + 24 + 24 * 2 * 12 + h * 20 + 16 + 16 * 2 * 16 + 2 * 8 * h) * 2);
}

TEST(Weights, CheckpointQuantizationSchemes) {
  ModelSpec ct = Bundled("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8");
  ASSERT_TRUE(ct.quantization.has_value());
  EXPECT_EQ(ct.quantization->weight_bits, 8);
  EXPECT_TRUE(ct.quantization->per_tensor_scale);
  ModelSpec block = ModelSpec::FromHfConfigText(TinyLlama(
      R"(, "quantization_config": {"quant_method": "fp8", "weight_block_size": [32, 32]})"));
  const RankWeights r = ComputeWeights(block, Opts()).per_pp_rank[0];
  // float32 scale per 32x32 block: qkv 64->96: 3x2, o 64->64: 2x2, gate_up 64->256: 8x2, down 128->64: 2x4.
  EXPECT_EQ(r.quantization_overhead_bytes, 4 * (6 + 4 + 16 + 8) * 4);
  ModelSpec mxfp4 = ModelSpec::FromHfConfigText(TinyLlama(R"(, "quantization_config": {"quant_method": "mxfp4"})"));
  // mxfp4 quantizes experts only: a dense model keeps bf16 linears.
  EXPECT_EQ(ComputeWeights(mxfp4, Opts()).per_pp_rank[0].attention_bytes,
            ComputeWeights(ModelSpec::FromHfConfigText(TinyLlama()), Opts()).per_pp_rank[0].attention_bytes);
}

TEST(Weights, RotaryCacheRowsAndWidth) {
  // Phi: partial rotary factor; yarn: original positions x factor.
  ModelSpec phi = ModelSpec::FromHfConfigText(R"({"model_type": "phi", "num_hidden_layers": 1,
    "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 128, "intermediate_size": 256,
    "max_position_embeddings": 100, "partial_rotary_factor": 0.5, "torch_dtype": "float16"})");
  EXPECT_EQ(ComputeWeights(phi, Opts()).per_pp_rank[0].buffer_bytes, 100 * 8 * 2);
  ModelSpec yarn = ModelSpec::FromHfConfigText(TinyLlama(R"(, "max_position_embeddings": 400,
    "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 100})"));
  EXPECT_EQ(ComputeWeights(yarn, Opts(1, 1, "float32")).per_pp_rank[0].buffer_bytes, 400 * 8 * 4);
}

// Multimodal rope (a rope dict with mrope_section: Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5): vLLM's
// get_rope builds an MRotaryEmbedding, whose cos/sin table holds 4 x max_position_embeddings rows
// (rotary_embedding/mrope.py cache_max_position_num); the length vLLM derives stays 100.
TEST(Weights, MultimodalRopeTableHasFourTimesTheRows) {
  for (const char* rope : {R"("rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]})",
                           R"("rope_parameters": {"rope_type": "default", "mrope_section": [1, 1, 2]})"}) {
    const ModelSpec s =
        ModelSpec::FromHfConfigText(TinyLlama(std::string(R"(, "max_position_embeddings": 100, )") + rope));
    EXPECT_EQ(s.traits.rope_cache_positions, 100);
    EXPECT_EQ(ComputeWeights(s, Opts(1, 1, "float32")).per_pp_rank[0].buffer_bytes, 4 * 100 * 8 * 4) << rope;
  }
}


// openai/gpt-oss-20b (python/vllm_mem/configs/openai--gpt-oss-20b.json).
TEST(Weights, Mxfp4ExpertPaddingPerBackend) {
  const ModelSpec s = ModelSpec::FromHfConfigText(R"JSON({"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "num_hidden_layers": 24, "hidden_size": 2880, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "vocab_size": 201088, "max_position_embeddings": 131072, "num_local_experts": 32, "num_experts_per_tok": 4, "experts_per_token": 4, "attention_bias": true, "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], "tie_word_embeddings": false, "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"}, "rope_theta": 150000, "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false}, "swiglu_limit": 7.0}
)JSON");
  auto with = [&](const char* backend, int64_t tp) {
    WeightOptions o;
    o.tensor_parallel_size = tp;
    o.mxfp4_backend = backend;
    return ComputeWeights(s, o);
  };
  // Creation (mxfp4_round_up_hidden_size_and_intermediate_size): triton rounds the per-rank
  // intermediate size up to 64 (2880 = 45 x 64, no pad at TP1); marlin pads intermediate to 128
  // (2944) and hidden to 256 (3072). Per expert:
  //   triton: w13 5760 x 2880 + w2 2880 x 2880 = 24,883,200 elements
  //   marlin: w13 5888 x 3072 + w2 3072 x 2944 = 27,131,904 elements (+2,248,704)
  // each element 1/2 byte + 1/32 byte of e8m0 scale: +1,124,352 + 70,272 B; bf16 biases
  // (2I + H): +(128 + 192) x 2 = 640 B. 24 layers x 32 experts x 1,195,264 B = 917,962,752 B.
  // Marlin repacks in place (marlin_utils_fp4.py prepare_moe_mxfp4_layer_for_marlin), so that is
  // all it holds after loading; triton then holds more per layer (oracle/mxfp4.py, triton_kernels
  // hopper_value.py / hopper_scale.py in the 0.19 wheel):
  //   values, (K/2, N) storage padded to 64 x 64: w13 1440 -> 1472 x 5760, w2 1440 -> 1472 x 2880:
  //     32 x 32 x (5760 + 2880) = 8,847,360 B more;
  //   float32 biases instead of bf16: 32 x (5760 + 2880) x 2 = 552,960 B more;
  //   a swizzled scale copy, rows to 256: 32 x (5888 + 3072) x 90 = 25,804,800 B.
  const int64_t triton_after_loading = int64_t{24} * (8847360 + 552960 + 25804800);
  const WeightBreakdown triton = with("triton", 1);
  const WeightBreakdown marlin = with("marlin", 1);
  EXPECT_EQ(marlin.fullest_rank_bytes - triton.fullest_rank_bytes, int64_t{24} * 32 * 1195264 - triton_after_loading);
  EXPECT_EQ(marlin.per_pp_rank[0].quantization_overhead_bytes - triton.per_pp_rank[0].quantization_overhead_bytes,
            int64_t{24} * 32 * 70272 - int64_t{24} * 25804800);
  // flashinfer_trtllm (B200): both to 256 (I 3072, H 3072), float32 biases, shuffled in place;
  // marlin's experts as created: w13 5888 x 3072, w2 3072 x 2944, bf16 biases.
  auto experts = [](const WeightBreakdown& w) {
    return w.per_pp_rank[0].mlp_bytes + w.per_pp_rank[0].quantization_overhead_bytes;
  };
  const int64_t trtllm_layer =
      int64_t{32} * ((6144 * 1536 + 3072 * 1536) + (6144 * 96 + 3072 * 96) + (6144 + 3072) * 4);
  const int64_t marlin_layer =
      int64_t{32} * ((5888 * 1536 + 3072 * 1472) + (5888 * 96 + 3072 * 92) + (5888 + 3072) * 2);
  EXPECT_EQ(experts(with("flashinfer_trtllm", 1)) - experts(marlin), 24 * (trtllm_layer - marlin_layer));
  // What no checkpoint holds (CheckpointShare leaves it out of a header share): triton's additions.
  EXPECT_EQ(triton.per_pp_rank[0].kernel_layout_bytes, triton_after_loading);
  EXPECT_EQ(marlin.per_pp_rank[0].kernel_layout_bytes, 0);
  // Releases before 0.17 vendor a value layout padded only to the mma tile (N to 16, K bytes to
  // 32): w13 and w2 keep their 1440 bytes of K, 32 x 32 x (5760 + 2880) B less per layer.
  WeightOptions tile_only;
  tile_only.mxfp4_hopper_value_align = 0;
  EXPECT_EQ(triton.fullest_rank_bytes - ComputeWeights(s, tile_only).fullest_rank_bytes, int64_t{24} * 8847360);
  tile_only.mxfp4_hopper_value_align = 32;
  EXPECT_THROW(ComputeWeights(s, tile_only), InvalidArgument);
  // TP2 on triton: 1440 per rank rounds up to 1472 (23 x 64). Per expert after loading:
  //   w13 (N 2944, K 2880): values 1472 x 2944 + scales 2944 x 90 + copy 3072 x 90 + fp32 bias 2944 x 4
  //   w2 (N 2880, K 1472):  values 768 x 2880 + scales 2880 x 46 + copy 3072 x 46 + fp32 bias 2880 x 4
  // = 7,383,936 B. flashinfer_cutlass pads 1440 -> 1536 and 2880 -> 2944 (128) and keeps the
  // creation layout with bf16 biases: w13 (N 3072, K 2944) 3072 x (1472 + 92 + 2), w2 (N 2944,
  // K 1536) 2944 x (768 + 48 + 2) = 7,218,944 B. Before the layout was modelled triton was the
  // smaller of the two; after loading it holds 24 x 32 x 164,992 B more.
  const WeightBreakdown tp2 = with("triton", 2);
  const WeightBreakdown tp2_flashinfer = with("flashinfer_cutlass", 2);
  EXPECT_EQ(tp2.fullest_rank_bytes - tp2_flashinfer.fullest_rank_bytes, int64_t{24} * 32 * (7383936 - 7218944));
  // Unquantized parts stay bf16: attention (with biases and sinks), router, embeddings.
  EXPECT_EQ(triton.per_pp_rank[0].embedding_bytes, int64_t{201088} * 2880 * 2);  // 201088 = 3142 x 64
  // The parameter count is the checkpoint's, padding excluded: 20,914,757,184 (model card: 21B).
  EXPECT_EQ(triton.num_parameters, marlin.num_parameters);
  WeightOptions bad;
  bad.mxfp4_backend = "cutlass9000";
  EXPECT_THROW(ComputeWeights(s, bad), InvalidArgument);
  // A non-mxfp4 model ignores the backend.
  EXPECT_NO_THROW(ComputeWeights(ModelSpec::FromHfConfigText(TinyLlama()), bad));
}

// Gemma-3n (vLLM gemma3n.py) with every tensor written down: H=64, 4 layers (3 sliding, 1 full), 8 heads x 8
// over 2 KV heads, MatFormer widths [128, 128, 96, 128], vocab 1000 (1024 rows once padded to 64), per-layer
// embeddings 16 wide over 500 rows (512 padded), LAuReL rank 8, 4 AltUp streams, the last layer KV-shared.
TEST(Weights, Gemma3nTensorByTensor) {
  const ModelSpec spec = ModelSpec::FromHfConfigText(R"({"model_type": "gemma3n_text", "num_hidden_layers": 4,
    "hidden_size": 64, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 8,
    "intermediate_size": [128, 128, 96, 128], "vocab_size": 1000, "vocab_size_per_layer_input": 500,
    "hidden_size_per_layer_input": 16, "laurel_rank": 8, "altup_num_inputs": 4, "num_kv_shared_layers": 1,
    "sliding_window": 32, "max_position_embeddings": 128, "torch_dtype": "bfloat16",
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]})");
  const int64_t h = 64;
  const int64_t attention = h * (8 + 2 * 2) * 8 + 8 * 8 * h + 2 * 8;  // qkv_proj, o_proj, q_norm + k_norm
  const int64_t altup = 4 * 4 + 4 * 16 + h * 4 + h + h;  // coefs, modality_router, router_norm, output scale
  const int64_t laurel = 2 * h * 8 + h;                  // linear_left, linear_right, post_laurel_norm
  const int64_t per_layer = 2 * h * 16 + 5 * h;          // per_layer_input_gate / projection, five norms
  int64_t layers = 0;
  for (int64_t width : {128, 128, 96, 128}) layers += attention + 3 * h * width + altup + laurel + per_layer;
  // embed_tokens (the LM head too), the per-layer table, per_layer_model_projection and its norm, three
  // altup_projections and three altup_unembed_projections, the final norm.
  const int64_t model = 1000 * h + 500 * 4 * 16 + h * 4 * 16 + 16 + 2 * 3 * h * h + h;
  EXPECT_EQ(NumParameters(spec), layers + model);
  // bf16, plus 2 more bytes for each float32 correct_output_scale element and the padded rows of both tables.
  const RankWeights r = ComputeWeights(spec, Opts()).per_pp_rank.at(0);
  EXPECT_EQ(r.total_bytes - r.buffer_bytes, (layers + model) * 2 + 4 * h * 2 + 24 * h * 2 + 12 * 4 * 16 * 2);
  // Layer 3 (full) reads layer 4 - 1 - 1 = 2's KV cache (Gemma3nAttention's kv_sharing_target_layer_name).
  EXPECT_FALSE(spec.layers[2].kv_shared);
  EXPECT_TRUE(spec.layers[3].kv_shared);
  EXPECT_EQ(spec.layers[2].intermediate_size, 96);
}

}  // namespace vllm_mem
