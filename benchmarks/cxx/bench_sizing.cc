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
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"

namespace {

// Calls per timed batch: enough that clock resolution is negligible for a ~1 us call.
constexpr int kCallsPerBatch = 200;
// An H100's budget after weights, roughly: what a planner asks about.
constexpr int64_t kAvailableBytes = int64_t{60} << 30;

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
  const std::vector<std::string> models = {"meta-llama--Llama-3.1-8B-Instruct", "Qwen--Qwen3-30B-A3B",
                                           "meta-llama--Llama-3.1-70B-Instruct"};
  std::printf("model\tfunction\tmedian_ns\tmin_ns\n");
  for (const std::string& name : models) {
    std::ifstream in(std::filesystem::path(argv[1]) / (name + ".json"));
    if (!in) {
      std::fprintf(stderr, "missing config %s\n", name.c_str());
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    const vllm_mem::ModelSpec spec = vllm_mem::ModelSpec::FromHfConfigText(text.str());

    vllm_mem::WeightOptions w;
    w.tensor_parallel_size = 2;
    auto [wm, wmin] = Time([&] { return vllm_mem::WeightBytes(spec, w); }, batches);
    std::printf("%s\tweight_bytes\t%.1f\t%.1f\n", name.c_str(), wm, wmin);

    vllm_mem::KvCacheOptions k;
    k.max_model_len = 8192;
    k.tensor_parallel_size = 2;
    try {
      auto [km, kmin] = Time(
          [&] { return vllm_mem::ComputeKvCacheCapacity(spec, {kAvailableBytes}, k).num_blocks; }, batches);
      std::printf("%s\tkv_cache_capacity\t%.1f\t%.1f\n", name.c_str(), km, kmin);
    } catch (const std::exception& e) {
      std::printf("%s\tkv_cache_capacity\tnan\tnan\t# %s\n", name.c_str(), e.what());
    }
  }
  return 0;
}
