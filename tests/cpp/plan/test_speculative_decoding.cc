// Speculative decoding in the plan: every figure below is derived by hand from vLLM's source
// (file named at each test) or published (DeepSeek-V3 README_WEIGHTS.md).
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/model/weights.h"
#include "vllm_mem/plan/speculative_decoding.h"
#include "bundled_config.h"

namespace vllm_mem {
namespace {

std::string ConfigText(const std::string& file) { return testing::BundledConfigText(file); }
ModelSpec Bundled(const std::string& file) { return testing::BundledModel(file); }
const ModelSpec& Llama8B() {
  static const ModelSpec s = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  return s;
}
const ModelSpec& DeepSeekV3() {
  static const ModelSpec s = Bundled("deepseek-ai--DeepSeek-V3.json");
  return s;
}

SpeculativeConfig Eagle3(int64_t k = 3) {
  SpeculativeConfig c;
  c.method = "eagle3";
  c.num_speculative_tokens = k;
  c.draft = Bundled("yuhuili--EAGLE3-LLaMA3.1-Instruct-8B.json");
  ReadSpeculativeConfigFields(ParseJson(ConfigText("yuhuili--EAGLE3-LLaMA3.1-Instruct-8B.json")), false, c);
  return c;
}
SpeculativeConfig Draft1B(int64_t k = 4) {
  SpeculativeConfig c;
  c.method = "draft_model";
  c.num_speculative_tokens = k;
  c.draft = Bundled("meta-llama--Llama-3.2-1B-Instruct.json");
  return c;
}
SpeculativeConfig Mtp(int64_t k = 1) {
  SpeculativeConfig c;
  c.method = "mtp";
  c.num_speculative_tokens = k;
  ReadSpeculativeConfigFields(ParseJson(ConfigText("deepseek-ai--DeepSeek-V3.json")), true, c);
  return c;
}

TEST(SpeculativeDecoding, ReadsTheConfigFields) {
  const SpeculativeConfig e = Eagle3();
  EXPECT_EQ(e.draft_vocab_size, 32000);  // yuhuili/EAGLE3-LLaMA3.1-Instruct-8B config.json
  EXPECT_EQ(e.draft_target_hidden_size, 0);
  EXPECT_EQ(Mtp().target_num_mtp_layers, 1);  // DeepSeek-V3 num_nextn_predict_layers
  SpeculativeConfig c;
  ReadSpeculativeConfigFields(ParseJson(R"({"text_config": {"mtp_num_hidden_layers": 2}})"), true, c);
  EXPECT_EQ(c.target_num_mtp_layers, 2);  // Qwen3-Next / Qwen3.5 spelling, nested
  EXPECT_THROW(ReadSpeculativeConfigFields(ParseJson(R"({"n_predict": -1})"), false, c), InvalidArgument);
  EXPECT_THROW(ReadSpeculativeConfigFields(ParseJson(R"({"draft_vocab_size": "32000"})"), false, c),
               InvalidArgument);
}

TEST(SpeculativeDecoding, MethodNamesAsVllm) {
  EXPECT_EQ(NormalizeSpeculativeMethod("[ngram]"), "ngram");
  EXPECT_EQ(NormalizeSpeculativeMethod("deepseek_mtp"), "mtp");  // deprecated alias -> mtp
  EXPECT_EQ(NormalizeSpeculativeMethod("qwen3_next_mtp"), "mtp");
  EXPECT_EQ(NormalizeSpeculativeMethod(""), "draft_model");
  EXPECT_THROW(NormalizeSpeculativeMethod("medusa"), Unsupported);  // real, not modelled
  try {
    NormalizeSpeculativeMethod("eagle4");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "speculative_config.method");
    EXPECT_NE(std::string(e.what()).find("'eagle4'"), std::string::npos);
  }
}

// vllm/config/speculative.py: each refusal with vLLM's words.
TEST(SpeculativeDecoding, RefusesWhatVllmRefuses) {
  auto message = [](const SpeculativeConfig& c, int64_t tp = 1, int64_t pp = 1,
                    const ModelSpec& target = Llama8B()) -> std::string {
    try {
      ResolveSpeculativeConfig(target, c, tp, pp);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  SpeculativeConfig ngram;
  ngram.method = "ngram";
  EXPECT_NE(message(ngram).find("num_speculative_tokens must be provided with speculative model unless the draft "
                                "model config contains an n_predict parameter."),
            std::string::npos);
  SpeculativeConfig no_k = Eagle3(0);
  EXPECT_NE(message(no_k).find("A speculative model was provided, but `num_speculative_tokens` was not provided"),
            std::string::npos);
  SpeculativeConfig negative = Eagle3(-2);
  EXPECT_NE(message(negative).find("num_speculative_tokens"), std::string::npos);
  SpeculativeConfig no_model;
  no_model.method = "eagle";
  no_model.num_speculative_tokens = 3;
  EXPECT_NE(message(no_model).find("num_speculative_tokens was provided but without speculative model."),
            std::string::npos);
  SpeculativeConfig tp3 = Eagle3();
  tp3.draft_tensor_parallel_size = 2;
  EXPECT_NE(message(tp3, 4).find("speculative_draft_tensor_parallel_size=2 cannot be other value than 1 or target "
                                 "model tensor_parallel_size"),
            std::string::npos);
  // draft_model with another vocabulary (verify_equal_vocab_size_if_draft_model).
  SpeculativeConfig vocab = Draft1B();
  vocab.draft->vocab_size = 32000;
  EXPECT_NE(message(vocab).find("Target and draft model should have the same vocabulary size. Target model "
                                "vocab_size=128256. Draft model vocab_size=32000."),
            std::string::npos);
  // n_predict divisibility (MTP module reuse): 1 MTP layer divides everything; 2 layers and K=3 do not.
  SpeculativeConfig mtp2 = Mtp(3);
  mtp2.target_num_mtp_layers = 2;
  EXPECT_NE(message(mtp2, 1, 1, DeepSeekV3()).find("num_speculative_tokens:3 must be divisible by n_predict=2"),
            std::string::npos);
  // MTP on a model without MTP layers.
  SpeculativeConfig mtp_llama = Mtp();
  mtp_llama.target_num_mtp_layers = 0;
  EXPECT_NE(message(mtp_llama).find("'mtp' needs the target's MTP layers"), std::string::npos);
  EXPECT_THROW(ResolveSpeculativeConfig(Llama8B(), Eagle3(), 1, 2), Unsupported);  // PP not modelled
  SpeculativeConfig ngram_pp;
  ngram_pp.method = "ngram";
  ngram_pp.num_speculative_tokens = 2;
  EXPECT_EQ(ResolveSpeculativeConfig(Llama8B(), ngram_pp, 1, 2).uniform_decode_query_len, 3);  // no drafter to place
  SpeculativeConfig qwen_head = Eagle3();
  qwen_head.draft->model_type = "qwen3";  // not a Llama-architecture head
  EXPECT_THROW(ResolveSpeculativeConfig(Llama8B(), qwen_head, 1, 1), Unsupported);
}

TEST(SpeculativeDecoding, DefaultsAsVllm) {
  const ResolvedSpeculative mtp = ResolveSpeculativeConfig(DeepSeekV3(), Mtp(0), 8, 1);
  EXPECT_EQ(mtp.num_speculative_tokens, 1);  // defaults to n_predict = num_nextn_predict_layers
  EXPECT_EQ(mtp.draft_tensor_parallel_size, 8);  // unset: the target's
  EXPECT_EQ(mtp.uniform_decode_query_len, 2);
  SpeculativeConfig one = Eagle3();
  one.draft_tensor_parallel_size = 1;
  EXPECT_EQ(ResolveSpeculativeConfig(Llama8B(), one, 2, 1).draft_tensor_parallel_size, 1);
}

// llama_eagle3.py, TP 1, bf16 (the draft runs in the target's dtype):
//   layer 0 qkv_proj reads 2H: (32 + 2*8) * 128 * 2 * 4096 = 50,331,648; o_proj 4096 * 4096 = 16,777,216
//   mlp 3 * 4096 * 14336 = 176,160,768; input/post/hidden norms 3 * 4096; final norm 4096
//   fc ReplicatedLinear(3 * 4096, 4096) = 50,331,648; lm_head 32000 (a multiple of 64) * 4096 = 131,072,000
//   embed_tokens: the target's (the checkpoint has none); d2t: 32000 int64 = 256,000 bytes.
//   parameters = 50,331,648 + 16,777,216 + 176,160,768 + 16,384 + 50,331,648 + 131,072,000 = 424,689,664
TEST(SpeculativeDecoding, Eagle3HeadWeights) {
  const SpeculativeConfig c = Eagle3();
  const ResolvedSpeculative r = ResolveSpeculativeConfig(Llama8B(), c, 1, 1);
  const DraftWeights w = ComputeDraftWeights(Llama8B(), c, r, "auto", "");
  EXPECT_EQ(w.num_parameters, 424689664);
  EXPECT_EQ(w.total_bytes, 424689664LL * 2 + 256000);
  EXPECT_TRUE(w.embedding_shared);
  EXPECT_FALSE(w.lm_head_shared);
  EXPECT_EQ(w.lm_head_bytes, 131072000LL * 2);
  // TP 2: attention and MLP split, fc / norms / d2t replicated, lm_head vocab-parallel.
  const ResolvedSpeculative r2 = ResolveSpeculativeConfig(Llama8B(), c, 2, 1);
  const DraftWeights w2 = ComputeDraftWeights(Llama8B(), c, r2, "auto", "");
  const int64_t split = (50331648LL + 16777216 + 176160768) / 2 + 131072000 / 2;
  EXPECT_EQ(w2.total_bytes, (split + 16384 + 50331648) * 2 + 256000);
}

// Llama-3.2-1B as a draft model: nothing shared (draft_model.py). Its own figures are the
// sizing core's (tests/cpp/model); here: it is all of them, embeddings included.
TEST(SpeculativeDecoding, DraftModelWeightsAreTheWholeModel) {
  const SpeculativeConfig c = Draft1B();
  const ResolvedSpeculative r = ResolveSpeculativeConfig(Llama8B(), c, 1, 1);
  const DraftWeights w = ComputeDraftWeights(Llama8B(), c, r, "auto", "");
  EXPECT_EQ(w.num_parameters, NumParameters(*c.draft));
  EXPECT_EQ(w.num_parameters, 1235814400);  // Llama-3.2-1B: 1.24B (model card)
  WeightOptions wo;
  EXPECT_EQ(w.total_bytes, ComputeWeights(*c.draft, wo).fullest_rank_bytes);
  EXPECT_FALSE(w.embedding_shared);
}

// The speculative config's quantization goes to the draft ModelConfig (SpeculativeConfig.
// __post_init__: ModelConfig(..., quantization=self.quantization)): fp8 on the bf16 Llama-3.2-1B
// quantizes its linear layers at load. By hand: 16 layers x (q 2048^2 + k, v 2048 x 512 + o 2048^2
// + gate/up 2 x 2048 x 8192 + down 8192 x 2048) = 973,078,528 weights go from 2 bytes to 1; the
// embedding (tied lm_head) and the norms stay bf16; per-tensor scales are the only addition.
TEST(SpeculativeDecoding, QuantizationKeySizesTheDrafter) {
  SpeculativeConfig c = Draft1B();
  const ResolvedSpeculative r = ResolveSpeculativeConfig(Llama8B(), c, 1, 1);
  const int64_t bf16 = ComputeDraftWeights(Llama8B(), c, r, "auto", "").total_bytes;
  c.quantization = "fp8";
  const DraftWeights fp8 = ComputeDraftWeights(Llama8B(), c, r, "auto", "");
  WeightOptions wo;
  wo.quantization = "fp8";
  EXPECT_EQ(fp8.total_bytes, ComputeWeights(*c.draft, wo).fullest_rank_bytes);
  const int64_t scales = fp8.total_bytes - (bf16 - 973078528);
  EXPECT_GE(scales, 0);
  EXPECT_LT(scales, 16 * 7 * 4 * 2);  // at most a few fp32 scales per linear layer
  // A method the draft checkpoint cannot take is refused naming the key.
  c.quantization = "awq";
  try {
    ComputeDraftWeights(Llama8B(), c, r, "auto", "");
    FAIL() << "expected a refusal";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "speculative_config.quantization");
  }
  // Unset, MTP layers take the target's --quantization (vLLM aligns them); set, the key wins.
  SpeculativeConfig mtp = Mtp();
  const ResolvedSpeculative rm = ResolveSpeculativeConfig(DeepSeekV3(), mtp, 8, 1);
  mtp.quantization = "fp8";
  EXPECT_EQ(ComputeDraftWeights(DeepSeekV3(), mtp, rm, "auto", "").total_bytes,
            ComputeDraftWeights(DeepSeekV3(), Mtp(), rm, "auto", "fp8").total_bytes);
}

// _maybe_override_draft_max_model_len, in vLLM's words: the EAGLE-3 head's config gives
// max_position_embeddings 2048 (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B config.json).
TEST(SpeculativeDecoding, DraftMaxModelLenCheckedAsVllm) {
  SpeculativeConfig c = Eagle3();
  const ResolvedSpeculative r = ResolveSpeculativeConfig(Llama8B(), c, 1, 1);
  auto message = [&](int64_t draft_len, int64_t target_len) -> std::string {
    c.max_model_len = draft_len;
    try {
      CheckDraftMaxModelLen(Llama8B(), c, r, target_len);
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.field(), "speculative_config.max_model_len");
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message(2048, 8192), "");
  EXPECT_NE(message(4096, 8192).find("speculative_max_model_len=4096 cannot be larger than draft_max_model_len=2048"),
            std::string::npos);
  EXPECT_NE(message(2048, 1024).find("speculative_max_model_len=2048 cannot be larger than target_max_model_len=1024"),
            std::string::npos);
  EXPECT_EQ(message(0, 1024), "");  // unset
}

// DeepSeek-V3 README_WEIGHTS.md: the MTP module has "11.5B unique parameters (excluding the
// shared 0.9B Embedding and 0.9B output Head)"; vLLM shares both (llm_base_proposer.py).
// By hand (deepseek_mtp.py): the MoE decoder block, H = 7168:
//   256 experts * 3 * 7168 * 2048 = 11,274,289,152; shared expert 3 * 7168 * 2048 = 44,040,192;
//   router 256 * 7168 + 256 bias = 1,835,264; MLA: q_a 7168 * 1536 + q_b 1536 * 128 * 192 +
//   kv_a 7168 * 576 + kv_b 512 * 128 * 256 + o 128 * 128 * 7168 + norms 1536 + 512 = 187,107,328;
//   2 layer norms 14,336 -> block 11,507,286,272 (the published "11.5B");
//   plus eh_proj 2 * 7168 * 7168 = 102,760,448 and enorm, hnorm, shared_head.norm 3 * 7168 = 21,504
//   -> 11,610,068,224, 1% above the rounded published figure.
TEST(SpeculativeDecoding, DeepSeekV3MtpModuleParameters) {
  const SpeculativeConfig c = Mtp();
  const ResolvedSpeculative r = ResolveSpeculativeConfig(DeepSeekV3(), c, 8, 1);
  const DraftWeights w = ComputeDraftWeights(DeepSeekV3(), c, r, "auto", "");
  EXPECT_EQ(w.num_parameters, 11610068224LL);
  EXPECT_NEAR(static_cast<double>(w.num_parameters) / 1e9, 11.5, 0.15);
  EXPECT_TRUE(w.embedding_shared && w.lm_head_shared);
  EXPECT_EQ(w.embedding_bytes + w.lm_head_bytes, 0);
  // The shared parts are 129280 * 7168 = 926,679,040 each: "0.9B".
  EXPECT_NEAR(129280.0 * 7168 / 1e9, 0.9, 0.05);
}

// VllmConfig._set_cudagraph_sizes + CompilationConfig.adjust_cudagraph_sizes_for_spec_decode.
TEST(SpeculativeDecoding, CaptureSizes) {
  // K = 3 (q = 4), max_num_seqs 256: max = min(256 * 4 * 2, 512) = 512; default list up to 512
  // rounded up to multiples of 4: 1, 2, 4 -> 4; the multiples of 8 and 16 stay: 4, 8, ..., 512.
  const auto s = SpecDecodeCaptureSizes({}, 0, 256, 8192, 4);
  EXPECT_EQ(s.front(), 4);
  EXPECT_EQ(s.back(), 512);
  EXPECT_EQ(s.size(), 1u + 31 + 17);  // 4; 8..248 step 8; 256..512 step 16
  // K = 2 (q = 3), max_num_seqs 4: max = min(4 * 3 * 2, 512) = 24; sizes 1,2,4,8,16,24 ->
  // 3, 3, 6, 9, 18, 24 -> {3, 6, 9, 18, 24}.
  EXPECT_EQ(SpecDecodeCaptureSizes({}, 0, 4, 8192, 3), (std::vector<int64_t>{3, 6, 9, 18, 24}));
  // Nothing left but q fits: [q]. User sizes [1, 2] with max 5 and q = 4 -> 4.
  EXPECT_EQ(SpecDecodeCaptureSizes({1, 2}, 5, 256, 8192, 4), (std::vector<int64_t>{4}));
  // q above the largest size: vLLM's ValueError.
  try {
    SpecDecodeCaptureSizes({1, 2}, 2, 256, 8192, 4);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("No valid cudagraph sizes after rounding to multiple of 4"),
              std::string::npos);
  }
  EXPECT_EQ(SpecDecodeCaptureSizes({}, 0, 256, 8192, 1).size(), 3u + 31 + 17);  // K = 0: unchanged
}

// A drafter whose pages cannot be written as whole target layers, or a target that is not all
// full attention, is refused rather than sized wrongly.
TEST(SpeculativeDecoding, KvGeometryOutsideTheModelledCases) {
  ResolvedSpeculative r;
  r.method = "draft_model";
  r.draft_tensor_parallel_size = 1;
  r.kv_model = std::make_shared<ModelSpec>(Bundled("meta-llama--Llama-3.2-1B-Instruct.json"));
  const ModelSpec gemma = Bundled("google--gemma-2-9b-it.json");  // sliding-window layers
  EXPECT_THROW(WithDrafterKvLayers(gemma, r, 1), Unsupported);
  // The same draft beside Llama-3.1-8B: 16 layers x (8 x 64) = 8 layers x (8 x 128).
  const ModelSpec joined = WithDrafterKvLayers(Llama8B(), r, 1);
  EXPECT_EQ(joined.num_layers, 32 + 8);
  // At TP 2 with the draft on one GPU: 16 x (8 x 64) per rank vs 4 x 128 -> 16 target layers.
  EXPECT_EQ(WithDrafterKvLayers(Llama8B(), r, 2).num_layers, 32 + 16);
}

}  // namespace
}  // namespace vllm_mem
