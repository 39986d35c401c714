// Speculative decoding through EvaluatePlan: the drafter's weights and KV layers in the plan,
// the capture sizes; hand arithmetic from vLLM's formulas in the comments (the rules themselves:
// test_speculative_decoding.cc).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "vllm_mem/base/json.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/plan/speculative_decoding.h"
#include "vllm_mem/plan/startup_plan.h"
#include "bundled_config.h"

namespace vllm_mem {
namespace {

std::string ConfigText(const std::string& file) { return testing::BundledConfigText(file); }
ModelSpec Bundled(const std::string& file) { return testing::BundledModel(file); }
const ModelSpec& Llama8B() {
  static const ModelSpec s = Bundled("meta-llama--Llama-3.1-8B-Instruct.json");
  return s;
}
const ModelSpec& DeepSeekV3() {
  static const ModelSpec s = Bundled("deepseek-ai--DeepSeek-V3.json");
  return s;
}
SpeculativeConfig Eagle3() {
  SpeculativeConfig c;
  c.method = "eagle3";
  c.num_speculative_tokens = 3;
  c.draft = Bundled("yuhuili--EAGLE3-LLaMA3.1-Instruct-8B.json");
  ReadSpeculativeConfigFields(ParseJson(ConfigText("yuhuili--EAGLE3-LLaMA3.1-Instruct-8B.json")), false, c);
  return c;
}
SpeculativeConfig Draft1B() {
  SpeculativeConfig c;
  c.method = "draft_model";
  c.num_speculative_tokens = 4;
  c.draft = Bundled("meta-llama--Llama-3.2-1B-Instruct.json");
  return c;
}
SpeculativeConfig Mtp() {
  SpeculativeConfig c;
  c.method = "mtp";
  c.num_speculative_tokens = 1;
  ReadSpeculativeConfigFields(ParseJson(ConfigText("deepseek-ai--DeepSeek-V3.json")), true, c);
  return c;
}

PlanInputs H100() {
  PlanInputs in;
  in.total_memory_bytes = LookupGpu("H100-80GB").total_memory_bytes;
  in.gpu_memory_utilization = 0.9;
  in.max_model_len = 8192;
  return in;
}

// The KV pool grows by the drafter's layers (one block table, vLLM's single group):
//   Llama-3.1-8B page (block 16, bf16) = 16 * 8 heads * 128 * 2 (K, V) * 2 B = 65,536 per layer;
//   32 layers = 2,097,152 per block; the EAGLE-3 head's one layer (8 x 128) adds 65,536.
//   Llama-3.2-1B: 16 * 8 * 64 * 2 * 2 = 32,768 per layer x 16 layers = 524,288 per block
//   (vLLM: UniformTypeKVCacheSpecs, a block costs the sum of pages).
//   DeepSeek-V3 MLA page (block 64) = 64 * (512 + 64) * 2 B = 73,728; the MTP layer adds one.
TEST(SpeculativeDecoding, KvPoolGrowsByTheDrafterLayers) {
  PlanInputs in = H100();
  const StartupPlan base = EvaluatePlan(Llama8B(), in);
  in.speculative = Eagle3();
  const StartupPlan eagle = EvaluatePlan(Llama8B(), in);
  EXPECT_EQ(base.ranks[0].kv_bytes_per_block, 2097152);
  EXPECT_EQ(eagle.ranks[0].kv_bytes_per_block, 2097152 + 65536);
  EXPECT_EQ(eagle.ranks[0].draft_kv_bytes_per_block, 65536);
  EXPECT_EQ(eagle.ranks[0].draft_weights_bytes, 424689664LL * 2 + 256000);
  EXPECT_EQ(eagle.ranks[0].weights_bytes, base.ranks[0].weights_bytes + eagle.ranks[0].draft_weights_bytes);
  EXPECT_EQ(eagle.ranks[0].num_blocks, eagle.ranks[0].available_kv_cache_bytes / (2097152 + 65536));
  EXPECT_EQ(eagle.ranks[0].draft_kv_cache_bytes, eagle.ranks[0].num_blocks * 65536);

  in.speculative = Draft1B();
  const StartupPlan draft = EvaluatePlan(Llama8B(), in);
  EXPECT_EQ(draft.ranks[0].kv_bytes_per_block, 2097152 + 524288);
  EXPECT_EQ(draft.ranks[0].draft_kv_bytes_per_block, 524288);

  PlanInputs ds = H100();
  ds.total_memory_bytes = int64_t{141} << 30;
  ds.tensor_parallel_size = 8;
  ds.max_model_len = 4096;
  const StartupPlan ds_base = EvaluatePlan(DeepSeekV3(), ds);
  ds.speculative = Mtp();
  const StartupPlan ds_mtp = EvaluatePlan(DeepSeekV3(), ds);
  EXPECT_EQ(ds_base.ranks[0].kv_bytes_per_block, 61 * 73728);
  EXPECT_EQ(ds_mtp.ranks[0].kv_bytes_per_block, 62 * 73728);
  EXPECT_EQ(ds_mtp.ranks[0].draft_kv_bytes_per_block, 73728);
}

// n-gram: no weights, no KV; only the capture sizes change (multiples of 1 + K).
TEST(SpeculativeDecoding, NgramOnlyChangesTheBatch) {
  PlanInputs in = H100();
  in.max_num_seqs = 256;
  in.max_num_batched_tokens = 8192;
  const StartupPlan base = EvaluatePlan(Llama8B(), in);
  SpeculativeConfig ngram;
  ngram.method = "ngram";
  ngram.num_speculative_tokens = 3;
  in.speculative = ngram;
  const StartupPlan p = EvaluatePlan(Llama8B(), in);
  EXPECT_EQ(p.ranks[0].weights_bytes, base.ranks[0].weights_bytes);
  EXPECT_EQ(p.ranks[0].kv_bytes_per_block, base.ranks[0].kv_bytes_per_block);
  EXPECT_EQ(p.ranks[0].draft_weights_bytes, 0);
  const auto& sizes = p.ranks[0].cudagraph.capture_sizes;
  EXPECT_EQ(sizes.front(), 4);
  for (int64_t s : sizes) EXPECT_EQ(s % 4, 0) << s;
  // FULL decode graphs: sizes in [4, 256 * 4] -> all 49 of them (vs 51 without speculation).
  EXPECT_EQ(p.ranks[0].cudagraph.num_full_graphs, 49);
  // The report's "speculative decoding: ngram" line: test_speculative_decoding.py.
}

TEST(SpeculativeDecoding, PlanCarriesTheDrafterTermsTheReportLabels) {
  // The report's "of which drafter" rows (python/vllm_mem/planner/render.py; their text is
  // checked in test_speculative_decoding.py) read these figures of the tightest rank.
  PlanInputs in = H100();
  in.speculative = Eagle3();
  const StartupPlan p = EvaluatePlan(Llama8B(), in);
  const RankPlan& t = p.ranks.at(static_cast<size_t>(p.tightest_pp_rank));
  EXPECT_GT(t.draft_weights_bytes, 0);
  EXPECT_LT(t.draft_weights_bytes, t.weights_bytes);
  EXPECT_GT(t.draft_kv_cache_bytes, 0);
  EXPECT_EQ(t.draft_kv_cache_bytes, t.num_blocks * t.draft_kv_bytes_per_block);
}

// A hybrid target keeps the speculated tokens' recurrent states, whatever the drafter
// (vllm/model_executor/layers/mamba/abstract.py get_kv_cache_spec: num_speculative_blocks =
// num_speculative_tokens; mamba_utils.py gated_delta_net_state_shape: conv_kernel - 1 + num_spec
// conv rows). Qwen3.6-35B-A3B (the config tests/data/vllm_release_logs.json records) with MTP,
// K = 3, prefix caching (Mamba cache mode "align"), 200K, as the v0.22.0 start-up there ran:
//   GDN conv dim 2 x 16 x 128 + 32 x 128 = 8,192: conv (3 + 3) x 8,192 x 2 B = 98,304; SSM
//   32 x 128 x 128 x 4 B (float32) = 2,097,152; page 2,195,456 = 1,072 tokens x 2,048 B (2 KV heads
//   x 256 x K,V x 2 B), a multiple of 16: the printed "Setting attention block size to 1072".
//   10 full-attention layers + the MTP layer = 11 a group; 30 GDN layers in 3 groups of 11 (the
//   printed "Add 3 padding layers"): a block id costs 11 pages. Per request cdiv(200,000, 1,072)
//   = 187 attention blocks + 3 x (2 + 3) Mamba blocks ("align": MambaSpec.max_memory_usage_bytes)
//   = 202. Without the drafter: conv 3 rows, page 2,146,304 -> 1,048 tokens -> 1,056; 10 a group;
//   cdiv(200,000, 1,056) = 190 + 3 x 2 = 196.
TEST(SpeculativeDecoding, HybridTargetKeepsTheSpeculatedStates) {
  const JsonValue logs = ParseJson(testing::SourceFileText("tests/data/vllm_release_logs.json"));
  const JsonValue& config = *logs.Find("configs")->Find("Qwen/Qwen3.6-35B-A3B")->Find("config");
  const ModelSpec qwen = ModelSpec::FromHfConfig(config);
  PlanInputs in;
  in.total_memory_bytes = int64_t{240} << 30;
  in.vllm_version = "0.22.0";
  in.max_model_len = 200000;
  in.max_num_seqs = 8;
  in.max_num_batched_tokens = 32768;
  in.enable_prefix_caching = true;
  in.mamba_cache_mode = "align";
  in.kv_cache_memory_bytes = int64_t{71} << 30;
  const StartupPlan base = EvaluatePlan(qwen, in);
  EXPECT_EQ(base.kv_block_size, 1056);
  EXPECT_EQ(base.ranks[0].kv_bytes_per_block, 10 * 1056 * 2048);
  EXPECT_EQ(base.ranks[0].kv_bytes_per_request, 196 * base.ranks[0].kv_bytes_per_block);

  SpeculativeConfig mtp;
  mtp.method = "mtp";
  mtp.num_speculative_tokens = 3;
  ReadSpeculativeConfigFields(config, true, mtp);
  in.speculative = mtp;
  const StartupPlan p = EvaluatePlan(qwen, in);
  EXPECT_EQ(p.kv_block_size, 1072);
  EXPECT_EQ(p.ranks[0].kv_bytes_per_block, 11 * 2195456);
  EXPECT_EQ(p.ranks[0].draft_kv_bytes_per_block, 2195456);
  EXPECT_EQ(p.ranks[0].kv_bytes_per_request, 202 * p.ranks[0].kv_bytes_per_block);
}

}  // namespace
}  // namespace vllm_mem
