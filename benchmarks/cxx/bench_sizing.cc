/*!
 * \file benchmarks/cxx/bench_sizing.cc
 * \brief How long one sizing call takes in C++: WeightBytes and ComputeKvCacheCapacity on
 *        bundled configs. Prints one tab-separated line per (model, function): median and
 *        minimum nanoseconds per call over many timed batches.
 *
 *   bench_sizing CONFIG_DIR [repeats [sweep | FUNCTION]]
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
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/plan_request.h"
#include "vllm_mem/plan/plan_sweep.h"
#include "vllm_mem/plan/sizing_cache.h"
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

/*! benchmarks/workers/vllm_mem_calls.py's two sweeps of Llama-3.1-8B (RunSweep alone, no
 *  conversion to NumPy), best plans per second over a few runs. */
int SweepRates(const std::filesystem::path& configs, int batches) {
  std::ifstream in(configs / "meta-llama--Llama-3.1-8B-Instruct.json");
  std::stringstream text;
  text << in.rdbuf();
  const vllm_mem::ModelSpec spec = vllm_mem::ModelSpec::FromHfConfigText(text.str());
  vllm_mem::SweepAxes bench;
  for (const vllm_mem::GpuInfo& g : vllm_mem::GpuCatalog()) {
    bench.total_memory_bytes.push_back(g.total_memory_bytes);
    bench.gpu_names.push_back(g.name);
  }
  for (int k = 0; k < 50; ++k) bench.gpu_memory_utilization.push_back(0.5 + 0.01 * k);
  bench.max_model_len = {2048, 4096, 8192, 16384, 32768, 65536, 131072};
  bench.tensor_parallel_size = {1, 2, 4, 8};
  bench.kv_cache_dtype = {"auto", "fp8"};
  bench.max_num_seqs = {128, 256, 512};
  vllm_mem::SweepAxes lengths;
  for (const char* name : {"H100-80GB", "H200-141GB", "A100-80GB", "L40S"}) {
    lengths.total_memory_bytes.push_back(vllm_mem::LookupGpu(name).total_memory_bytes);
    lengths.gpu_names.push_back(name);
  }
  for (int k = 1; k <= 128; ++k) lengths.max_model_len.push_back(1024 * k);
  lengths.tensor_parallel_size = {1, 2, 4, 8};
  lengths.kv_cache_dtype = {"auto", "fp8"};
  for (int k = 0; k < 16; ++k) lengths.gpu_memory_utilization.push_back(0.5 + 0.03 * k);
  const int runs = std::max(3, batches / 20);
  for (auto* axes : {&bench, &lengths}) {
    double best = 0.0;
    for (int r = 0; r < runs; ++r) {
      const auto start = std::chrono::steady_clock::now();
      const vllm_mem::SweepColumns c = vllm_mem::RunSweep(spec, *axes);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::max(best, static_cast<double>(c.num_rows) / s);
    }
    std::printf("meta-llama--Llama-3.1-8B-Instruct\t%s\t%.0f\tplans/s\n",
                axes == &bench ? "sweep_bench_grid" : "sweep_max_model_len_grid", best);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CONFIG_DIR [batches]\n", argv[0]);
    return 2;
  }
  const int batches = argc > 2 ? std::max(5, std::atoi(argv[2])) : 101;
  // "sweep": the sweeps alone (for a profile of RunSweep); a function's name: that call alone.
  const std::string only = argc > 3 ? argv[3] : "";
  if (only == "sweep") return SweepRates(argv[1], batches);
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
    vllm_mem::KvCacheSettings settings;
    settings.max_model_len = 8192;
    settings.tensor_parallel_size = tp;
    vllm_mem::PlanInputs plan;
    plan.total_memory_bytes = kPlanTotalBytes;
    plan.gpu_memory_utilization = 0.92;
    plan.max_model_len = 8192;
    plan.tensor_parallel_size = tp;
    plan.max_num_seqs = 256;
    plan.max_num_batched_tokens = 8192;
    plan.cudagraph_memory_in_budget = true;
    const vllm_mem::SizingCache sizing(spec);
    const vllm_mem::PlanRequest request = plan;
    const vllm_mem::PlanEnvironment environment{kPlanTotalBytes, "", "", "newest known", false};
    const std::vector<std::pair<const char*, std::function<int64_t()>>> calls = {
        {"kv_cache_capacity", [&] { return vllm_mem::ComputeKvCacheCapacity(spec, {kAvailableBytes}, k).num_blocks; }},
        {"kv_cache_capacity_cached",
         [&] { return vllm_mem::ComputeKvCacheCapacity(cache, {kAvailableBytes}, k).num_blocks; }},
        // What Python's kv_cache_capacity() crosses into: a request object, the release's KV
        // rules applied per call, the cached layout.
        {"kv_cache_capacity_request",
         [&] {
           return vllm_mem::ComputeKvCacheCapacity(cache, {kAvailableBytes}, vllm_mem::KvOptionsForRelease(settings))
               .num_blocks;
         }},
        // The KV options remembered per request (Python's path: the model's SizingCache).
        {"kv_cache_capacity_sizing",
         [&] {
           return vllm_mem::ComputeKvCacheCapacity(sizing.kv_layouts(), {kAvailableBytes},
                                                   *sizing.KvOptions(settings, 0))
               .num_blocks;
         }},
        {"plan", [&] { return vllm_mem::EvaluatePlan(spec, plan).available_kv_cache_bytes; }},
        {"plan_cached", [&] { return vllm_mem::EvaluatePlan(spec, plan, &cache).available_kv_cache_bytes; }},
        // Python's plan(): a request in an environment on the model's SizingCache.
        {"plan_request",
         [&] { return vllm_mem::EvaluateRequest(sizing, request, environment).available_kv_cache_bytes; }},
    };
    for (const auto& [function, call] : calls) {
      if (!only.empty() && only != function) continue;
      try {
        auto [m, low] = Time(call, batches);
        std::printf("%s\t%s\t%.1f\t%.1f\n", name.c_str(), function, m, low);
      } catch (const std::exception& e) {
        std::printf("%s\t%s\tnan\tnan\t# %s\n", name.c_str(), function, e.what());
      }
    }
  }
  return only.empty() ? SweepRates(argv[1], batches) : 0;
}
