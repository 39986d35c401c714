#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "vllm_mem/plan/cudagraph_estimate.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

ModelSpec Bundled(const std::string& file) {
  std::ifstream in(std::string(VLLM_MEM_SOURCE_DIR) + "/python/vllm_mem/configs/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ModelSpec::FromHfConfigText(ss.str());
}
double Gib(int64_t b) { return static_cast<double>(b) / static_cast<double>(kGiB); }

}  // namespace

TEST(CudagraphEstimate, DefaultCaptureSizes) {
  auto sizes = DefaultCaptureSizes(512);
  ASSERT_EQ(sizes.size(), 51u);
  EXPECT_EQ(sizes[0], 1);
  EXPECT_EQ(sizes[3], 8);
  EXPECT_EQ(sizes[33], 248);
  EXPECT_EQ(sizes[34], 256);
  EXPECT_EQ(sizes.back(), 512);
  EXPECT_EQ(DefaultCaptureSizes(4).size(), 3u);
  EXPECT_EQ(DefaultMaxCaptureSize(256, 8192), 512);
  EXPECT_EQ(DefaultMaxCaptureSize(1024, 8192), 512);
  EXPECT_EQ(DefaultMaxCaptureSize(8, 8192), 16);
  EXPECT_EQ(DefaultMaxCaptureSize(1024, 256), 256);
}

TEST(CudagraphEstimate, ModesAndTheProfilingLine) {
  const ModelSpec llama = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  CudagraphOptions o;
  o.max_num_seqs = 1024;
  CudagraphEstimate e = EstimateCudagraphMemory(llama, o);
  EXPECT_EQ(e.profiling_line, "Profiling CUDA graph memory: FULL=51 (largest=512), PIECEWISE=51 (largest=512)");
  EXPECT_EQ(e.total_bytes, e.first_capture_bytes + e.per_graph_bytes * 100);
  EXPECT_NEAR(Gib(e.total_bytes), 0.84, 0.07);  // vLLM estimated 0.84 GiB (captured 0.91)

  o.max_num_seqs = 256;  // FULL decode graphs only up to 256 requests
  e = EstimateCudagraphMemory(llama, o);
  EXPECT_EQ(e.num_full_graphs, 35);
  EXPECT_EQ(e.largest_full, 256);
  EXPECT_EQ(e.num_piecewise_graphs, 51);

  o.mode = CudagraphMode::kPiecewise;
  EXPECT_EQ(EstimateCudagraphMemory(llama, o).num_full_graphs, 0);
  o.mode = CudagraphMode::kNone;
  EXPECT_EQ(EstimateCudagraphMemory(llama, o).total_bytes, 0);
  o.mode = CudagraphMode::kFullAndPiecewise;
  o.enforce_eager = true;
  EXPECT_EQ(EstimateCudagraphMemory(llama, o).total_bytes, 0);
}

TEST(CudagraphEstimate, FewerCaptureSizesCostLess) {
  const ModelSpec llama = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  CudagraphOptions o;
  const int64_t all = EstimateCudagraphMemory(llama, o).total_bytes;
  o.capture_sizes = {1, 2, 4, 8, 16, 32, 64};
  CudagraphEstimate few = EstimateCudagraphMemory(llama, o);
  EXPECT_LT(few.total_bytes, all);
  EXPECT_EQ(few.largest_piecewise, 64);
  o.capture_sizes = {0};
  EXPECT_THROW(EstimateCudagraphMemory(llama, o), InvalidArgument);
}

TEST(CudagraphEstimate, PipelineRanksHoldFewerLayers) {
  const ModelSpec llama = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  CudagraphOptions o;
  o.max_num_seqs = 1024;
  o.pipeline_parallel_size = 2;
  CudagraphEstimate pp2 = EstimateCudagraphMemory(llama, o);
  EXPECT_NEAR(Gib(pp2.total_bytes), 0.54, 0.05);  // vLLM estimated 0.54 GiB
}

TEST(CudagraphEstimate, ParseMode) {
  EXPECT_EQ(ParseCudagraphMode("full_and_piecewise"), CudagraphMode::kFullAndPiecewise);
  EXPECT_EQ(CudagraphModeName(ParseCudagraphMode("PIECEWISE")), "PIECEWISE");
  EXPECT_THROW(ParseCudagraphMode("sometimes"), InvalidArgument);
}

}  // namespace vllm_mem
