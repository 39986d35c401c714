// The per-model memos (plan/sizing_cache.h), the KV query (kv_cache/kv_cache_query.h) and the
// sweep's column reuse: each remembered or shared answer equals the one computed afresh.
#include <functional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include <gtest/gtest.h>

#include "bundled_config.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/kv_cache/kv_cache_query.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/plan_sweep.h"
#include "vllm_mem/plan/release_resolution.h"
#include "vllm_mem/plan/sizing_cache.h"

namespace vllm_mem {
namespace {

// Full attention (Llama, the Qwen3 MoE), sliding windows (gemma-3) and MLA (DeepSeek-V3).
const char* const kModels[] = {"meta-llama--Llama-3.1-8B-Instruct.json", "google--gemma-3-27b-it.json",
                               "deepseek-ai--DeepSeek-V3.json", "Qwen--Qwen3-30B-A3B.json"};

PlanRequest Request(int64_t tp) {
  PlanRequest r;
  r.gpu_memory_utilization = 0.92;
  r.max_model_len = 8192;
  r.max_num_seqs = 256;
  r.max_num_batched_tokens = 8192;
  r.tensor_parallel_size = tp;
  return r;
}

PlanEnvironment H100() { return {LookupGpu("H100-80GB").total_memory_bytes, "H100-80GB", "", "newest known", false}; }

// The environments below only set these (the version is the request's own "").
PlanInputs InputsOf(const PlanRequest& r, const PlanEnvironment& env) {
  PlanInputs in;
  static_cast<PlanRequest&>(in) = r;
  in.total_memory_bytes = env.total_memory_bytes;
  in.gpu_name = env.gpu_name;
  in.vllm_version_source = env.vllm_version_source;
  return in;
}

// Every field of two capacities (the groups by their figures).
void ExpectSameCapacity(const KvCacheCapacity& a, const KvCacheCapacity& b) {
  EXPECT_EQ(a.num_blocks, b.num_blocks);
  EXPECT_EQ(a.num_tokens, b.num_tokens);
  EXPECT_EQ(a.max_concurrency, b.max_concurrency);
  EXPECT_EQ(a.block_size, b.block_size);
  EXPECT_EQ(a.bytes_per_block, b.bytes_per_block);
  EXPECT_EQ(a.bytes_per_request, b.bytes_per_request);
  EXPECT_EQ(a.kv_cache_bytes, b.kv_cache_bytes);
  EXPECT_EQ(a.available_bytes, b.available_bytes);
  EXPECT_EQ(a.max_model_len, b.max_model_len);
  EXPECT_EQ(a.num_blocks_per_worker, b.num_blocks_per_worker);
  EXPECT_EQ(a.kv_cache_dtype, b.kv_cache_dtype);
  EXPECT_EQ(a.num_padding_layers, b.num_padding_layers);
  EXPECT_EQ(a.mamba_state_bytes, b.mamba_state_bytes);
  EXPECT_EQ(a.mamba_page_size_padded_bytes, b.mamba_page_size_padded_bytes);
  EXPECT_EQ(a.attention_block_size, b.attention_block_size);
  EXPECT_EQ(a.hybrid_log_lines, b.hybrid_log_lines);
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (size_t i = 0; i < a.groups.size(); ++i) {
    EXPECT_EQ(a.groups[i].kind, b.groups[i].kind);
    EXPECT_EQ(a.groups[i].layer_indices, b.groups[i].layer_indices);
    EXPECT_EQ(a.groups[i].block_size, b.groups[i].block_size);
    EXPECT_EQ(a.groups[i].page_size_bytes, b.groups[i].page_size_bytes);
    EXPECT_EQ(a.groups[i].max_memory_per_request_bytes, b.groups[i].max_memory_per_request_bytes);
    EXPECT_EQ(a.groups[i].blocks_per_request, b.groups[i].blocks_per_request);
  }
}

void ExpectSamePlan(const StartupPlan& a, const StartupPlan& b) {
  EXPECT_EQ(a.fits, b.fits);
  EXPECT_EQ(a.failure_message, b.failure_message);
  EXPECT_EQ(a.weights_bytes, b.weights_bytes);
  EXPECT_EQ(a.activation_peak_bytes, b.activation_peak_bytes);
  EXPECT_EQ(a.cudagraph_bytes, b.cudagraph_bytes);
  EXPECT_EQ(a.available_kv_cache_bytes, b.available_kv_cache_bytes);
  EXPECT_EQ(a.max_model_len_that_fits, b.max_model_len_that_fits);
  EXPECT_EQ(a.inputs.vllm_version_note, b.inputs.vllm_version_note);
  EXPECT_EQ(a.inputs.max_num_seqs, b.inputs.max_num_seqs);
  EXPECT_TRUE(SamePlanRequest(a.request, b.request));
  ASSERT_EQ(a.kv_cache.has_value(), b.kv_cache.has_value());
  if (a.kv_cache) ExpectSameCapacity(*a.kv_cache, *b.kv_cache);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    EXPECT_EQ(a.ranks[i].weights_bytes, b.ranks[i].weights_bytes);
    EXPECT_EQ(a.ranks[i].num_blocks, b.ranks[i].num_blocks);
  }
}

// What a call raises: its type and message ("" when it returns).
template <typename Call>
std::string Raised(Call&& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return std::string(typeid(e).name()) + ": " + e.what();
  }
  return "";
}

}  // namespace

// A plan on the cache, first (memos filled) and again (memos read), equals the plan computed
// with nothing remembered; the request kept is the one given, not the environment's version.
TEST(SizingCache, RequestPlansEqualFreshPlans) {
  for (const char* model : kModels) {
    SCOPED_TRACE(model);
    const ModelSpec spec = testing::BundledModel(model);
    const SizingCache cache(spec);
    for (int64_t tp : {1, 2, 8}) {
      for (const double util : {0.92, 0.3}) {  // one that fits, one that fails (Llama at 0.3 still fits)
        PlanRequest r = Request(tp);
        r.gpu_memory_utilization = util;
        const PlanEnvironment env = H100();
        StartupPlan fresh;
        try {
          fresh = EvaluatePlan(spec, InputsOf(r, env));
        } catch (const InvalidArgument&) {
          EXPECT_THROW(EvaluateRequest(cache, r, env), InvalidArgument);
          EXPECT_THROW(EvaluateRequest(cache, r, env), InvalidArgument);  // an error is never remembered
          continue;
        }
        fresh.request = r;
        ExpectSamePlan(EvaluateRequest(cache, r, env), fresh);
        ExpectSamePlan(EvaluateRequest(cache, r, env), fresh);
        StartupPlan on_cache = EvaluatePlan(cache, InputsOf(r, env));  // its request: the inputs as given
        on_cache.request = r;
        ExpectSamePlan(on_cache, fresh);
      }
    }
  }
}

// The release resolution is remembered per (request, environment): another release or
// another GPU is another entry.
TEST(SizingCache, ResolutionFollowsTheEnvironment) {
  const ModelSpec spec = testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json");
  const SizingCache cache(spec);
  PlanRequest r = Request(1);
  r.gpu_memory_utilization = 0.0;  // the release's default: 0.9 before 0.20, 0.92 from it
  PlanEnvironment env = H100();
  env.vllm_version = "0.19";
  EXPECT_DOUBLE_EQ(EvaluateRequest(cache, r, env).inputs.gpu_memory_utilization, 0.9);
  env.vllm_version = "0.20";
  EXPECT_DOUBLE_EQ(EvaluateRequest(cache, r, env).inputs.gpu_memory_utilization, 0.92);
  env.vllm_version = "0.19";
  EXPECT_DOUBLE_EQ(EvaluateRequest(cache, r, env).inputs.gpu_memory_utilization, 0.9);
}

// The KV options of a request equal KvOptionsForRelease's; a bad request raises every time.
TEST(SizingCache, KvOptionsEqualTheRelease) {
  const ModelSpec spec = testing::BundledModel("google--gemma-3-27b-it.json");
  const SizingCache cache(spec);
  for (const char* version : {"", "0.10", "0.19"}) {
    KvCacheSettings s;
    s.max_model_len = 8192;
    s.vllm_version = version;
    for (int round = 0; round < 2; ++round) {
      const KvCacheOptions fresh = KvOptionsForRelease(s, 0);
      const KvCacheOptions& kept = *cache.KvOptions(s, 0);
      EXPECT_EQ(kept.cap_sliding_window_at_full, fresh.cap_sliding_window_at_full) << version;
      EXPECT_EQ(kept.kv_tokens_from_concurrency, fresh.kv_tokens_from_concurrency) << version;
      EXPECT_EQ(kept.disable_hybrid_kv_cache_manager, fresh.disable_hybrid_kv_cache_manager) << version;
      EXPECT_EQ(ComputeKvCacheCapacity(cache.kv_layouts(), {20 * kGiB}, kept).num_tokens,
                ComputeKvCacheCapacity(spec, {20 * kGiB}, fresh).num_tokens)
          << version;
    }
  }
  KvCacheSettings bad;
  bad.max_model_len = 8192;
  bad.block_size = 24;  // not one of vLLM's block sizes
  EXPECT_THROW(cache.KvOptions(bad, 0), InvalidArgument);
  EXPECT_THROW(cache.KvOptions(bad, 0), InvalidArgument);
}

// The weights remembered per weight settings equal ComputeWeights'.
TEST(SizingCache, WeightsEqualComputeWeights) {
  const ModelSpec spec = testing::BundledModel("Qwen--Qwen3-30B-A3B.json");
  const SizingCache cache(spec);
  for (int64_t tp : {1, 2, 4, 1}) {
    WeightOptions o;
    o.tensor_parallel_size = tp;
    EXPECT_EQ(cache.Weights(o)->fullest_rank_bytes, ComputeWeights(spec, o).fullest_rank_bytes) << tp;
  }
}

// The graph estimate remembered per options equals the one computed afresh, first and again,
// for options that differ in one field each (a hit must not answer for a neighbour).
TEST(SizingCache, CudagraphsEqualTheEstimate) {
  const ModelSpec spec = testing::BundledModel("Qwen--Qwen3-30B-A3B.json");
  const SizingCache cache(spec);
  std::vector<CudagraphOptions> all(5);
  all[1].max_num_seqs = 512;
  all[2].tensor_parallel_size = 2;
  all[3].capture_sizes = {1, 2, 4, 8};
  all[4].constants.bytes_per_graph_node = 12288.0;
  for (int pass = 0; pass < 2; ++pass) {
    for (const CudagraphOptions& o : all) {
      const CudagraphEstimate fresh = EstimateCudagraphMemory(spec, o);
      const CudagraphEstimate kept = *cache.Cudagraphs(o);
      EXPECT_EQ(kept.total_bytes, fresh.total_bytes);
      EXPECT_EQ(kept.capture_sizes, fresh.capture_sizes);
      EXPECT_EQ(kept.per_graph_bytes, fresh.per_graph_bytes);
    }
  }
  EXPECT_NE(cache.Cudagraphs(all[0])->total_bytes, cache.Cudagraphs(all[4])->total_bytes);
}

// Every answer of a KvCacheQuery equals the cached entry point's, for budgets that fit, that do
// not, per rank and per worker.
TEST(KvCacheQuery, AnswersEqualTheEntryPoints) {
  for (const char* model : kModels) {
    SCOPED_TRACE(model);
    const ModelSpec spec = testing::BundledModel(model);
    const KvCacheLayoutCache cache(spec);
    KvCacheOptions o;
    o.max_model_len = 32768;
    o.tensor_parallel_size = 2;
    o.pipeline_parallel_size = 2;
    const KvCacheQuery q(cache, o, 2);
    const KvCacheGeometry g = q.Geometry();
    const KvCacheGeometry expected = ComputeKvCacheGeometry(cache, o);
    EXPECT_EQ(g.bytes_per_block, expected.bytes_per_block);
    EXPECT_EQ(g.blocks_per_request, expected.blocks_per_request);
    for (const std::vector<int64_t>& available :
         {std::vector<int64_t>{20 * kGiB}, std::vector<int64_t>{kGiB / 64, 20 * kGiB},
          std::vector<int64_t>{20 * kGiB, 19 * kGiB, 18 * kGiB, 17 * kGiB}}) {
      EXPECT_EQ(q.Shortfall(available), KvCacheMemoryShortfall(cache, available, o));
      EXPECT_EQ(q.EstimateMaxModelLen(available, 131072), [&] {
        KvCacheOptions upper = o;
        upper.max_model_len = 131072;
        return EstimateMaxModelLen(cache, available, upper);
      }());
      if (KvCacheMemoryShortfall(cache, available, o).empty()) {
        ExpectSameCapacity(q.Capacity(available), ComputeKvCacheCapacity(cache, available, o));
      } else {
        EXPECT_THROW(q.Capacity(available), InsufficientMemory);
      }
    }
    EXPECT_THROW(q.Shortfall({kGiB, kGiB, kGiB}), InvalidArgument);  // neither 1, pp nor tp x pp budgets
    EXPECT_THROW(q.EstimateMaxModelLen({kGiB}, 0), InvalidArgument);
  }
}

// kv_cache_capacity() on the model's cache (its query kept with the request's options) equals
// the entry point on the release's options, first and again, whatever the budgets: a fit, not one
// request, no memory at all, the wrong number of budgets, and a length of auto fitted to each.
TEST(SizingCache, KvCapacityEqualsTheEntryPoint) {
  for (const char* model : kModels) {
    SCOPED_TRACE(model);
    const ModelSpec spec = testing::BundledModel(model);
    const SizingCache cache(spec);
    for (const int64_t length : {int64_t{8192}, int64_t{131072}, kMaxModelLenAuto}) {
      for (const int64_t tp : {int64_t{1}, int64_t{2}}) {
        KvCacheSettings s;
        s.max_model_len = length;
        s.tensor_parallel_size = tp;
        s.vllm_version = "0.19.0";
        for (const std::vector<int64_t>& available :
             {std::vector<int64_t>{20 * kGiB}, std::vector<int64_t>{kGiB / 16}, std::vector<int64_t>{0},
              std::vector<int64_t>{20 * kGiB, 19 * kGiB}, std::vector<int64_t>{kGiB, kGiB, kGiB}}) {
          SCOPED_TRACE(std::to_string(length) + " tokens, TP " + std::to_string(tp) + ", " +
                       std::to_string(available.size()) + " budgets of " + std::to_string(available[0]));
          const auto fresh = [&] {
            KvCacheOptions o = KvOptionsForRelease(s, 0);
            AutoFitKvOptions(cache.kv_layouts(), available, o);
            return ComputeKvCacheCapacity(spec, available, o);
          };
          const std::string error = Raised(fresh);
          for (int pass = 0; pass < 2; ++pass) {  // the memos filled, then read
            EXPECT_EQ(Raised([&] { cache.KvCapacity(s, 0, available); }), error);
            if (error.empty()) ExpectSameCapacity(cache.KvCapacity(s, 0, available), fresh());
          }
        }
      }
    }
  }
}

// enable_prefix_caching on a hybrid model up to 0.27 needs the Mamba cache mode spelled out
// (vLLM picks it by a flag of the model class): refused by name with mode "none", on the KV
// question and the plan alike; an attention-only model, or a mode given, plans as before. From
// 0.28 vLLM picks 'align' for every class (rule mamba_cache_mode_align_by_default), so the
// newest release plans it.
TEST(SizingCache, PrefixCachingOnAHybridNeedsTheMambaMode) {
  // nvidia/NVIDIA-Nemotron-Nano-9B-v2's dimensions and layer pattern as published
  // (https://huggingface.co/nvidia/NVIDIA-Nemotron-Nano-9B-v2/blob/main/config.json).
  const ModelSpec hybrid = ModelSpec::FromHfConfigText(
      R"({"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "torch_dtype": "bfloat16",
    "hidden_size": 4480, "num_hidden_layers": 56, "num_attention_heads": 40, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 15680, "vocab_size": 131072, "mamba_num_heads": 128,
    "mamba_head_dim": 80, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4, "chunk_size": 128,
    "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-"})");
  const ModelSpec dense = testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json");
  for (const ModelSpec* spec : {&hybrid, &dense}) {
    const SizingCache cache(*spec);
    PlanRequest r = Request(1);
    r.enable_prefix_caching = true;
    PlanEnvironment env = H100();
    const auto release = [&](const std::string& v) { r.vllm_version = env.vllm_version = v; };
    release("0.27.0");
    const auto kv = [&] { cache.KvCapacity(r, 0, {20 * kGiB}); };
    const auto plan = [&] { EvaluateRequest(cache, r, env); };
    if (spec == &hybrid) {
      for (const auto& call : {std::function<void()>(kv), std::function<void()>(plan)}) {
        try {
          call();
          ADD_FAILURE() << "planned a hybrid with prefix caching and no Mamba cache mode";
        } catch (const InvalidArgument& e) {
          EXPECT_EQ(e.field(), "enable_prefix_caching");
          EXPECT_NE(std::string(e.what()).find("mamba_cache_mode='all' or 'align'"), std::string::npos) << e.what();
        }
      }
      release("");  // the newest release: 'align' for every class
      EXPECT_NO_THROW(kv());
      EXPECT_NO_THROW(plan());
      release("0.27.0");
      r.mamba_cache_mode = "align";
    }
    EXPECT_NO_THROW(kv());
    EXPECT_NO_THROW(plan());
  }
}

// A sweep written into a finished sweep's columns equals one written into fresh memory.
TEST(PlanSweep, ReusedColumnsEqualFreshColumns) {
  const ModelSpec spec = testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json");
  SweepAxes axes;
  for (const char* g : {"H100-80GB", "L4"}) {
    axes.total_memory_bytes.push_back(LookupGpu(g).total_memory_bytes);
    axes.gpu_names.push_back(g);
  }
  axes.gpu_memory_utilization = {0.5, 0.9};
  axes.max_model_len = {4096, 131072};
  axes.tensor_parallel_size = {1, 3};  // 3: invalid rows
  SweepColumns fresh = RunSweep(spec, axes);
  SweepAxes smaller = axes;
  smaller.tensor_parallel_size = {1};
  SweepColumns reused = RunSweep(spec, axes, RunSweep(spec, smaller));  // storage shorter than the rows
  reused = RunSweep(spec, axes, std::move(reused));                     // storage as long
  EXPECT_EQ(reused.num_rows, fresh.num_rows);
  EXPECT_EQ(reused.num_fast_rows, fresh.num_fast_rows);
  int compared = 0;
  ForEachColumn(reused, [&](const char* name, const auto& column) {
    ForEachColumn(fresh, [&](const char* other, const auto& expected) {
      if constexpr (std::is_same_v<decltype(column), decltype(expected)>) {
        if (std::string(name) != other) return;
        EXPECT_EQ(column, expected) << name;
        ++compared;
      }
    });
  });
  EXPECT_EQ(compared, 38);  // every column, the twelve GiB / fraction ones included
  EXPECT_EQ(reused.invalid_reasons, fresh.invalid_reasons);
  ASSERT_EQ(fresh.invalid_reasons.size(), 1u);  // TP 3: each invalid row points at the one refusal
  EXPECT_EQ(fresh.invalid_reasons[0].rfind("tensor_parallel_size: ", 0), 0u);
}

}  // namespace vllm_mem
