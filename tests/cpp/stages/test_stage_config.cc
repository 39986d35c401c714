#include <gtest/gtest.h>

#include <string>

#include "vllm_mem/base/error.h"
#include "vllm_mem/stages/stage_config.h"

namespace vllm_mem {
namespace {

// The seed's Qwen3-Omni-MoE layout (old format), as PyYAML + json.dumps hands it over.
const char* kSeedStageArgs = R"({"stage_args": [
  {"stage_id": 0, "runtime": {"devices": "0,1"},
   "engine_args": {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.6}},
  {"stage_id": 1, "runtime": {"devices": "1"}, "engine_args": {"gpu_memory_utilization": 0.3}},
  {"stage_id": 2, "runtime": {"devices": "0"}, "engine_args": {"gpu_memory_utilization": 0.1}}]})";

std::string ErrorOf(const std::string& text, const StageConfigOptions& options = {}) {
  try {
    ParseStageConfigText(text, options);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(StageConfig, ReadsTheSeedStageArgs) {
  StageConfigSet set = ParseStageConfigText(kSeedStageArgs);
  EXPECT_EQ(set.format, StageConfigFormat::kStageArgs);
  ASSERT_EQ(set.stages.size(), 3u);
  EXPECT_EQ(set.stages[0].resident_devices, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(set.stages[0].tensor_parallel_size, 2);
  EXPECT_EQ(set.stages[0].utilization_field, "engine_args.gpu_memory_utilization");
  EXPECT_EQ(set.stages[1].resident_devices, (std::vector<int64_t>{1}));
  EXPECT_EQ(set.stages[1].utilization_text, "0.3");
  EXPECT_EQ(set.stages[2].utilization_ppm, 100000);
  EXPECT_TRUE(set.stages[2].enforce_eager);  // documented default
}

TEST(StageConfig, NewFormatFlatKeysAndPrecedence) {
  StageConfigSet set = ParseStageConfigText(R"({"stages": [
    {"stage_id": 0, "devices": "0,1", "tensor_parallel_size": 2, "gpu_memory_utilization": 0.6,
     "enforce_eager": false, "max_num_batched_tokens": 32768},
    {"stage_id": 1, "devices": 1, "gpu_memory_utilization": 0.5,
     "engine_args": {"gpu_memory_utilization": 0.3}, "runtime": {"devices": "0"}}],
    "platforms": {"npu": {"stages": []}}})");
  EXPECT_EQ(set.format, StageConfigFormat::kStages);
  EXPECT_FALSE(set.stages[0].enforce_eager);
  EXPECT_EQ(set.stages[0].max_num_batched_tokens, 32768);
  EXPECT_EQ(set.stages[0].utilization_field, "gpu_memory_utilization");
  // engine_args wins over the flat key, runtime.devices over devices.
  EXPECT_EQ(set.stages[1].utilization_text, "0.3");
  EXPECT_EQ(set.stages[1].resident_devices, (std::vector<int64_t>{0}));
  bool platforms_noted = false;
  for (const auto& n : set.notes) platforms_noted |= n.find("platforms") != std::string::npos;
  EXPECT_TRUE(platforms_noted);
}

TEST(StageConfig, DefaultsAreVllmOmnisDocumentedOnes) {
  StageConfigSet set = ParseStageConfigText(R"({"stages": [{"stage_id": 3}]})");
  EXPECT_TRUE(set.stages[0].devices_defaulted);
  EXPECT_EQ(set.stages[0].resident_devices, (std::vector<int64_t>{0}));
  EXPECT_TRUE(set.stages[0].utilization_defaulted);
  EXPECT_EQ(set.stages[0].utilization_text, "0.8");
  EXPECT_GE(set.notes.size(), 2u);
}

TEST(StageConfig, DevicesMapThroughCudaVisibleDevices) {
  StageConfigOptions options;
  options.cuda_visible_devices = ParseCudaVisibleDevices("4, 6,7");
  ASSERT_EQ(options.cuda_visible_devices, (std::vector<int64_t>{4, 6, 7}));
  StageConfigSet set = ParseStageConfigText(kSeedStageArgs, options);
  EXPECT_EQ(set.stages[0].logical_devices, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(set.stages[0].physical_devices, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(set.stages[1].physical_devices, (std::vector<int64_t>{6}));
  EXPECT_EQ(set.stages[2].physical_devices, (std::vector<int64_t>{4}));
}

TEST(StageConfig, ExtraDevicesCarryNothing) {
  StageConfigSet set = ParseStageConfigText(R"({"stages": [{"stage_id": 0, "devices": "0,1,2"}]})");
  EXPECT_EQ(set.stages[0].physical_devices.size(), 3u);
  EXPECT_EQ(set.stages[0].resident_devices, (std::vector<int64_t>{0}));
}

TEST(StageConfig, CpuStagesHaveNoGpuBudget) {
  StageConfigSet set = ParseStageConfigText(R"({"stages": [{"stage_id": 0, "devices": "cpu"}]})");
  EXPECT_TRUE(set.stages[0].on_cpu);
  EXPECT_TRUE(set.stages[0].resident_devices.empty());
}

TEST(StageConfig, BadInputNamesStageAndField) {
  struct Case {
    std::string text;
    std::string want;  // substring of the message
  } cases[] = {
      {R"([1, 2])", "top level"},
      {R"({"model": "x"})", "missing the stages"},
      {R"({"stages": {"stage_id": 0}})", "stages: must be a list"},
      {R"({"stages": [{"devices": "0"}]})", "stages[0] stage_id: missing"},
      {R"({"stages": [{"stage_id": 0}, {"stage_id": 0, "devices": "1"}]})",
       "stages[1] (stage 0) stage_id: duplicate"},
      {R"({"stages": [{"stage_id": 1, "devices": "0,1", "tensor_parallel_size": 4}]})",
       "stages[0] (stage 1) tensor_parallel_size: tensor_parallel_size 4 needs 4 GPU(s)"},
      {R"({"stage_args": [{"stage_id": 2, "engine_args": {"gpu_memory_utilization": 1.2}}]})",
       "stage_args[0] (stage 2) engine_args.gpu_memory_utilization: must be in (0, 1]"},
      {R"({"stages": [{"stage_id": 2, "gpu_memory_utilization": 0}]})",
       "(stage 2) gpu_memory_utilization"},
      {R"({"stages": [{"stage_id": 2, "gpu_memory_utilization": "0.5"}]})",
       "(stage 2) gpu_memory_utilization: must be a number"},
      {R"({"stages": [{"stage_id": 2, "devices": "0,x"}]})", "(stage 2) devices: device 'x'"},
      {R"({"stages": [{"stage_id": 2, "devices": "1,1", "tensor_parallel_size": 2}]})",
       "(stage 2) devices: lists GPU 1 twice"},
      {R"({"stages": [{"stage_id": 2, "tensor_parallel_size": 0}]})", "(stage 2) tensor_parallel_size"},
      {R"({"stages": [{"stage_id": 2, "engine_args": [1]}]})", "stages[0] engine_args: must be a mapping"},
      {R"({"stages": ["x"]})", "stages[0]: must be a mapping"},
  };
  for (const auto& c : cases) {
    std::string msg = ErrorOf(c.text);
    EXPECT_NE(msg.find(c.want), std::string::npos) << c.text << " -> " << msg;
  }
}

TEST(StageConfig, DeviceOutsideTheVisibleSet) {
  StageConfigOptions visible;
  visible.cuda_visible_devices = {2, 3};
  std::string msg = ErrorOf(R"({"stages": [{"stage_id": 5, "runtime": {"devices": "2"}}]})", visible);
  EXPECT_NE(msg.find("stages[0] (stage 5) runtime.devices: device index 2 is outside the visible set: "
                     "CUDA_VISIBLE_DEVICES=2,3"),
            std::string::npos)
      << msg;
  StageConfigOptions counted;
  counted.num_visible_devices = 2;
  msg = ErrorOf(kSeedStageArgs, counted);
  EXPECT_EQ(msg, "");
  msg = ErrorOf(R"({"stages": [{"stage_id": 0, "devices": 2}]})", counted);
  EXPECT_NE(msg.find("(stage 0) devices: device index 2 is outside the visible set: 2 GPU(s)"), std::string::npos)
      << msg;
}

TEST(StageConfig, UtilizationText) {
  EXPECT_EQ(FormatUtilizationPpm(900000), "0.9");
  EXPECT_EQ(FormatUtilizationPpm(1000000), "1.0");
  EXPECT_EQ(FormatUtilizationPpm(1100000), "1.1");
  EXPECT_EQ(FormatUtilizationPpm(250000), "0.25");
  EXPECT_EQ(FormatUtilizationPpm(-50000), "-0.05");
  EXPECT_EQ(FormatUtilization(0.6), "0.6");
  EXPECT_EQ(FormatUtilization(1.0), "1.0");
  EXPECT_EQ(FormatUtilization(0.6 + 0.3), "0.8999999999999999");  // why sums go through ppm
}

}  // namespace
}  // namespace vllm_mem
