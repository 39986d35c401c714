/*!
 * \file tests/fuzz/fuzz_model_config.cc
 * \brief libFuzzer harness of the config.json reader (ModelSpec::FromHfConfigText) and of what
 *        runs on the model it returns: parameter count, weights per GPU, KV-cache capacity,
 *        max_model_len estimates and the start-up plan with its suggestions and report.
 *
 * Input layout: kOptionBytes bytes of serving options (fuzz_options.h), then config.json text.
 */
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.h"
#include "fuzz_options.h"
#include "vllm_mem/kv_cache/kv_cache_capacity.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"
#include "vllm_mem/plan/plan_suggestions.h"
#include "vllm_mem/plan/startup_plan.h"

using vllm_mem::fuzz::Expect;
using vllm_mem::fuzz::kGiB;
using vllm_mem::fuzz::PickCount;
using vllm_mem::fuzz::PickFraction;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < vllm_mem::fuzz::kOptionBytes) return 0;
  FuzzedDataProvider fdp(data, vllm_mem::fuzz::kOptionBytes);
  std::string_view text(reinterpret_cast<const char*>(data) + vllm_mem::fuzz::kOptionBytes,
                        size - vllm_mem::fuzz::kOptionBytes);

  const char* kDtypes[] = {"auto", "bfloat16", "float16", "float32", "half", "fp8", "bogus"};
  const char* kKvDtypes[] = {"auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "int3"};
  const char* kQuant[] = {"", "", "fp8", "awq", "gptq", "bitsandbytes", "nonsense"};
  int64_t tp = PickCount(fdp, {1, 1, 2, 4, 8, 3, 16});
  int64_t pp = PickCount(fdp, {1, 1, 2, 4, 3});
  int64_t max_model_len = PickCount(fdp, {0, 4096, 8192, 32768, 131072, 1, 100000});
  int64_t block_size = PickCount(fdp, {0, 16, 32, 64, 1, 128, 17});
  int64_t max_num_seqs = PickCount(fdp, {256, 1, 128, 1024, 0});
  int64_t max_num_batched_tokens = PickCount(fdp, {8192, 2048, 16384, 1, 0});
  int64_t total_gib = PickCount(fdp, {80, 24, 40, 141, 16, 0});
  int64_t free_bytes = PickCount(fdp, {-1, -1, 70 * kGiB, kGiB, 0});
  int64_t kv_cache_memory_bytes = PickCount(fdp, {0, 0, 0, 10 * kGiB, 1});
  int64_t max_capture = PickCount(fdp, {0, 0, 512, 8, 1024});
  double utilization = PickFraction(fdp, {0.92, 0.9, 0.5, 1.0, 0.0, 1.5, 1e-9});
  std::string dtype = kDtypes[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kDtypes) - 1)];
  std::string kv_dtype = kKvDtypes[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kKvDtypes) - 1)];
  std::string quant = kQuant[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kQuant) - 1)];
  bool enforce_eager = fdp.ConsumeBool();
  bool hybrid_off = fdp.ConsumeBool();
  std::vector<int64_t> capture_sizes;
  if (fdp.ConsumeBool()) {
    capture_sizes = {1, 2, 4, 8, PickCount(fdp, {16, 32, 512, 0, -1})};
  }

  // Half the inputs read any model_type as a generic estimate, so families without rules (and
  // mutated model_type strings) still reach the sizing code behind the reader.
  const bool allow_unknown = fdp.ConsumeBool();

  vllm_mem::ModelSpec spec;
  try {
    spec = vllm_mem::ModelSpec::FromHfConfigText(text, vllm_mem::ModelReadOptions{allow_unknown});
  } catch (const vllm_mem::InvalidArgument& e) {
    vllm_mem::fuzz::CheckMessage(e.what(), "InvalidArgument");
    return 0;
  } catch (const vllm_mem::Unsupported& e) {
    vllm_mem::fuzz::CheckMessage(e.what(), "Unsupported");
    return 0;
  }
  // A spec the reader accepted must be one the rest of the core can size.
  if (spec.num_layers <= 0 || static_cast<int64_t>(spec.layers.size()) != spec.num_layers) {
    __builtin_trap();
  }

  Expect([&] { (void)vllm_mem::NumParameters(spec); });
  Expect([&] {
    vllm_mem::WeightOptions options;
    options.dtype = dtype;
    options.quantization = quant;
    options.tensor_parallel_size = tp;
    options.pipeline_parallel_size = pp;
    auto weights = vllm_mem::ComputeWeights(spec, options);
    if (weights.fullest_rank_bytes < 0) __builtin_trap();  // a plausible wrong number
  });

  vllm_mem::KvCacheOptions kv;
  kv.max_model_len = max_model_len;
  kv.block_size = block_size;
  kv.kv_cache_dtype = kv_dtype;
  kv.model_dtype = dtype;
  kv.tensor_parallel_size = tp;
  kv.pipeline_parallel_size = pp;
  kv.max_num_batched_tokens = max_num_batched_tokens;
  kv.disable_hybrid_kv_cache_manager = hybrid_off;
  int64_t available_bytes = 0;
  Expect([&] { available_bytes = vllm_mem::fuzz::kGiB * (total_gib % 1024); });
  Expect([&] {
    auto capacity = vllm_mem::ComputeKvCacheCapacity(spec, {available_bytes}, kv);
    if (capacity.num_blocks < 0 || capacity.num_tokens < 0 || capacity.max_concurrency < 0) {
      __builtin_trap();
    }
    (void)vllm_mem::KvCacheLogLines(capacity);
  });
  Expect([&] {
    int64_t len = vllm_mem::EstimateMaxModelLen(spec, {available_bytes}, kv);
    if (len < 0 || len > kv.max_model_len) __builtin_trap();
  });
  Expect([&] { (void)vllm_mem::AutoFitMaxModelLen(spec, {available_bytes}, kv); });

  vllm_mem::PlanInputs inputs;
  inputs.total_memory_bytes = total_gib > 0 && total_gib < (int64_t{1} << 20)
                                  ? total_gib * kGiB : total_gib;
  inputs.free_memory_bytes = free_bytes;
  inputs.gpu_memory_utilization = utilization;
  inputs.max_model_len = max_model_len;
  inputs.tensor_parallel_size = tp;
  inputs.pipeline_parallel_size = pp;
  inputs.max_num_seqs = max_num_seqs;
  inputs.max_num_batched_tokens = max_num_batched_tokens;
  inputs.dtype = dtype;
  inputs.quantization = quant;
  inputs.kv_cache_dtype = kv_dtype;
  inputs.block_size = block_size;
  inputs.enforce_eager = enforce_eager;
  inputs.cudagraph_capture_sizes = capture_sizes;
  inputs.max_cudagraph_capture_size = max_capture;
  inputs.kv_cache_memory_bytes = kv_cache_memory_bytes;
  Expect([&] {
    vllm_mem::StartupPlan plan = vllm_mem::EvaluatePlan(spec, inputs);
    if (plan.fits && (!plan.kv_cache || plan.kv_cache->num_blocks <= 0)) __builtin_trap();
    if (plan.fits && plan.kv_cache->num_tokens < 0) __builtin_trap();
    // The suggestions re-plan every lever; the report's text is built in Python from these.
    (void)vllm_mem::SuggestPlanChanges(spec, plan);
  });
  return 0;
}
