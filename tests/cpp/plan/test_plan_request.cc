// The settings table (plan_request.h): one row per field, the one bounds check, and the new
// --cpu-offload-gb row in the weights step.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include "bundled_config.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/model/weights.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/plan_request.h"
#include "vllm_mem/plan/startup_plan.h"

namespace vllm_mem {
namespace {

const ModelSpec& Llama() {
  static const ModelSpec spec = testing::BundledModel("meta-llama--Llama-3.1-8B-Instruct.json");
  return spec;
}

std::string FieldOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const InvalidArgument& e) {
    return e.field();
  }
  return "";
}

// An 8192-token plan on an H100 with cpu_offload_gb GiB of weights per GPU in CPU memory.
PlanInputs Offloading(double cpu_offload_gb) {
  PlanInputs in;
  in.cpu_offload_gb = cpu_offload_gb;
  in.total_memory_bytes = LookupGpu("H100-80GB").total_memory_bytes;
  in.gpu_memory_utilization = 0.9;
  in.max_model_len = 8192;
  return in;
}

}  // namespace

TEST(PlanRequest, OneRowPerFieldKvRowsFirst) {
  const auto& rows = PlanSettingRows();
  std::set<std::string> names;
  bool in_kv = true;
  for (const SettingRow& row : rows) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;  // spelled once
    EXPECT_NE(row.help[0], '\0') << row.name;
    if (!row.kv) in_kv = false;
    EXPECT_TRUE(row.kv || !in_kv) << row.name << ": the KV rows come first";
    EXPECT_EQ(FindSettingRow(row.name), &row);
  }
  EXPECT_NE(FindSettingRow("cpu_offload_gb"), nullptr);
  EXPECT_TRUE(FindSettingRow("max_model_len")->kv);
  EXPECT_FALSE(FindSettingRow("max_num_seqs")->kv);
  EXPECT_EQ(ClosestSettingName("max_model_length"), "max_model_len");
  ValidatePlanRequest(PlanRequest{});  // the defaults are valid
}

TEST(PlanRequest, BlockSizeIsOneOfVllmsChoices) {
  // vLLM's CacheConfig.block_size is a Literal[1, 8, 16, 32, 64, 128, 256]; Python used to
  // accept any int in [1, 2^30] for it (a sweep over block_size=[3] planned silently).
  KvCacheSettings s;
  for (int64_t ok : {1, 8, 16, 32, 64, 128, 256}) {
    s.block_size = ok;
    ValidateKvCacheSettings(s);
  }
  for (int64_t bad : {2, 3, 17, 512, 1 << 20}) {
    s.block_size = bad;
    EXPECT_EQ(FieldOf([&] { ValidateKvCacheSettings(s); }), "block_size") << bad;
  }
}

TEST(PlanRequest, MaxConcurrentBatchesBoundedLikePipelineStages) {
  // One batch in flight per pipeline stage: the core used to accept up to 2^20 here while
  // Python refused above 1024. Both now take the table's bound.
  const SettingRow& row = *FindSettingRow("max_concurrent_batches");
  EXPECT_EQ(row.high, static_cast<double>(kMaxPipelineParallelSize));
  KvCacheOptions o;
  o.max_model_len = 8192;
  o.max_concurrent_batches = kMaxPipelineParallelSize + 1;
  EXPECT_EQ(FieldOf([&] { ComputeKvCacheCapacity(Llama(), {int64_t{20} << 30}, o); }), "max_concurrent_batches");
  KvCacheSettings s;
  s.max_model_len = 8192;
  s.max_concurrent_batches = kMaxPipelineParallelSize + 1;
  EXPECT_EQ(FieldOf([&] { KvOptionsForRelease(s); }), "max_concurrent_batches");
}

TEST(PlanRequest, EveryBoundNamesItsField) {
  PlanRequest r;
  r.gpu_memory_utilization = 1.5;
  EXPECT_EQ(FieldOf([&] { ValidatePlanRequest(r); }), "gpu_memory_utilization");
  r = PlanRequest{};
  r.mamba_cache_mode = "sometimes";
  EXPECT_EQ(FieldOf([&] { ValidatePlanRequest(r); }), "mamba_cache_mode");
  r = PlanRequest{};
  r.cudagraph_capture_sizes = {1, 2, 0};
  EXPECT_EQ(FieldOf([&] { ValidatePlanRequest(r); }), "cudagraph_capture_sizes[2]");
  r = PlanRequest{};
  r.cpu_offload_gb = -1.0;
  EXPECT_EQ(FieldOf([&] { ValidatePlanRequest(r); }), "cpu_offload_gb");
  r = PlanRequest{};
  r.free_memory_bytes = -2;  // -1 is "unset"
  EXPECT_EQ(FieldOf([&] { ValidatePlanRequest(r); }), "free_memory_bytes");
}

TEST(PlanRequest, KvOptionsKeepWhatTheUserSet) {
  KvCacheSettings s;
  s.max_model_len = 4096;
  s.cap_sliding_window_at_full = true;
  s.disable_hybrid_kv_cache_manager = true;
  s.vllm_version = "0.19";
  const KvCacheOptions o = KvOptionsForRelease(s, 2);
  EXPECT_TRUE(o.cap_sliding_window_at_full);
  EXPECT_TRUE(o.disable_hybrid_kv_cache_manager);
  EXPECT_EQ(o.num_speculative_tokens, 2);
  EXPECT_EQ(o.max_model_len, 4096);
}

TEST(PlanRequest, CpuOffloadLowersTheWeightsByTheBudget) {
  // vLLM's maybe_offload_to_cpu (model_executor/models/utils.py): each decoder layer's
  // parameters move to CPU, first layers first, until cpu_offload_gb GiB per GPU are used;
  // embeddings and the LM head stay. Llama-3.1-8B's 32 layers hold ~13 GiB in bf16, so a 4 GiB
  // budget is used in full and "Model loading took" drops by it.
  const StartupPlan base = EvaluatePlan(Llama(), Offloading(0.0));
  const StartupPlan offloaded = EvaluatePlan(Llama(), Offloading(4.0));
  EXPECT_EQ(base.weights_bytes - offloaded.weights_bytes, int64_t{4} << 30);
  EXPECT_GT(offloaded.available_kv_cache_bytes, base.available_kv_cache_bytes);
  // More than the layers hold: only the embedding, the LM head, the norms and buffers stay.
  const StartupPlan all = EvaluatePlan(Llama(), Offloading(100.0));
  const WeightBreakdown weights = ComputeWeights(Llama(), WeightOptions{});
  const RankWeights& w = weights.per_pp_rank.at(0);
  EXPECT_EQ(all.weights_bytes, w.embedding_bytes + w.lm_head_bytes + w.norm_bytes + w.buffer_bytes);
}

}  // namespace vllm_mem
