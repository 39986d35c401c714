// vLLM release profiles (plan/vllm_versions.json): parsing, lookup, and the defaults each
// release fills in. Every expected value below names the vLLM source it comes from.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/model_runner.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/plan/vllm_version_profile.h"
#include "bundled_config.h"

namespace vllm_mem {
namespace {

ModelSpec Bundled(const std::string& file) { return testing::BundledModel(file); }
const ModelSpec& Llama() {
  static const ModelSpec spec = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  return spec;
}
const VllmVersionProfile& Profile(const std::string& v) { return *LookupVllmVersion(v).profile; }
int64_t Total(const std::string& gpu) { return LookupGpu(gpu).total_memory_bytes; }

BatchDefaults Defaults(const std::string& version, const std::string& gpu, const std::string& usage,
                       int64_t max_model_len = 8192) {
  const VllmVersionProfile& p = Profile(version);
  return ResolveBatchDefaults(p, p.engine, usage, Total(gpu), gpu, max_model_len, 0, 0);
}

}  // namespace

TEST(VllmVersion, ParsesReleaseSpellings) {
  EXPECT_EQ(VllmVersionString(ParseVllmVersion("0.19")), "0.19.0");
  EXPECT_EQ(VllmVersionString(ParseVllmVersion("v0.10.2")), "0.10.2");
  EXPECT_EQ(VllmVersionString(ParseVllmVersion("0.11.0rc1")), "0.11.0");
  EXPECT_EQ(VllmVersionString(ParseVllmVersion("0.20.1.dev12+g3e372c5")), "0.20.1");
  EXPECT_EQ(VllmVersionString(ParseVllmVersion("0.9.2+cu128")), "0.9.2");
  EXPECT_EQ(VllmVersionString(ParseVllmVersion("0.10.1.1")), "0.10.1");  // a post-release vLLM shipped
  for (const char* bad : {"", "0", "latest", "0.x", "1..2", "0.19.1.2.3", "0.19 ", "-0.19", "0.1234567"}) {
    try {
      ParseVllmVersion(bad);
      ADD_FAILURE() << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.field(), "vllm_version") << bad;
      EXPECT_NE(std::string(e.what()).find("MAJOR.MINOR"), std::string::npos) << e.what();
    }
  }
}

TEST(VllmVersion, EveryReleaseLineHasAProfileWithSources) {
  std::set<std::string> lines;
  for (const auto& p : VllmVersionProfiles()) {
    const VllmVersion v = ParseVllmVersion(p.version);
    lines.insert(std::to_string(v.major) + "." + std::to_string(v.minor));
    EXPECT_FALSE(p.rules.empty());
    for (const auto& r : p.rules) {
      EXPECT_FALSE(r.source.empty()) << p.version << " " << r.rule;
      EXPECT_TRUE(r.release == "tagged" || r.release == "inferred") << r.rule;
    }
  }
  for (int minor = 7; minor <= 32; ++minor) EXPECT_TRUE(lines.count("0." + std::to_string(minor))) << minor;
}

TEST(VllmVersion, LookupPicksTheNewestProfileNotAfterTheVersion) {
  EXPECT_EQ(Profile("0.19.1").version, "0.19.0");
  EXPECT_EQ(Profile("0.8.3").version, "0.8.0");   // before PR #16158
  EXPECT_EQ(Profile("0.8.4").version, "0.8.4");
  EXPECT_EQ(Profile("0.10.2").version, "0.10.0");
  // Nothing asked: the newest release whose CUDA-graph start-ups are planned (from 0.29 Model
  // Runner V2 measures its graphs on the device: model_runner.h V2GraphProfileRefusal).
  EXPECT_EQ(Profile("").version, "0.28.0");
  EXPECT_EQ(VllmVersionProfiles().back().version, "0.32.0");
  const VersionLookup newer = LookupVllmVersion("0.99");
  EXPECT_TRUE(newer.newer_than_known);
  EXPECT_EQ(newer.profile, &VllmVersionProfiles().back());
  EXPECT_NE(newer.note.find("newer than the newest known"), std::string::npos);
  EXPECT_FALSE(LookupVllmVersion("0.32.3").newer_than_known);  // a patch of the newest line
  // vllm_versions.json "not_modelled" is empty: 0.29-0.32 are profiled; a graph start-up is
  // refused there by its own rule (ModelRunner tests below), an eager one planned.
  PlanInputs in;
  in.total_memory_bytes = Total("H100-80GB");
  in.max_model_len = 8192;
  in.vllm_version = "0.99";
  EXPECT_THROW(EvaluatePlan(Llama(), in), Unsupported);
  in.enforce_eager = true;
  EXPECT_EQ(EvaluatePlan(Llama(), in).inputs.resolved_vllm_version, "0.32.0");
  EXPECT_NO_THROW(RefuseIfNotModelled("0.99"));
  EXPECT_THROW(LookupVllmVersion("0.5.4"), InvalidArgument);     // older than any profile
}

TEST(VllmVersion, UtilizationAndGraphBudgetChangeAt020) {
  // PR #38284: 0.9 -> 0.92 and VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on. Its text says "default
  // since v0.21.0", but the v0.20.0 image already subtracts the estimate
  // (tests/data/vllm_release_logs.json, wsl-qwen3.6-35b-a3b-nvfp4-v0.20.0).
  EXPECT_EQ(Profile("0.19").gpu_memory_utilization, 0.9);
  EXPECT_FALSE(Profile("0.19").cudagraph_memory_in_budget);
  EXPECT_EQ(Profile("0.20").gpu_memory_utilization, 0.92);
  EXPECT_TRUE(Profile("0.20").cudagraph_memory_in_budget);
  EXPECT_TRUE(Profile("0.21").cudagraph_memory_in_budget);
  EXPECT_EQ(Profile("0.8").gpu_memory_utilization, 0.9);
}

TEST(VllmVersion, SchedulerDefaultsByReleaseGpuAndUsage) {
  // get_batch_defaults (PR #17885): >= 70 GiB and not an A100 -> 1024 seqs, 8192 server / 16384 LLM.
  EXPECT_EQ(Defaults("0.19", "H100-80GB", "server").max_num_seqs, 1024);
  EXPECT_EQ(Defaults("0.19", "H100-80GB", "server").max_num_batched_tokens, 8192);
  EXPECT_EQ(Defaults("0.19", "H100-80GB", "offline").max_num_batched_tokens, 16384);
  EXPECT_EQ(Defaults("0.19", "A100-80GB", "server").max_num_seqs, 256);
  EXPECT_EQ(Defaults("0.19", "A100-80GB", "server").max_num_batched_tokens, 2048);
  EXPECT_EQ(Defaults("0.19", "A100-80GB", "offline").max_num_batched_tokens, 8192);
  EXPECT_EQ(Defaults("0.19", "L40S", "server").max_num_batched_tokens, 2048);
  EXPECT_EQ(Defaults("0.19", "MI300X", "server").max_num_batched_tokens, 8192);
  // PR #17073 (0.8.5): by memory alone, so an A100-80GB got the large defaults.
  EXPECT_EQ(Defaults("0.8.5", "A100-80GB", "server").max_num_seqs, 1024);
  // PR #12369 / #16158: by name; before 0.8.4 every GPU got 1024 sequences in V1.
  EXPECT_EQ(Defaults("0.8.0", "L40S", "server").max_num_seqs, 1024);
  EXPECT_EQ(Defaults("0.8.4", "L40S", "server").max_num_seqs, 256);
  EXPECT_EQ(Defaults("0.8.4", "MI300X", "server").max_num_batched_tokens, 2048);  // not named
  // PR #51726 (0.28): >= 160 GiB -> 16384 server tokens; it catches the MI300X too (issue #53961).
  EXPECT_EQ(Defaults("0.28", "B200-180GB", "server").max_num_batched_tokens, 16384);
  EXPECT_EQ(Defaults("0.28", "MI300X", "server").max_num_batched_tokens, 16384);
  EXPECT_EQ(Defaults("0.28", "H200-141GB", "server").max_num_batched_tokens, 8192);
  // V0 (0.7): max(max_model_len, 2048), 2048 with chunked prefill above 32K, 256 sequences.
  EXPECT_EQ(Defaults("0.7", "H100-80GB", "server", 8192).max_num_batched_tokens, 8192);
  EXPECT_EQ(Defaults("0.7", "H100-80GB", "server", 1024).max_num_batched_tokens, 2048);
  EXPECT_EQ(Defaults("0.7", "H100-80GB", "server", 131072).max_num_batched_tokens, 2048);
  EXPECT_EQ(Defaults("0.7", "H100-80GB", "server").max_num_seqs, 256);
  // The clamps of _set_default_max_num_seqs_and_batched_tokens_args: tokens <= seqs x len.
  EXPECT_EQ(Defaults("0.19", "H100-80GB", "server", 4).max_num_batched_tokens, 4096);
  // A figure the user gave is kept.
  const VllmVersionProfile& p = Profile("0.19");
  EXPECT_EQ(ResolveBatchDefaults(p, "v1", "server", Total("H100-80GB"), "H100-80GB", 8192, 64, 0).max_num_seqs, 64);
  EXPECT_THROW(ResolveBatchDefaults(p, "v1", "batch", Total("H100-80GB"), "", 8192, 0, 0), InvalidArgument);
}

TEST(VllmVersion, SamplerFigureFollowsTheTritonTopKTopP) {
  // 36.4 from the v0.11/v0.15/v0.16 start-up peaks (tests/data/vllm_release_logs.json).
  EXPECT_EQ(Profile("0.16").sampler_bytes_per_logit, 36.4);
  EXPECT_EQ(Profile("0.17").sampler_bytes_per_logit, 12.0);  // PR #33538: 3 float32 copies of the logits
  // The Triton kernel's per-program buffer and the fixed bytes only from 0.17 (the older per-logit
  // fits carry them).
  EXPECT_EQ(Profile("0.16").sampler_kernel_programs, 0);
  EXPECT_EQ(Profile("0.16").sampler_fixed_bytes, 0);
  EXPECT_EQ(Profile("0.17").sampler_kernel_programs, 132);
  EXPECT_EQ(Profile("0.17").sampler_fixed_bytes, int64_t{48} << 20);
  EXPECT_EQ(Profile("0.19").sampler_kernel_programs, ActivationConstants{}.sampler_kernel_programs);
  EXPECT_EQ(Profile("0.19").sampler_fixed_bytes, ActivationConstants{}.sampler_fixed_bytes);
  EXPECT_EQ(Profile("0.19").sampler_bytes_per_logit, ActivationConstants{}.sampler_bytes_per_logit);
}

// max_model_len_auto: PR #29431 (--max-model-len auto / -1) merged after v0.13.0 (2025-12-19).
TEST(VllmVersion, AutoFitIsReadFrom0_14) {
  EXPECT_FALSE(Profile("0.13").max_model_len_auto);
  EXPECT_TRUE(Profile("0.14").max_model_len_auto);
  EXPECT_TRUE(Profile("0.28").max_model_len_auto);
}

// kv_cache_dtypes_added: per-token-head fp8/int8 and TurboQuant from 0.20.0 (v0.20.0 release
// note), nvfp4 from 0.21.0 (PR #40177 merged 2026-05-01, after v0.20.0 of 2026-04-27),
// int4_per_token_head first seen on 0.28.0; before, vLLM's pydantic literal_error.
TEST(VllmVersion, KvCacheDTypesAreAcceptedFromTheirFirstRelease) {
  const std::vector<std::tuple<std::string, std::string, std::string>> firsts = {
      {"fp8_per_token_head", "0.19", "0.20"},
      {"int8_per_token_head", "0.19", "0.20"},
      {"turboquant_k8v4", "0.19", "0.20"},
      {"turboquant_3bit_nc", "0.19", "0.20"},
      {"nvfp4", "0.20", "0.21"},
      {"int4_per_token_head", "0.24", "0.25"},
      // CacheDType at the tags (the release wheels' vllm/config/cache.py): fp8_inc at v0.10.0,
      // bfloat16 at v0.11.0, fp8_ds_mla at v0.11.1, float16 at v0.18.0, int4_per_token_head at
      // v0.25.0; test_kv_dtype_names_by_release.cc.
      {"fp8_inc", "0.9", "0.10"},
      {"bfloat16", "0.10", "0.11"},
      {"fp8_ds_mla", "0.11.0", "0.11.1"},
      {"float16", "0.17", "0.18"}};
  for (const auto& [dtype, before, first] : firsts) {
    EXPECT_EQ(KvCacheDTypeRefusal(Profile(first), dtype), "") << dtype;
    EXPECT_EQ(KvCacheDTypeRefusal(Profile("0.28"), dtype), "") << dtype;
    const std::string refusal = KvCacheDTypeRefusal(Profile(before), dtype);
    EXPECT_NE(refusal.find("[type=literal_error, input_value='" + dtype + "', input_type=str]"), std::string::npos)
        << refusal;
    const std::string first_release = Profile(first).version;  // "0.11" names the profile 0.11.0
    EXPECT_NE(refusal.find("accepted from vLLM " + first_release + ")"), std::string::npos) << refusal;
    EXPECT_NE(KvCacheDTypeRefusal(Profile("0.7"), dtype), "") << dtype;
  }
  // Names no change lists are taken by every release.
  for (const char* dtype : {"auto", "fp8", "fp8_e4m3", "fp8_e5m2"}) {
    EXPECT_EQ(KvCacheDTypeRefusal(Profile("0.7"), dtype), "") << dtype;
  }
  // The refusal reaches the plan, naming the field.
  PlanInputs in;
  in.total_memory_bytes = Total("H100-80GB");
  in.max_model_len = 8192;
  in.kv_cache_dtype = "nvfp4";
  in.vllm_version = "0.20";
  try {
    EvaluatePlan(Llama(), in);
    ADD_FAILURE() << "nvfp4 planned on 0.20";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "kv_cache_dtype");
  }
  in.vllm_version = "0.21";
  EXPECT_TRUE(EvaluatePlan(Llama(), in).fits);
}

TEST(VllmVersion, RulesTheStartUpLogsOfOtherReleasesSet) {
  // Non-torch at TP 1: 0.13 GiB printed up to v0.17, 0.25 from v0.18 (the calibrated constant).
  EXPECT_EQ(Profile("0.17").non_torch_single_gpu_bytes, 139586437);
  EXPECT_EQ(Profile("0.18").non_torch_single_gpu_bytes, NonTorchConstants{}.single_process_bytes);
  // v0.13, v0.19 and v0.23 concurrencies: the sliding-window need is vLLM's uncapped formula.
  for (const char* v : {"0.13", "0.19", "0.23"}) EXPECT_FALSE(Profile(v).sliding_window_capped_at_full) << v;
  // v0.23 prints tokens = int(concurrency x L) on two lines, v0.28.0 the same figures on one.
  EXPECT_EQ(Profile("0.23").kv_log_format, KvLogFormat::kConcurrencyTokens);
  EXPECT_EQ(Profile("0.28").kv_log_format, KvLogFormat::kCombinedLine);
  EXPECT_EQ(Profile("0.19").kv_log_format, KvLogFormat::kGroupedTokens);
}

TEST(VllmVersion, PlanAppliesTheRelease) {
  PlanInputs in;
  in.total_memory_bytes = Total("H100-80GB");
  in.gpu_name = "H100-80GB";
  in.max_model_len = 8192;
  in.vllm_version = "0.19";
  const StartupPlan v19 = EvaluatePlan(Llama(), in);
  EXPECT_EQ(v19.inputs.resolved_vllm_version, "0.19.0");
  EXPECT_EQ(v19.inputs.gpu_memory_utilization, 0.9);
  EXPECT_EQ(v19.inputs.max_num_seqs, 1024);
  EXPECT_EQ(v19.inputs.max_num_batched_tokens, 8192);
  EXPECT_FALSE(v19.inputs.cudagraph_memory_in_budget.value());
  EXPECT_EQ(v19.requested_bytes, static_cast<int64_t>(std::ceil(85029158912.0 * 0.9)));
  EXPECT_EQ(v19.available_kv_cache_bytes,
            v19.requested_bytes - v19.weights_bytes - v19.activation_peak_bytes - v19.non_torch_bytes);
  ASSERT_EQ(KvLogLines(v19).size(), 2u);
  EXPECT_EQ(KvLogLines(v19)[0].rfind("GPU KV cache size: ", 0), 0u);
  in.vllm_version = "0.21";
  const StartupPlan v21 = EvaluatePlan(Llama(), in);
  EXPECT_TRUE(v21.inputs.cudagraph_memory_in_budget.value());
  EXPECT_EQ(v21.available_kv_cache_bytes, v21.requested_bytes - v21.weights_bytes - v21.activation_peak_bytes -
                                              v21.non_torch_bytes - v21.cudagraph_bytes);
  // Two lines from 0.21 too (tokens from the concurrency), as the v0.22-v0.27 start-ups print them.
  const std::vector<std::string> v21_lines = KvLogLines(v21);
  ASSERT_EQ(v21_lines.size(), 2u);
  ASSERT_TRUE(v21.kv_cache.has_value());
  EXPECT_EQ(v21_lines[0], "GPU KV cache size: " + FormatThousands(v21.kv_cache->num_tokens) + " tokens");
  EXPECT_EQ(v21_lines[1].rfind("Maximum concurrency for 8,192 tokens per request: ", 0), 0u);
  // The Triton sampler (0.17) shrinks the profile-run peak against 0.16's PyTorch sort.
  in.vllm_version = "0.16";
  EXPECT_GT(EvaluatePlan(Llama(), in).activation_peak_bytes, v19.activation_peak_bytes);
}

TEST(VllmVersion, KvRulesReachTheKvOptions) {
  PlanInputs in;
  in.total_memory_bytes = Total("H100-80GB");
  in.max_model_len = 8192;
  in.vllm_version = "0.19";
  const StartupPlan v19 = EvaluatePlan(Llama(), in);
  EXPECT_FALSE(KvOptionsFor(Llama(), v19.inputs).kv_tokens_from_concurrency);  // issue 40691 on v0.19.0
  // Hybrid alignment to --block-size: platforms/interface.py _align_hybrid_block_size, in v0.20.0's
  // wheel, not v0.19.0's (models/config.py aligns to 16 there).
  EXPECT_FALSE(KvOptionsFor(Llama(), v19.inputs).hybrid_align_to_user_block_size);
  in.vllm_version = "0.20";
  EXPECT_TRUE(KvOptionsFor(Llama(), EvaluatePlan(Llama(), in).inputs).hybrid_align_to_user_block_size);
  in.vllm_version = "0.21";
  EXPECT_TRUE(KvOptionsFor(Llama(), EvaluatePlan(Llama(), in).inputs).kv_tokens_from_concurrency);
  in.vllm_version = "0.9";
  EXPECT_TRUE(KvOptionsFor(Llama(), EvaluatePlan(Llama(), in).inputs).disable_hybrid_kv_cache_manager);
}

TEST(VllmVersion, V0EngineBudgetAndWording) {
  PlanInputs in;
  in.total_memory_bytes = Total("A100-80GB");
  in.gpu_name = "A100-80GB";
  in.max_model_len = 8192;
  in.vllm_version = "0.7.3";
  const StartupPlan p = EvaluatePlan(Llama(), in);
  EXPECT_EQ(p.inputs.vllm_engine, "v0");
  EXPECT_EQ(p.requested_bytes, static_cast<int64_t>(std::floor(static_cast<double>(Total("A100-80GB")) * 0.9)));
  EXPECT_EQ(p.inputs.max_num_seqs, 256);
  EXPECT_EQ(p.inputs.max_num_batched_tokens, 8192);
  EXPECT_FALSE(p.inputs.hybrid_kv_cache_manager);
  ASSERT_TRUE(p.fits);
  const std::vector<std::string> lines = KvLogLines(p);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "# GPU blocks: " + std::to_string(p.kv_cache->num_blocks) + ", # CPU blocks: " +
                                   std::to_string((int64_t{4} << 30) / p.kv_cache->bytes_per_block));
  EXPECT_NE(lines[1].find("for 8192 tokens per request"), std::string::npos);  // no separators in V0
  // V0 is selectable up to 0.10 (VLLM_USE_V1=0), not after its removal in 0.11.
  in.vllm_version = "0.10";
  in.vllm_engine = "v0";
  EXPECT_EQ(EvaluatePlan(Llama(), in).inputs.vllm_engine, "v0");
  in.vllm_version = "0.11";
  EXPECT_THROW(EvaluatePlan(Llama(), in), InvalidArgument);
}

TEST(VllmVersion, MaxModelLenAboveTheDerivedMaximumIsRefused) {
  PlanInputs in;
  in.total_memory_bytes = Total("H100-80GB");
  in.vllm_version = "0.19";
  EXPECT_EQ(DerivedMaxModelLen(Llama()), 131072);  // llama3 rope scaling: not multiplied
  EXPECT_EQ(EvaluatePlan(Llama(), in).inputs.max_model_len, 131072);  // the default
  in.max_model_len = 131073;
  try {
    EvaluatePlan(Llama(), in);
    ADD_FAILURE();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "max_model_len");
    EXPECT_NE(std::string(e.what()).find("User-specified max_model_len (131073) is greater than the derived "
                                         "max_model_len (max_position_embeddings=131072 or model_max_length=None "
                                         "in model's config.json)."),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"), std::string::npos);
  }
  in.allow_long_max_model_len = true;
  EXPECT_EQ(EvaluatePlan(Llama(), in).inputs.max_model_len, 131073);
}

TEST(VllmVersion, BfloatCheckpointsServedAsHalfWithoutBfloatSupport) {
  EXPECT_FALSE(LookupGpu("T4").supports_bfloat16);
  EXPECT_FALSE(LookupGpu("V100-32GB").supports_bfloat16);
  EXPECT_TRUE(LookupGpu("A10").supports_bfloat16);
  PlanInputs in;
  in.total_memory_bytes = Total("V100-32GB");
  in.gpu_name = "V100-32GB";
  in.max_model_len = 4096;
  const StartupPlan p = EvaluatePlan(Llama(), in);
  EXPECT_EQ(p.inputs.dtype, "float16");
  EXPECT_NE(p.inputs.dtype_note.find("compute capability 7.0"), std::string::npos);
  in.dtype = "bfloat16";  // asked explicitly: kept (vLLM then refuses on the device; not a default)
  EXPECT_EQ(EvaluatePlan(Llama(), in).inputs.dtype, "bfloat16");
}

// The Triton top-k/top-p sampler's rows (rule sampler_kernel_programs, from 0.17): min(SMs, rows)
// programs, the GPU's SM count (gpu_catalog.json), 132 with a note for a GPU outside the catalog.
TEST(VllmVersion, SamplerRowsAreTheGpusSmCount) {
  EXPECT_EQ(LookupGpu("A100-80GB").sm_count, 108);
  EXPECT_EQ(LookupGpu("H100-80GB").sm_count, 132);
  PlanInputs in;
  in.total_memory_bytes = Total("A100-80GB");
  in.gpu_name = "A100-80GB";
  in.max_model_len = 4096;
  in.vllm_version = "0.19";
  EXPECT_EQ(EvaluatePlan(Llama(), in).inputs.activation_constants.sampler_kernel_programs, 108);
  EXPECT_TRUE(EvaluatePlan(Llama(), in).inputs.sampler_programs_note.empty());
  in.gpu_name = "";
  const StartupPlan unknown = EvaluatePlan(Llama(), in);
  EXPECT_EQ(unknown.inputs.activation_constants.sampler_kernel_programs, kUnknownGpuSmCount);
  EXPECT_NE(unknown.inputs.sampler_programs_note.find("132 SMs"), std::string::npos);
  in.vllm_version = "0.16";  // no Triton sampler yet: no rows, no note
  EXPECT_EQ(EvaluatePlan(Llama(), in).inputs.activation_constants.sampler_kernel_programs, 0);
  EXPECT_TRUE(EvaluatePlan(Llama(), in).inputs.sampler_programs_note.empty());
}

}  // namespace vllm_mem

namespace vllm_mem {
namespace {

PlanInputs H100Plan(const std::string& version) {
  PlanInputs in;
  in.total_memory_bytes = Total("H100-80GB");
  in.gpu_name = "H100-80GB";
  in.max_model_len = 8192;
  in.vllm_version = version;
  return in;
}

}  // namespace

// vllm_versions.json "model_runner": DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES from v0.22.0 (the
// release wheels' vllm/config/vllm.py), PR #44443 (V2 for dense models, v0.25.0) and PR #53183
// (V2 for every model, v0.29.0 release note); "v2_runner_cudagraph_profiling": PR #36520's
// profile_cudagraph_memory() returned 0 until PR #53306 (v0.29.0 release note).
TEST(ModelRunner, TheReleaseDecidesWhichModelsV2Serves) {
  EXPECT_EQ(Profile("0.21").v2_runner_serves, "none");
  for (const char* v : {"0.22", "0.23", "0.24"}) EXPECT_EQ(Profile(v).v2_runner_serves, "listed") << v;
  for (const char* v : {"0.25", "0.26", "0.27", "0.28"}) {
    EXPECT_EQ(Profile(v).v2_runner_serves, "dense") << v;
    EXPECT_FALSE(Profile(v).v2_runner_cudagraph_profiling) << v;
  }
  EXPECT_EQ(Profile("0.28").v2_runner_speculative_methods, (std::vector<std::string>{"eagle", "eagle3", "mtp"}));
  const ModelSpec moe = Bundled("Qwen--Qwen3-30B-A3B.json");
  ModelSpec hybrid = Llama();  // only the recurrent state matters to the choice
  hybrid.hybrid.emplace();
  // 0.22-0.24: V2 only for the listed architectures; 0.22-0.23 only unquantized and dense.
  EXPECT_EQ(ChooseModelRunner(Profile("0.21"), Llama(), "").runner, VllmModelRunner::kV1);
  EXPECT_EQ(ChooseModelRunner(Profile("0.22"), Llama(), "").runner, VllmModelRunner::kV1);  // Qwen3 only
  EXPECT_NE(ChooseModelRunner(Profile("0.22"), Llama(), "").reason.find("Qwen3ForCausalLM"), std::string::npos);
  EXPECT_EQ(ChooseModelRunner(Profile("0.23"), Llama(), "").runner, VllmModelRunner::kV2);
  EXPECT_EQ(ChooseModelRunner(Profile("0.24"), Llama(), "").runner, VllmModelRunner::kV2);
  EXPECT_EQ(ChooseModelRunner(Profile("0.25"), Llama(), "").runner, VllmModelRunner::kV2);
  ModelSpec quantized = Llama();  // a quantization_config in config.json: model_config.is_quantized
  quantized.quantization.emplace();
  EXPECT_EQ(ChooseModelRunner(Profile("0.23"), quantized, "").runner, VllmModelRunner::kV1);
  EXPECT_EQ(ChooseModelRunner(Profile("0.24"), quantized, "").runner, VllmModelRunner::kV2);
  ModelSpec qwen2_moe = moe;  // only the architecture and the experts matter to the choice
  qwen2_moe.architectures = {"Qwen2MoeForCausalLM"};
  EXPECT_EQ(ChooseModelRunner(Profile("0.23"), qwen2_moe, "").runner, VllmModelRunner::kV1);
  EXPECT_EQ(ChooseModelRunner(Profile("0.24"), qwen2_moe, "").runner, VllmModelRunner::kV2);
  EXPECT_EQ(ChooseModelRunner(Profile("0.25"), qwen2_moe, "").runner, VllmModelRunner::kV2);
  EXPECT_EQ(ChooseModelRunner(Profile("0.24"), moe, "").runner, VllmModelRunner::kV1);  // Qwen3MoeForCausalLM
  EXPECT_EQ(ChooseModelRunner(Profile("0.24"), Llama(), "ngram").runner, VllmModelRunner::kV1);
  EXPECT_EQ(ChooseModelRunner(Profile("0.28"), moe, "").runner, VllmModelRunner::kV1);
  EXPECT_EQ(ChooseModelRunner(Profile("0.28"), hybrid, "").runner, VllmModelRunner::kV1);
  // _get_v2_model_runner_unsupported_features: ngram and draft-model speculation keep V1.
  EXPECT_EQ(ChooseModelRunner(Profile("0.28"), Llama(), "ngram").runner, VllmModelRunner::kV1);
  EXPECT_EQ(ChooseModelRunner(Profile("0.28"), Llama(), "draft_model").runner, VllmModelRunner::kV1);
  EXPECT_EQ(ChooseModelRunner(Profile("0.28"), Llama(), "eagle3").runner, VllmModelRunner::kV2);
  EXPECT_NE(ChooseModelRunner(Profile("0.28"), moe, "").reason.find("MoE"), std::string::npos);
  // 0.29 (PR #53183): V2 for every model, with its measured graph profile (PR #53306).
  for (const char* v : {"0.29", "0.30", "0.31", "0.32"}) {
    EXPECT_EQ(Profile(v).v2_runner_serves, "all") << v;
    EXPECT_TRUE(Profile(v).v2_runner_cudagraph_profiling) << v;
    EXPECT_EQ(ChooseModelRunner(Profile(v), moe, "").runner, VllmModelRunner::kV2) << v;
    EXPECT_EQ(ChooseModelRunner(Profile(v), hybrid, "").runner, VllmModelRunner::kV2) << v;
    EXPECT_EQ(ChooseModelRunner(Profile(v), Llama(), "ngram").runner, VllmModelRunner::kV1) << v;
  }
}

// PR #53306: from 0.29 V2 sizes its graph memory by capturing every graph, which no rule here
// reproduces: refused where it would enter the budget, planned everywhere else.
TEST(ModelRunner, V2MeasuredGraphMemoryIsRefusedOnlyWhereItEntersTheBudget) {
  const VllmVersionProfile& v29 = Profile("0.29");
  const auto v2 = VllmModelRunner::kV2;
  EXPECT_NE(V2GraphProfileRefusal(v29, v2, true, true, false).find("enforce_eager=True"), std::string::npos);
  EXPECT_EQ(V2GraphProfileRefusal(v29, v2, false, true, false), "");  // eager / NONE: no capture
  EXPECT_EQ(V2GraphProfileRefusal(v29, v2, true, false, false), "");  // the estimate off
  EXPECT_EQ(V2GraphProfileRefusal(v29, v2, true, true, true), "");    // --kv-cache-memory skips profiling
  EXPECT_EQ(V2GraphProfileRefusal(v29, VllmModelRunner::kV1, true, true, false), "");
  EXPECT_EQ(V2GraphProfileRefusal(Profile("0.28"), v2, true, true, false), "");  // V2 returned 0 then
  PlanInputs in = H100Plan("0.29");
  EXPECT_THROW(EvaluatePlan(Llama(), in), Unsupported);
  in.enforce_eager = true;
  const StartupPlan eager = EvaluatePlan(Llama(), in);
  EXPECT_EQ(eager.inputs.model_runner, "v2");
  EXPECT_EQ(eager.ranks[0].cudagraph_applied_bytes, 0);
  in.enforce_eager = false;
  in.cudagraph_mode = CudagraphMode::kNone;
  EXPECT_NO_THROW(EvaluatePlan(Llama(), in));
}

// vllm/v1/worker/gpu/sample/sampler.py: V2's dummy sampler keeps one float32 copy of the logits
// (4 B/logit) where the V1 runner's Triton top-k/top-p path keeps 13 (sampler_bytes_per_logit).
TEST(ModelRunner, EachRunnerSamplesTheDummyLogitsItsOwnWay) {
  EXPECT_EQ(Profile("0.29").v2_sampler_bytes_per_logit, 4.0);
  PlanInputs in = H100Plan("0.29");
  in.enforce_eager = true;
  const ActivationConstants v2 = EvaluatePlan(Llama(), in).inputs.activation_constants;
  EXPECT_EQ(v2.sampler_bytes_per_logit, 4.0);
  EXPECT_EQ(v2.sampler_kernel_programs, 0);  // no Triton top-k/top-p kernel for the dummy batch
  const ActivationConstants v1 = EvaluatePlan(Llama(), H100Plan("0.22")).inputs.activation_constants;
  EXPECT_EQ(v1.sampler_bytes_per_logit, Profile("0.22").sampler_bytes_per_logit);
  EXPECT_EQ(v1.sampler_kernel_programs, Profile("0.22").sampler_kernel_programs);
  EXPECT_EQ(EvaluatePlan(Llama(), H100Plan("0.28")).inputs.activation_constants.sampler_bytes_per_logit, 4.0);
  in.sampler_bytes_per_logit = 9.0;  // a caller's own figure wins
  EXPECT_EQ(EvaluatePlan(Llama(), in).inputs.activation_constants.sampler_bytes_per_logit, 9.0);
}

// Issue #49224: with V2 serving a dense model on 0.25-0.28, the KV cache takes the whole budget
// (requested - weights - peak - non-torch), the V1 runner's graph estimate is not subtracted.
TEST(ModelRunner, V2OnADenseModelKeepsNoGraphMemoryInTheBudget) {
  const StartupPlan v24 = EvaluatePlan(Llama(), H100Plan("0.22"));  // 0.22 lists Qwen3 only
  EXPECT_EQ(v24.inputs.model_runner, "v1");
  EXPECT_TRUE(v24.inputs.cudagraph_memory_in_budget.value());
  EXPECT_GT(v24.ranks[0].cudagraph_applied_bytes, 0);
  const StartupPlan v28 = EvaluatePlan(Llama(), H100Plan("0.28"));
  EXPECT_EQ(v28.inputs.model_runner, "v2");
  EXPECT_FALSE(v28.inputs.cudagraph_memory_in_budget.value());
  EXPECT_EQ(v28.ranks[0].cudagraph_applied_bytes, 0);
  EXPECT_EQ(v28.available_kv_cache_bytes,
            v28.requested_bytes - v28.weights_bytes - v28.activation_peak_bytes - v28.non_torch_bytes);
  // The estimate itself is still reported (the capture happens after the KV cache is allocated).
  EXPECT_EQ(v28.cudagraph_bytes, v24.cudagraph_bytes);
  // A MoE model keeps the V1 runner and its estimate in the budget.
  const ModelSpec moe = Bundled("Qwen--Qwen3-30B-A3B.json");
  const StartupPlan moe28 = EvaluatePlan(moe, H100Plan("0.28"));
  EXPECT_EQ(moe28.inputs.model_runner, "v1");
  EXPECT_TRUE(moe28.inputs.cudagraph_memory_in_budget.value());
  // Asking for the budget explicitly (VLLM_USE_V2_MODEL_RUNNER=0) still puts it back.
  PlanInputs asked = H100Plan("0.28");
  asked.cudagraph_memory_in_budget = true;
  EXPECT_EQ(EvaluatePlan(Llama(), asked).available_kv_cache_bytes, v28.available_kv_cache_bytes - v28.cudagraph_bytes);
}

}  // namespace vllm_mem
