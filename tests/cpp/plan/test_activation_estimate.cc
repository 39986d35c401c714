#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "vllm_mem/plan/activation_estimate.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/base/units.h"
#include "bundled_config.h"

namespace vllm_mem {
namespace {

ModelSpec Bundled(const std::string& file) { return testing::BundledModel(file); }

ActivationOptions Calib() {
  ActivationOptions o;  // the calibration runs' settings
  o.max_num_batched_tokens = 8192;
  o.max_num_seqs = 1024;
  return o;
}

double Gib(int64_t b) { return static_cast<double>(b) / static_cast<double>(kGiB); }

}  // namespace

TEST(ActivationEstimate, SamplerPhaseDominatesLargeVocabModels) {
  const ModelSpec llama = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  ActivationBreakdown b = EstimateActivationPeak(llama, Calib());
  EXPECT_TRUE(b.sampler_dominates);
  const int64_t hidden_out = int64_t{8192} * 4096 * 2;
  const int64_t logits = int64_t{1024} * 128256 * 2;
  // v0.19's sampler: float32 copy, probabilities and exponential noise (12 B per logit), the
  // Triton top-k/top-p kernel's buffer (132 programs x vocab x float32) and the fixed 48 MiB.
  const int64_t kernel_buffer = int64_t{132} * 128256 * 4;
  const int64_t sampler = int64_t{12} * 1024 * 128256 + kernel_buffer + (int64_t{48} << 20);
  EXPECT_EQ(b.logits_bytes, logits);
  EXPECT_EQ(b.sampler_kernel_buffer_bytes, kernel_buffer);
  EXPECT_EQ(b.sampler_bytes, sampler);
  EXPECT_EQ(b.peak_bytes, hidden_out + logits + sampler);
  // vLLM printed 1.89 GiB for this run (TP 1, 2 and 4 alike).
  EXPECT_NEAR(Gib(b.peak_bytes), 1.89, 0.02);
  ActivationOptions tp4 = Calib();
  tp4.tensor_parallel_size = 4;
  EXPECT_EQ(EstimateActivationPeak(llama, tp4).peak_bytes, b.peak_bytes);  // logits are gathered: no TP saving
  EXPECT_LT(EstimateActivationPeak(llama, tp4).mlp_intermediate_bytes, b.mlp_intermediate_bytes);
}

TEST(ActivationEstimate, ForwardDominatesSmallVocabAndMlpIsGatedOrNot) {
  const ModelSpec codellama = Bundled("codellama--CodeLlama-7b-hf.json");
  ActivationBreakdown b = EstimateActivationPeak(codellama, Calib());
  EXPECT_FALSE(b.sampler_dominates);
  EXPECT_EQ(b.mlp_intermediate_bytes, int64_t{8192} * 2 * 3 * 11008);  // gate+up (2I) + act (I)
  EXPECT_EQ(b.peak_bytes, b.forward_bytes);
  EXPECT_NEAR(Gib(b.peak_bytes), 0.77, 0.03);  // printed 0.77

  const ModelSpec phi = Bundled("microsoft--phi-2.json");
  EXPECT_EQ(EstimateActivationPeak(phi, Calib()).mlp_intermediate_bytes, int64_t{8192} * 2 * 2 * 10240);  // fc1 + GELU
}

TEST(ActivationEstimate, PipelineRanks) {
  const ModelSpec llama = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  ActivationOptions o = Calib();
  o.pipeline_parallel_size = 2;
  o.pp_rank = 0;
  ActivationBreakdown first = EstimateActivationPeak(llama, o);
  EXPECT_EQ(first.sampler_phase_bytes, 0);
  EXPECT_EQ(first.pipeline_buffers_bytes, 2 * int64_t{8192} * 4096 * 2);
  EXPECT_EQ(first.peak_bytes, first.forward_bytes + first.pipeline_buffers_bytes);
  EXPECT_NEAR(Gib(first.peak_bytes), 1.10, 0.05);  // printed for rank 0
  o.pp_rank = 1;
  EXPECT_NEAR(Gib(EstimateActivationPeak(llama, o).peak_bytes), 2.01, 0.03);  // printed for the last rank
}

TEST(ActivationEstimate, SamplerRowsAreCappedByTokens) {
  const ModelSpec llama = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  ActivationOptions o = Calib();
  o.max_num_batched_tokens = 512;
  o.max_num_seqs = 1024;
  EXPECT_EQ(EstimateActivationPeak(llama, o).logits_bytes, int64_t{512} * 128256 * 2);
  ActivationOptions fewer = Calib();
  fewer.max_num_seqs = 64;
  EXPECT_LT(EstimateActivationPeak(llama, fewer).peak_bytes, EstimateActivationPeak(llama, Calib()).peak_bytes);
}

TEST(ActivationEstimate, Float32DoublesTheDtypeTerms) {
  const ModelSpec llama = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  ActivationOptions o = Calib();
  o.dtype = "float32";
  EXPECT_NEAR(Gib(EstimateActivationPeak(llama, o).peak_bytes), 2.21, 0.02);  // printed 2.21
}

TEST(ActivationEstimate, BadInputNamesTheField) {
  const ModelSpec llama = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  ActivationOptions o = Calib();
  o.max_num_batched_tokens = 0;
  try {
    EstimateActivationPeak(llama, o);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "max_num_batched_tokens");
  }
  o = Calib();
  o.max_num_seqs = -1;
  EXPECT_THROW(EstimateActivationPeak(llama, o), InvalidArgument);
  o = Calib();
  o.pp_rank = 3;
  EXPECT_THROW(EstimateActivationPeak(llama, o), InvalidArgument);
}

// fused_moe/modular_kernel.py _allocate_buffers with TritonExperts.workspace_shapes (v0.19):
// common = max(M*topk*max(N/2, K), tokens*K), workspace2 = M*topk*max(N, K), M = min(tokens,
// VLLM_FUSED_MOE_CHUNK_SIZE). Qwen3-30B-A3B: I = 768 (N = 1536), K = 2048, top-8.
TEST(ActivationEstimate, FusedMoeWorkspaceFollowsTheModularKernel) {
  const ModelSpec qwen3moe = Bundled("Qwen--Qwen3-30B-A3B.json");
  ActivationOptions o = Calib();
  ActivationBreakdown b = EstimateActivationPeak(qwen3moe, o);
  const int64_t per = int64_t{8192} * 8 * 2048;
  EXPECT_EQ(b.moe_workspace_bytes, (per + per) * 2);
  // vLLM's WorkspaceManager keeps it through the dummy sampler run.
  const int64_t hidden_out = int64_t{8192} * 2048 * 2;
  EXPECT_EQ(b.sampler_phase_bytes, hidden_out + b.logits_bytes + b.sampler_bytes + b.moe_workspace_bytes);
  EXPECT_GE(b.mlp_intermediate_bytes, b.moe_workspace_bytes);

  o.constants.fused_moe_chunk_tokens = 4096;  // chunks shrink the workspaces, not fused_out
  b = EstimateActivationPeak(qwen3moe, o);
  EXPECT_EQ(b.moe_workspace_bytes, (int64_t{4096} * 8 * 2048 * 2) * 2);
  o.constants.fused_moe_chunk_tokens = 0;
  EXPECT_THROW(EstimateActivationPeak(qwen3moe, o), InvalidArgument);

  // Tensor parallelism splits N: at TP 4, N = 384 < K so both workspaces are K wide.
  o = Calib();
  o.tensor_parallel_size = 4;
  EXPECT_EQ(EstimateActivationPeak(qwen3moe, o).moe_workspace_bytes, (per + per) * 2);

  // Dense models hold none; gpt-oss's MXFP4 experts (OAI triton path) are not held through
  // the sampler (tests/data/heldout_startups.jsonl: 2.87 GiB printed).
  EXPECT_EQ(EstimateActivationPeak(Bundled("meta-llama--Llama-3.1-8B-Instruct.json"), Calib()).moe_workspace_bytes, 0);
  const ActivationBreakdown g = EstimateActivationPeak(Bundled("openai--gpt-oss-20b.json"), Calib());
  EXPECT_EQ(g.moe_workspace_bytes, 0);
  EXPECT_GT(g.mlp_intermediate_bytes, 0);
}

TEST(ActivationEstimate, SamplerKernelBufferHasAtMostOneRowPerRequest) {
  // apply_top_k_top_p_triton launches min(SMs, rows) programs, one float32 vocabulary row each.
  const ModelSpec llama = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  ActivationOptions few = Calib();
  few.max_num_seqs = 8;
  EXPECT_EQ(EstimateActivationPeak(llama, few).sampler_kernel_buffer_bytes, int64_t{8} * 128256 * 4);
  ActivationOptions sort_path = Calib();  // a release whose sampler has no such buffer
  sort_path.constants.sampler_kernel_programs = 0;
  sort_path.constants.sampler_fixed_bytes = 0;
  const ActivationBreakdown b = EstimateActivationPeak(llama, sort_path);
  EXPECT_EQ(b.sampler_kernel_buffer_bytes, 0);
  EXPECT_EQ(b.sampler_bytes, std::llround(12.0 * 1024 * 128256));
  ActivationOptions bad = Calib();
  bad.constants.sampler_fixed_bytes = -1;
  EXPECT_THROW(EstimateActivationPeak(llama, bad), InvalidArgument);
}

// Speculative decoding on the V1 runner, from vLLM's code (gpu_model_runner.py; no start-up log
// with a printed peak checks these terms). Llama-3.1-8B with its EAGLE head (one Llama layer,
// 4096 hidden, 14336 intermediate, 32 / 8 heads of 128), 8,192 tokens, 256 sequences, bf16:
//   target forward = 4.5 x 8192 x 4096 x 2 + 8192 x 2 x 3 x 14336 = 301,989,888 + 704,643,072;
//   drafter (EagleProposer.dummy_run) = the same one-layer working set, beside the target's
//   output hidden states 8192 x 4096 x 2 = 67,108,864: 1,073,741,824, the peak.
//   _dummy_sampler_run's rejection pass: randn(256 drafts + 256 requests, 128256) bf16 =
//   2 x 256 x 128256 x 2 = 131,334,144 beside the bonus tokens' sampler pass.
TEST(ActivationEstimate, DrafterForwardAndRejectionSamplerOnTheV1Runner) {
  const ModelSpec llama = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  ActivationOptions o;
  o.max_num_batched_tokens = 8192;
  o.max_num_seqs = 256;
  const ActivationBreakdown base = EstimateActivationPeak(llama, o);
  EXPECT_EQ(base.forward_bytes, 301989888 + 704643072);
  EXPECT_EQ(base.drafter_phase_bytes, 0);
  EXPECT_EQ(base.peak_bytes, base.forward_bytes);

  o.drafter = std::make_shared<const ModelSpec>(Bundled("yuhuili--EAGLE-LLaMA3.1-Instruct-8B.json"));
  o.rejection_sampler = true;
  const ActivationBreakdown spec = EstimateActivationPeak(llama, o);
  EXPECT_EQ(spec.drafter_phase_bytes, 67108864 + 301989888 + 704643072);
  EXPECT_EQ(spec.rejection_logits_bytes, int64_t{2} * 256 * 128256 * 2);
  EXPECT_EQ(spec.sampler_phase_bytes, base.sampler_phase_bytes + spec.rejection_logits_bytes);
  EXPECT_EQ(spec.peak_bytes, 1073741824);
  EXPECT_FALSE(spec.sampler_dominates);

  // 1,024 sequences: the sampler phase (with the rejection logits) is the peak.
  o.max_num_seqs = 1024;
  const ActivationBreakdown wide = EstimateActivationPeak(llama, o);
  EXPECT_TRUE(wide.sampler_dominates);
  EXPECT_EQ(wide.peak_bytes, wide.sampler_phase_bytes);
  o.drafter_tensor_parallel_size = 0;
  EXPECT_THROW(EstimateActivationPeak(llama, o), InvalidArgument);
}

}  // namespace vllm_mem
