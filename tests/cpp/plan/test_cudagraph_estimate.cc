#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "vllm_mem/plan/cudagraph_estimate.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/base/units.h"
#include "bundled_config.h"

namespace vllm_mem {
namespace {

ModelSpec Bundled(const std::string& file) { return testing::BundledModel(file); }
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
  EXPECT_EQ(CudagraphCaptureCountsLine(e), "Profiling CUDA graph memory: FULL=51 (largest=512), PIECEWISE=51 (largest=512)");
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
  EXPECT_EQ(CudagraphCaptureCountsLine(EstimateCudagraphMemory(llama, o)), "");  // no graph: vLLM prints no line
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

// Kernel nodes per decoder layer (cudagraph_estimate.h): attention 6 + gated MLP 4 (+2 all-reduces
// under TP), fused MoE 9 (+3 shared experts, +1 shared gate), ungated / parallel MLP 3.
TEST(CudagraphEstimate, GraphNodesCountKernelsNotHiddenSize) {
  const ModelSpec llama8 = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  const ModelSpec llama70 = Bundled("meta-llama--Llama-3.1-70B-Instruct.json");
  const ModelSpec qwen3moe = Bundled("Qwen--Qwen3-30B-A3B.json");
  const ModelSpec gptoss = Bundled("openai--gpt-oss-20b.json");
  const ModelSpec phi = Bundled("microsoft--phi-2.json");
  EXPECT_EQ(GraphNodesPerRank(llama8, 1, 0, 32), 32 * 10);
  EXPECT_EQ(GraphNodesPerRank(llama8, 2, 0, 32), 32 * 12);
  EXPECT_EQ(GraphNodesPerRank(llama8, 1, 0, 16), 16 * 10);  // a pipeline stage
  EXPECT_EQ(GraphNodesPerRank(llama70, 4, 0, 80), 80 * 12);
  EXPECT_EQ(GraphNodesPerRank(qwen3moe, 1, 0, 48), 48 * 15);
  EXPECT_EQ(GraphNodesPerRank(gptoss, 2, 0, 24), 24 * 17);
  EXPECT_EQ(GraphNodesPerRank(phi, 1, 0, 32), 32 * 9);
  EXPECT_THROW(GraphNodesPerRank(llama8, 1, 4, 2), InvalidArgument);
  EXPECT_THROW(GraphNodesPerRank(llama8, 1, 0, 33), InvalidArgument);
  EXPECT_THROW(GraphNodesPerRank(llama8, 0, 0, 32), InvalidArgument);

  // The per-graph cost follows the nodes: Llama-70B at TP 2 is 960 nodes x 16 KiB = 15 MiB,
  // where vLLM v0.19 measured 20 MiB (PIECEWISE) and 12 MiB (FULL) per graph
  // (tests/data/heldout_startups.jsonl); the old 45.1 x layers x hidden gave 28 MiB.
  CudagraphOptions o;
  o.max_num_seqs = 1024;
  o.tensor_parallel_size = 2;
  const CudagraphEstimate e = EstimateCudagraphMemory(llama70, o);
  EXPECT_EQ(e.graph_nodes_per_rank, 960);
  EXPECT_EQ(e.per_graph_bytes, 960 * 16384);
  EXPECT_NEAR(Gib(e.total_bytes), 1.82, 0.15);  // printed "Estimated CUDA graph memory: 1.82 GiB total"
  o.constants.bytes_per_graph_node = 0.0;
  o.constants.per_graph_bytes_per_layer_hidden = 45.1;  // the previous mechanism
  EXPECT_GT(Gib(EstimateCudagraphMemory(llama70, o).total_bytes), 1.82 + 1.0);
  o.constants.bytes_per_graph_node = -1.0;
  EXPECT_THROW(EstimateCudagraphMemory(llama70, o), InvalidArgument);
}

TEST(CudagraphEstimate, MoeGraphsCarryRouterAndExpertKernels) {
  // gpt-oss-20b at TP 2 captures 83 sizes up to 1024 per mode; vLLM printed 1.09 GiB with 6 MiB
  // per graph. The hidden-size term gave 3 MiB per graph (0.74 GiB in all).
  const ModelSpec gptoss = Bundled("openai--gpt-oss-20b.json");
  CudagraphOptions o;
  o.max_num_seqs = 1024;
  o.max_cudagraph_capture_size = 1024;
  o.tensor_parallel_size = 2;
  const CudagraphEstimate e = EstimateCudagraphMemory(gptoss, o);
  EXPECT_EQ(e.num_piecewise_graphs, 83);
  EXPECT_NEAR(static_cast<double>(e.per_graph_bytes) / static_cast<double>(kMiB), 6.0, 1.0);
  EXPECT_NEAR(Gib(e.total_bytes), 1.09, 0.3);
}

}  // namespace vllm_mem
