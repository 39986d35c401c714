// Regression tests of the stages area for the defect classes the libFuzzer harnesses of tests/fuzz
// found (and the earlier external fuzzing pass of issue 9 reported), and for the inputs vLLM
// refuses that the core used to size anyway (issue 10). docs/fuzzing.md lists each finding and
// its fix. Every test below failed (undefined behaviour under UBSan, a wrong number, or
// unbounded work) on the code before the fix.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fuzz_regression.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/plan/cudagraph_estimate.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/stages/stage_check.h"
#include "vllm_mem/stages/stage_config.h"

// In vllm_mem::testing, beside the shared helpers (fuzz_regression.h).
namespace vllm_mem::testing {
namespace {

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
      InvalidArgumentOf(
          [&] { ParseStageConfigText(R"({"stages": [{"stage_id": 0, "devices": ")" + long_value + "\"}]}"); }),
  };
  for (const auto& e : errors) {
    EXPECT_LE(std::string(e.what()).size(), 300u) << e.what();
    EXPECT_EQ(std::string(e.what()).find(long_value), std::string::npos);
  }
  EXPECT_EQ(EchoValue("abc"), "'abc'");
  EXPECT_EQ(EchoValue(long_value), "'" + std::string(80, 'x') + "'... (5000 bytes)");
  // Invalid UTF-8 from a GPU name or CUDA_VISIBLE_DEVICES comes back escaped (fuzz_gpu_name).
  for (const auto& e :
       {InvalidArgumentOf([] { LookupGpu("QQ\xff"); }), InvalidArgumentOf([] { ParseCudaVisibleDevices("0,\xff"); })}) {
    EXPECT_NE(std::string(e.what()).find("\\xff"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vllm_mem::testing
