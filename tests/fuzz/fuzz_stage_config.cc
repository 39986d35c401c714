/*!
 * \file tests/fuzz/fuzz_stage_config.cc
 * \brief libFuzzer harness of the stage-config reader (ParseStageConfigText, what a vLLM-Omni
 *        stage YAML becomes after loading) and of the multi-stage check on what it returns:
 *        CheckStages, its report, and a start-up plan per stage with a small model.
 *
 * Input layout: kOptionBytes bytes of machine options (fuzz_options.h), then the JSON document.
 */
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.h"
#include "fuzz_options.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/stages/stage_check.h"
#include "vllm_mem/stages/stage_config.h"
#include "vllm_mem/stages/stage_plans.h"

using vllm_mem::fuzz::Expect;
using vllm_mem::fuzz::kGiB;
using vllm_mem::fuzz::PickCount;

namespace {

// A small Llama-shaped model for the per-stage plans: real enough to reach the KV sizing.
const vllm_mem::ModelSpec& SmallModel() {
  static const vllm_mem::ModelSpec spec = vllm_mem::ModelSpec::FromHfConfigText(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
    "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
    "num_key_value_heads": 8, "num_hidden_layers": 16, "vocab_size": 128256,
    "max_position_embeddings": 131072, "tie_word_embeddings": true})");
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < vllm_mem::fuzz::kOptionBytes) return 0;
  FuzzedDataProvider fdp(data, vllm_mem::fuzz::kOptionBytes);
  std::string_view text(reinterpret_cast<const char*>(data) + vllm_mem::fuzz::kOptionBytes,
                        size - vllm_mem::fuzz::kOptionBytes);

  vllm_mem::StageConfigOptions parse_options;
  size_t num_visible = fdp.ConsumeIntegralInRange<size_t>(0, 4);
  for (size_t i = 0; i < num_visible; ++i) {
    parse_options.cuda_visible_devices.push_back(PickCount(fdp, {0, 1, 2, 3, 7}));
  }
  parse_options.num_visible_devices = PickCount(fdp, {0, 0, 2, 4, 8});

  const char* kNames[] = {"H100-80GB", "A100-40GB", "L4", "", "no-such-gpu"};
  vllm_mem::StageCheckOptions check_options;
  size_t num_devices = fdp.ConsumeIntegralInRange<size_t>(0, 3);
  for (size_t i = 0; i < num_devices; ++i) {
    vllm_mem::DeviceMemoryInfo device;
    device.physical_id = PickCount(fdp, {0, 1, 2, 3});
    device.name = kNames[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kNames) - 1)];
    device.total_bytes = PickCount(fdp, {0, 0, 80 * kGiB, 24 * kGiB, -1});
    device.free_bytes = PickCount(fdp, {-1, -1, 70 * kGiB, 0});
    check_options.devices.push_back(device);
  }
  check_options.default_device.name =
      kNames[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kNames) - 1)];
  check_options.default_device.total_bytes = PickCount(fdp, {0, 0, 40 * kGiB});
  check_options.reserve_bytes = PickCount(fdp, {0, 0, kGiB, 100 * kGiB});
  check_options.free_is_live = fdp.ConsumeBool();
  bool with_plans = fdp.ConsumeBool();
  int64_t plan_max_model_len = PickCount(fdp, {0, 4096, 32768});

  vllm_mem::StageConfigSet config;
  try {
    config = vllm_mem::ParseStageConfigText(text, parse_options);
  } catch (const vllm_mem::InvalidArgument& e) {
    vllm_mem::fuzz::CheckMessage(e.what(), "InvalidArgument");
    return 0;
  }
  for (const auto& stage : config.stages) {
    // What the parser accepted must be consistent: a GPU stage has enough resident devices.
    if (stage.tensor_parallel_size <= 0 || stage.pipeline_parallel_size <= 0) __builtin_trap();
    if (!stage.on_cpu && static_cast<int64_t>(stage.resident_devices.size()) != stage.WorldSize()) {
      __builtin_trap();
    }
  }
  Expect([&] {
    vllm_mem::StageCheckResult result = vllm_mem::CheckStages(config, check_options);
    if (with_plans) {
      std::vector<vllm_mem::StageModel> models;
      for (const auto& stage : config.stages) {
        if (stage.on_cpu) continue;
        vllm_mem::StageModel model;
        model.stage_id = stage.stage_id;
        model.spec = SmallModel();
        model.name = "small-llama";
        model.max_model_len = plan_max_model_len;
        models.push_back(std::move(model));
      }
      Expect([&] { (void)vllm_mem::AddStagePlans(result, models); });
    }
  });
  return 0;
}
