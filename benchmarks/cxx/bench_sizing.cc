/*!
 * \file benchmarks/cxx/bench_sizing.cc
 * \brief How long one sizing call takes in C++: WeightBytes and ComputeKvCacheCapacity on
 *        bundled configs. Prints one tab-separated line per (model, function): median and
 *        minimum nanoseconds per call over many timed batches.
 *
 *   bench_sizing CONFIG_DIR [repeats]
 */
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/kv_cache/kv_cache_layout.h"
#include "vllm_mem/plan/startup_plan.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"

namespace {

// Calls per timed batch: enough that clock resolution is negligible for a ~1 us call.
constexpr int kCallsPerBatch = 200;
// An H100's budget after weights, roughly: what a planner asks about.
constexpr int64_t kAvailableBytes = int64_t{60} << 30;
// An H100-80GB as CUDA reports it (the plan's device).
constexpr int64_t kPlanTotalBytes = 85520809984;

volatile int64_t g_sink = 0;  // keeps the optimizer from dropping the calls

/*! Median and minimum nanoseconds per call over \p batches batches. */
std::pair<double, double> Time(const std::function<int64_t()>& call, int batches) {
  std::vector<double> per_call;
  for (int i = 0; i < 5; ++i) g_sink = g_sink + call();  // warm caches
  for (int b = 0; b < batches; ++b) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCallsPerBatch; ++i) g_sink = g_sink + call();
    const auto stop = std::chrono::steady_clock::now();
    per_call.push_back(std::chrono::duration<double, std::nano>(stop - start).count() / kCallsPerBatch);
  }
  std::sort(per_call.begin(), per_call.end());
  return {per_call[per_call.size() / 2], per_call.front()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CONFIG_DIR [batches]\n", argv[0]);
    return 2;
  }
  const int batches = argc > 2 ? std::max(5, std::atoi(argv[2])) : 101;
  // The models of benchmarks/bench_sizing.py, with its TP sizes.
  const std::vector<std::pair<std::string, int64_t>> models = {{"meta-llama--Llama-3.1-8B-Instruct", 1},
                                                               {"Qwen--Qwen3-30B-A3B", 1},
                                                               {"google--gemma-3-27b-it", 2},
                                                               {"deepseek-ai--DeepSeek-V3", 8}};
  std::printf("model\tfunction\tmedian_ns\tmin_ns\n");
  for (const auto& [name, tp] : models) {
    std::ifstream in(std::filesystem::path(argv[1]) / (name + ".json"));
    if (!in) {
      std::fprintf(stderr, "missing config %s\n", name.c_str());
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    const vllm_mem::ModelSpec spec = vllm_mem::ModelSpec::FromHfConfigText(text.str());

    vllm_mem::WeightOptions w;
    w.tensor_parallel_size = tp;
    auto [wm, wmin] = Time([&] { return vllm_mem::WeightBytes(spec, w); }, batches);
    std::printf("%s\tweight_bytes\t%.1f\t%.1f\n", name.c_str(), wm, wmin);

    vllm_mem::KvCacheOptions k;
    k.max_model_len = 8192;
    k.tensor_parallel_size = tp;
    // The layout built per call (the ModelSpec overloads) and cached (what Python's ModelSpec
    // keeps): the difference is what kv_cache_layout.h saves per call.
    const vllm_mem::KvCacheLayoutCache cache(spec);
    vllm_mem::PlanInputs plan;
    plan.total_memory_bytes = kPlanTotalBytes;
    plan.gpu_memory_utilization = 0.92;
    plan.max_model_len = 8192;
    plan.tensor_parallel_size = tp;
    plan.max_num_seqs = 256;
    plan.max_num_batched_tokens = 8192;
    plan.cudagraph_memory_in_budget = true;
    const std::vector<std::pair<const char*, std::function<int64_t()>>> calls = {
        {"kv_cache_capacity", [&] { return vllm_mem::ComputeKvCacheCapacity(spec, {kAvailableBytes}, k).num_blocks; }},
        {"kv_cache_capacity_cached",
         [&] { return vllm_mem::ComputeKvCacheCapacity(cache, {kAvailableBytes}, k).num_blocks; }},
        {"plan", [&] { return vllm_mem::EvaluatePlan(spec, plan).available_kv_cache_bytes; }},
        {"plan_cached", [&] { return vllm_mem::EvaluatePlan(spec, plan, &cache).available_kv_cache_bytes; }},
    };
    for (const auto& [function, call] : calls) {
      try {
        auto [m, low] = Time(call, batches);
        std::printf("%s\t%s\t%.1f\t%.1f\n", name.c_str(), function, m, low);
      } catch (const std::exception& e) {
        std::printf("%s\t%s\tnan\tnan\t# %s\n", name.c_str(), function, e.what());
      }
    }
  }
  return 0;
}
