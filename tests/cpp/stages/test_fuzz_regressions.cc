// Regression tests for the defect classes the libFuzzer harnesses of tests/fuzz found (and the
// earlier external fuzzing pass of issue 9 reported), and for the inputs vLLM refuses that the
// core used to size anyway (issue 10). docs/fuzzing.md lists each finding and its fix. Every
// test below failed (undefined behaviour under UBSan, a wrong number, or unbounded work) on the
// code before the fix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/json.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_groups.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"
#include "vllm_mem/plan/cudagraph_estimate.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/plan_suggestions.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/stages/stage_check.h"
#include "vllm_mem/stages/stage_config.h"

namespace vllm_mem {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

/*! A small Llama-shaped config with \p extra fields appended (or overriding earlier ones is not
 *  possible: duplicate keys are refused, so callers add only new keys). */
std::string Config(const std::string& extra = "", int64_t heads = 8, int64_t kv_heads = 2) {
  return R"({"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 512, "intermediate_size": 1024,
             "vocab_size": 1000, "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
             "num_attention_heads": )" +
         std::to_string(heads) + R"(, "num_key_value_heads": )" + std::to_string(kv_heads) + extra + "}";
}

/*! The InvalidArgument \p body throws; fails the test when it throws nothing or another type. */
template <typename F>
InvalidArgument InvalidArgumentOf(F&& body) {
  try {
    body();
  } catch (const InvalidArgument& e) {
    return e;
  }
  ADD_FAILURE() << "expected InvalidArgument";
  return InvalidArgument("none", "none");
}

/*! Every message names its field, and stays short enough to read (issue 10: <= 300 chars). */
void ExpectClearMessage(const InvalidArgument& e, const std::string& field) {
  EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  EXPECT_LE(std::string(e.what()).size(), 300u) << e.what();
}

// ---- class 0: error messages too long to read, or not text ---------------------------------

TEST(FuzzRegression, MalformedJsonMessagesAreShortPrintableText) {
  // nlohmann quotes the text last read, each control character as <U+0009>: a run of tabs gave
  // a 425-character message; invalid UTF-8 (why the parse failed) came back raw.
  for (const std::string& text : {"[" + std::string(300, '\t') + "x", std::string("[\"\xff\xfe\xc3") + "\"]",
                                  std::string("{\"") + std::string(500, 'k') + "\": 1, \"" +
                                      std::string(500, 'k') + "\": 2}"}) {
    const InvalidArgument e = InvalidArgumentOf([&] { ParseJson(text, "config.json"); });
    ExpectClearMessage(e, "config.json");
    for (char ch : std::string(e.what())) EXPECT_TRUE(ch >= 0x20 && ch <= 0x7e) << e.what();
  }
  // A cut never splits a UTF-8 character: 79 ASCII bytes, then a 2-byte one that would end at 81.
  EXPECT_EQ(EchoValue(std::string(79, 'a') + "\xc3\xa9" + std::string(10, 'b')),
            "'" + std::string(79, 'a') + "'... (91 bytes)");
  // Escapes count as the four characters they take (80 escaped bytes made a 316-character
  // message): 20 of them fill the 80.
  EXPECT_EQ(EchoValue(std::string(100, '\xff')).size(), 1 + 80 + 1 + std::string("... (100 bytes)").size());
  // Bytes that are not UTF-8, and control characters, are shown escaped: the message stays text.
  EXPECT_EQ(EchoValue("A100\xff\xfe\n"), "'A100\\xff\\xfe\\x0a'");
  EXPECT_EQ(EchoValue("caf\xc3\xa9"), "'caf\xc3\xa9'");
}

// ---- class 1: doubles converted to int64 before their range check ---------------------------

TEST(FuzzRegression, ConfigIntegerFromHugeDoubleIsRefusedNotConverted) {
  // 1e300 was cast to int64 (undefined behaviour) before the range check.
  for (const char* value : {"1e300", "-1e300", "1e19", "9.3e18", "4096.5"}) {
    ExpectClearMessage(InvalidArgumentOf([&] {
                         ModelSpec::FromHfConfigText(Config(std::string(R"(, "head_dim": )") + value));
                       }),
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
                       ModelSpec::FromHfConfigText(
                           Config(R"(, "rope_scaling": {"type": "linear", "factor": 2e6})"));
                     }),
                     "rope_scaling.factor");
}

TEST(FuzzRegression, RequestedMemoryOfAHugeTotalIsRefusedNotConverted) {
  // ceil(double(INT64_MAX) * 1.0) is 2^63, which no int64 holds.
  ExpectClearMessage(InvalidArgumentOf([] { RequestedMemoryBytes(kInt64Max, 1.0); }), "total_memory_bytes");
  EXPECT_EQ(RequestedMemoryBytes(kMaxDeviceBytes, 1.0), kMaxDeviceBytes);
  EXPECT_EQ(RequestedMemoryBytes(85029158912, 0.9), 76526243021);  // ceil(total * 0.9), as vLLM
}

TEST(FuzzRegression, TokenCountOverflowIsAnErrorNotANegativeNumber) {
  EXPECT_EQ(KvCacheNumTokens(2.5, 8192), 20480);
  ExpectClearMessage(InvalidArgumentOf([] { KvCacheNumTokens(1e18, 1 << 30); }), "num_tokens");
  ExpectClearMessage(InvalidArgumentOf([] { KvCacheNumTokens(std::nan(""), 16); }), "num_tokens");
  // End to end: a sliding-window model needs 2 blocks per request whatever max_model_len is, so
  // 2^62 bytes give ~2^55 concurrent requests of 2^30 tokens: 2^85 tokens, which printed as a
  // negative count in a normal build.
  const ModelSpec spec = ModelSpec::FromHfConfigText(
      R"({"model_type": "mistral", "num_hidden_layers": 1, "hidden_size": 8, "intermediate_size": 8,
          "vocab_size": 10, "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 1,
          "sliding_window": 16, "torch_dtype": "bfloat16"})");
  KvCacheOptions o;
  o.max_model_len = kMaxModelLenTokens;
  ExpectClearMessage(InvalidArgumentOf([&] { ComputeKvCacheCapacity(spec, {int64_t{1} << 62}, o); }),
                     "num_tokens");
  o.max_model_len = 4096;
  const KvCacheCapacity small = ComputeKvCacheCapacity(spec, {int64_t{1} << 30}, o);
  EXPECT_GT(small.num_tokens, 0);
}

TEST(FuzzRegression, CheckedDoubleToInt64RefusesWhatDoesNotFit) {
  EXPECT_EQ(CheckedDoubleToInt64(-3.9, "x"), -3);  // truncation toward zero, as Python's int()
  EXPECT_EQ(CheckedDoubleToInt64(-9223372036854775808.0, "x"), std::numeric_limits<int64_t>::min());
  for (double bad : {9223372036854775808.0, -1e19, std::nan(""), std::numeric_limits<double>::infinity()}) {
    ExpectClearMessage(InvalidArgumentOf([&] { CheckedDoubleToInt64(bad, "x"); }), "x");
  }
}

// ---- class 2: signed overflow computing the default CUDA-graph capture sizes ----------------

TEST(FuzzRegression, DefaultCaptureSizesOfAHugeMaximumIsRefused) {
  // max_size + 1 overflowed for INT64_MAX; a large maximum also built a list of billions.
  ExpectClearMessage(InvalidArgumentOf([] { DefaultCaptureSizes(kInt64Max); }), "max_cudagraph_capture_size");
  const std::vector<int64_t> sizes = DefaultCaptureSizes(kMaxCudagraphCaptureSize);
  EXPECT_EQ(sizes.back(), kMaxCudagraphCaptureSize);
  EXPECT_EQ(DefaultCaptureSizes(512).size(), 51u);  // vLLM's default list: 1, 2, 4, 8..248, 256..512

  const ModelSpec spec = ModelSpec::FromHfConfigText(Config());
  CudagraphOptions o;
  o.max_cudagraph_capture_size = kInt64Max;
  ExpectClearMessage(InvalidArgumentOf([&] { EstimateCudagraphMemory(spec, o); }), "max_cudagraph_capture_size");
  o.max_cudagraph_capture_size = 0;
  o.capture_sizes = {1, 2, kInt64Max};
  ExpectClearMessage(InvalidArgumentOf([&] { EstimateCudagraphMemory(spec, o); }), "cudagraph_capture_sizes");
}

// ---- class 3: unbounded work -----------------------------------------------------------------

TEST(FuzzRegression, TensorParallelSizeIsBoundedBeforeAnyWorkerIsBuilt) {
  // TP 2^20 built a million workers (17 s, 6.7 GB); now refused before any of them.
  const ModelSpec spec = ModelSpec::FromHfConfigText(Config("", 8, 8));
  KvCacheOptions o;
  o.max_model_len = 1024;
  o.tensor_parallel_size = int64_t{1} << 20;
  ExpectClearMessage(InvalidArgumentOf([&] { ComputeKvCacheCapacity(spec, {kGiB}, o); }), "tensor_parallel_size");
  o.tensor_parallel_size = 1;
  o.pipeline_parallel_size = kInt64Max;
  ExpectClearMessage(InvalidArgumentOf([&] { ComputeKvCacheCapacity(spec, {kGiB}, o); }), "pipeline_parallel_size");
}

TEST(FuzzRegression, IdenticalWorkersAreSizedOnceWithTheSameAnswer) {
  // The KV sizing keeps one entry per distinct (pipeline rank, budget); the per-worker block
  // counts and the minimum are what one computation per worker gave.
  const ModelSpec spec = ModelSpec::FromHfConfigText(Config("", 64, 64));
  KvCacheOptions o;
  o.max_model_len = 1024;
  o.tensor_parallel_size = 64;
  o.pipeline_parallel_size = 2;
  const KvCacheCapacity same = ComputeKvCacheCapacity(spec, {kGiB}, o);
  ASSERT_EQ(same.num_blocks_per_worker.size(), 128u);
  for (int64_t blocks : same.num_blocks_per_worker) EXPECT_EQ(blocks, same.num_blocks_per_worker.front());

  std::vector<int64_t> budgets(128, kGiB);
  budgets[77] = kGiB / 2;  // one worker of pipeline rank 1 has half the budget
  const KvCacheCapacity uneven = ComputeKvCacheCapacity(spec, budgets, o);
  ASSERT_EQ(uneven.num_blocks_per_worker.size(), 128u);
  EXPECT_EQ(uneven.num_blocks, uneven.num_blocks_per_worker[77]);
  EXPECT_LT(uneven.num_blocks_per_worker[77], uneven.num_blocks_per_worker[76]);
  EXPECT_EQ(uneven.num_blocks_per_worker[0], same.num_blocks_per_worker[0]);
  EXPECT_EQ(EstimateMaxModelLen(spec, budgets, o), EstimateMaxModelLen(spec, {kGiB / 2}, o));
}

TEST(FuzzRegression, ModelCountsAreBoundedBeforeTheirVectorsAreBuilt) {
  // num_hidden_layers 2^40 allocated a 2^40-entry layer vector.
  ExpectClearMessage(InvalidArgumentOf([] {
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

TEST(FuzzRegression, SuggestionsForALargeCaptureSizeSearchInsteadOfScanning) {
  // One re-plan per capture size took seconds for thousands of sizes; the binary search must
  // still name the largest size that fits, as the scan did. An 8B model on a 24 GiB GPU fails
  // at the KV phase with the default graphs, and fits once the graphs shrink.
  const ModelSpec spec = ModelSpec::FromHfConfigText(
      R"({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "intermediate_size": 14336,
          "vocab_size": 128256, "num_attention_heads": 32, "num_key_value_heads": 8, "torch_dtype": "bfloat16",
          "max_position_embeddings": 8192})");
  PlanInputs in;
  in.total_memory_bytes = 24 * kGiB;
  in.gpu_memory_utilization = 0.9;
  in.max_model_len = 8192;
  in.max_num_seqs = 1024;
  in.max_num_batched_tokens = 4096;
  in.max_cudagraph_capture_size = 4096;
  in.cudagraph_constants.per_graph_bytes_per_layer_hidden = 100.0;  // heavy graphs: they decide
  const StartupPlan plan = EvaluatePlan(spec, in);
  ASSERT_FALSE(plan.fits);
  ASSERT_TRUE(plan.failure_phase == FailurePhase::kNoKvBlocks || plan.failure_phase == FailurePhase::kMaxModelLen)
      << FailurePhaseName(plan.failure_phase);
  const auto& sizes = plan.ranks.front().cudagraph.capture_sizes;
  ASSERT_GT(sizes.size(), 200u);
  // The scan's answer, on a sample: the largest size whose plan fits.
  auto fits_at = [&](int64_t cap) {
    PlanInputs changed = in;
    changed.max_cudagraph_capture_size = cap;
    return EvaluatePlan(spec, changed).fits;
  };
  const std::vector<PlanSuggestion> suggestions = SuggestPlanChanges(spec, plan);
  const PlanSuggestion* graph = nullptr;
  for (const auto& s : suggestions) {
    if (s.lever == "max_cudagraph_capture_size") graph = &s;
  }
  ASSERT_NE(graph, nullptr) << FormatSuggestions(suggestions);
  const int64_t chosen = std::stoll(graph->value);
  EXPECT_TRUE(fits_at(chosen));
  // The next larger capture size does not fit: the answer is the largest.
  auto next = std::upper_bound(sizes.begin(), sizes.end(), chosen);
  ASSERT_NE(next, sizes.end());
  EXPECT_FALSE(fits_at(*next));
}

TEST(FuzzRegression, GpuNamesAreBoundedBeforeTheFuzzyMatch) {
  const std::string huge(1 << 20, 'h');
  const InvalidArgument e = InvalidArgumentOf([&] { LookupGpu(huge); });
  ExpectClearMessage(e, "gpu");
  EXPECT_NE(std::string(e.what()).find("1048576 bytes"), std::string::npos) << e.what();
  EXPECT_TRUE(CloseGpuMatches(huge).empty());
  EXPECT_EQ(LookupGpu("h100").name, "H100-80GB");
  // Brand words are dropped in one pass (erasing each in place was quadratic: a 64 KiB name of
  // repeated "amd" took seconds); words that join once another is dropped go too.
  std::string brands;
  for (int i = 0; i < (1 << 14); ++i) brands.append("AMD");
  EXPECT_EQ(NormalizeGpuName(brands + "-MI300X"), "mi300x");
  EXPECT_EQ(NormalizeGpuName("NVIDIA GeForce RTX 4090"), "rtx4090");
  EXPECT_EQ(NormalizeGpuName("nviamddia"), "");
}

TEST(FuzzRegression, StageCountsAndDeviceListsAreBounded) {
  // tensor_parallel_size 2^62 x pipeline_parallel_size 4 overflowed in WorldSize().
  ExpectClearMessage(InvalidArgumentOf([] {
                       ParseStageConfigText(R"({"stages": [{"stage_id": 0, "devices": "0",
                         "tensor_parallel_size": 4611686018427387904, "pipeline_parallel_size": 4}]})");
                     }),
                     "tensor_parallel_size");
  // Built by appending: GCC 12 raises a false -Wrestrict on chained operator+ in loops.
  std::string many = R"({"stages": [)";
  for (int i = 0; i <= kMaxStages; ++i) {
    if (i > 0) many.push_back(',');
    many.append(R"({"stage_id": )").append(std::to_string(i)).push_back('}');
  }
  many.append("]}");
  ExpectClearMessage(InvalidArgumentOf([&] { ParseStageConfigText(many); }), "stages");
  std::string devices;
  for (int i = 0; i <= kMaxDevicesPerList; ++i) {
    if (i > 0) devices.push_back(',');
    devices.append(std::to_string(i % 10));
  }
  ExpectClearMessage(InvalidArgumentOf([&] { ParseCudaVisibleDevices(devices); }), "CUDA_VISIBLE_DEVICES");
  ExpectClearMessage(InvalidArgumentOf([] { ParseCudaVisibleDevices("0,99999"); }), "CUDA_VISIBLE_DEVICES");
}

// ---- what vLLM refuses, refused in the core ---------------------------------------------------

TEST(BadInputRefused, TensorParallelSizeMustDivideTheAttentionHeadsWithVllmsMessage) {
  const ModelSpec spec = ModelSpec::FromHfConfigText(Config("", 32, 8));
  const std::string vllm = "Total number of attention heads (32) must be divisible by tensor parallel size (3).";
  KvCacheOptions kv;
  kv.max_model_len = 1024;
  kv.tensor_parallel_size = 3;
  // Before: the KV sizing quietly sized this split.
  InvalidArgument e = InvalidArgumentOf([&] { ComputeKvCacheCapacity(spec, {kGiB}, kv); });
  EXPECT_EQ(std::string(e.what()), "tensor_parallel_size: " + vllm);
  EXPECT_EQ(e.field(), "tensor_parallel_size");
  WeightOptions w;
  w.tensor_parallel_size = 3;
  EXPECT_EQ(std::string(InvalidArgumentOf([&] { ComputeWeights(spec, w); }).what()), "tensor_parallel_size: " + vllm);
  PlanInputs in;
  in.total_memory_bytes = 80 * kGiB;
  in.tensor_parallel_size = 3;
  EXPECT_EQ(std::string(InvalidArgumentOf([&] { EvaluatePlan(spec, in); }).what()), "tensor_parallel_size: " + vllm);
  kv.tensor_parallel_size = 4;
  EXPECT_GT(ComputeKvCacheCapacity(spec, {kGiB}, kv).num_blocks, 0);
}

TEST(BadInputRefused, KvHeadsMustDivideTheAttentionHeads) {
  ExpectClearMessage(InvalidArgumentOf([] { ModelSpec::FromHfConfigText(Config("", 32, 6)); }),
                     "num_key_value_heads");
  ExpectClearMessage(InvalidArgumentOf([] { ModelSpec::FromHfConfigText(Config("", 8, 16)); }),
                     "num_key_value_heads");
  EXPECT_EQ(ModelSpec::FromHfConfigText(Config("", 32, 1)).num_kv_heads, 1);  // MQA
}

TEST(BadInputRefused, BlockSizesVllmDoesNotAccept) {
  const ModelSpec spec = ModelSpec::FromHfConfigText(Config());
  KvCacheOptions o;
  o.max_model_len = 1024;
  for (int64_t bad : {int64_t{-1}, int64_t{2}, int64_t{17}, int64_t{48}, int64_t{512}, kInt64Max}) {
    o.block_size = bad;
    const InvalidArgument e = InvalidArgumentOf([&] { ComputeKvCacheCapacity(spec, {kGiB}, o); });
    ExpectClearMessage(e, "block_size");
    EXPECT_NE(std::string(e.what()).find("1, 8, 16, 32, 64, 128, 256"), std::string::npos) << e.what();
    PlanInputs in;
    in.total_memory_bytes = 80 * kGiB;
    in.block_size = bad;
    ExpectClearMessage(InvalidArgumentOf([&] { EvaluatePlan(spec, in); }), "block_size");
  }
  for (int64_t good : {0, 1, 8, 16, 32, 64, 128, 256}) {
    o.block_size = good;
    EXPECT_GT(ComputeKvCacheCapacity(spec, {kGiB}, o).num_blocks, 0) << good;
  }
}

TEST(BadInputRefused, QuantizationGroupSizeZeroOrNegative) {
  auto gptq = [](const char* group) {
    return ModelSpec::FromHfConfigText(
        Config(std::string(R"(, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": )") +
               group + "}"));
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

TEST(BadInputRefused, ReserveLargerThanTheGpu) {
  const StageConfigSet config = ParseStageConfigText(R"({"stages": [{"stage_id": 0, "devices": "0",
    "gpu_memory_utilization": 0.5}]})");
  StageCheckOptions o;
  o.default_device.name = "L4";
  o.reserve_bytes = 1000 * kGiB;
  const InvalidArgument e = InvalidArgumentOf([&] { CheckStages(config, o); });
  ExpectClearMessage(e, "reserve_bytes");
  EXPECT_NE(std::string(e.what()).find("GPU 0"), std::string::npos) << e.what();
  o.reserve_bytes = 2 * kGiB;
  EXPECT_TRUE(CheckStages(config, o).ok);
}

TEST(BadInputRefused, LongStringsAreTruncatedInMessages) {
  const std::string long_value(5000, 'x');
  const std::vector<InvalidArgument> errors = {
      InvalidArgumentOf([&] { LookupGpu(std::string(200, 'q')); }),
      InvalidArgumentOf([&] {
        ModelSpec::FromHfConfigText(Config(R"(, "quantization_config": {"quant_method": ")" + long_value + "\"}"));
      }),
      InvalidArgumentOf([&] { ParseCudagraphMode(long_value); }),
      InvalidArgumentOf([&] { ParseCudaVisibleDevices(long_value); }),
      InvalidArgumentOf([&] {
        ParseStageConfigText(R"({"stages": [{"stage_id": 0, "devices": ")" + long_value + "\"}]}");
      }),
  };
  for (const auto& e : errors) {
    EXPECT_LE(std::string(e.what()).size(), 300u) << e.what();
    EXPECT_EQ(std::string(e.what()).find(long_value), std::string::npos);
  }
  EXPECT_EQ(EchoValue("abc"), "'abc'");
  EXPECT_EQ(EchoValue(long_value), "'" + std::string(80, 'x') + "'... (5000 bytes)");
  // Invalid UTF-8 from a GPU name or CUDA_VISIBLE_DEVICES comes back escaped (fuzz_gpu_name).
  for (const auto& e : {InvalidArgumentOf([] { LookupGpu("QQ\xff"); }),
                        InvalidArgumentOf([] { ParseCudaVisibleDevices("0,\xff"); })}) {
    EXPECT_NE(std::string(e.what()).find("\\xff"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vllm_mem

namespace vllm_mem {
namespace {

// fuzz_model_config / fuzz_stage_config (CI smoke, seed 1): a max_model_len above the model's
// derived maximum got vLLM's whole refusal, cautionary sentences included: 576 characters with a
// 19-digit length, past the 300 every message keeps to. Every release's wording now fits.
TEST(FuzzRegression, LongMaxModelLenRefusalStaysWithinTheMessageBound) {
  const ModelSpec spec = ModelSpec::FromHfConfigText(Config());
  for (const char* version : {"0.8", "0.19", ""}) {
    PlanInputs in;
    in.total_memory_bytes = int64_t{80} << 30;
    in.vllm_version = version;
    in.max_model_len = 7947109126219385905;
    try {
      (void)EvaluatePlan(spec, in);
      FAIL() << "a max_model_len above the derived maximum must be refused";
    } catch (const InvalidArgument& e) {
      const std::string text = e.what();
      EXPECT_LE(text.size(), size_t{300}) << text;  // docs/errors.md; fuzz_common.h kMaxMessageChars
      EXPECT_NE(text.find("max_model_len"), std::string::npos) << text;
    }
  }
}

}  // namespace
}  // namespace vllm_mem

namespace vllm_mem {
namespace {

// fuzz_model_config (CI smoke, seed 1): a negative total memory with the scheduler settings left
// to the release reached the batch-default tiers before the plan's checks, matched none (even
// the unconditional one compared the total with a 0-byte floor) and threw std::logic_error,
// which Python would have seen as a RuntimeError. Now the plan refuses the figure by name.
TEST(FuzzRegression, NegativeTotalMemoryWithReleaseDefaultsIsRefusedByName) {
  const ModelSpec spec = ModelSpec::FromHfConfigText(Config());
  for (const int64_t total : {int64_t{-1}, int64_t{0}, -(int64_t{80} << 30)}) {
    PlanInputs in;
    in.total_memory_bytes = total;
    in.max_num_seqs = 0;            // the release's default
    in.max_num_batched_tokens = 0;  // the release's default
    try {
      (void)EvaluatePlan(spec, in);
      FAIL() << "total_memory_bytes " << total << " must be refused";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("total_memory_bytes"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace vllm_mem
