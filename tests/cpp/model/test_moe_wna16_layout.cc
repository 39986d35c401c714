// AWQ / GPTQ / compressed-tensors MoE experts as vLLM's WNA16 MoE methods keep them after loading, and
// the Marlin workspaces (model/moe_wna16_layout.cc, model/mp_linear_layout.cc). Sources, vLLM's
// vllm/model_executor/layers/quantization/: awq_marlin.py AWQMoEMethod (int32 zero points as stored,
// marlin_make_workspace_new(device, 4) per MoE layer), gptq_marlin.py GPTQMarlinMoEMethod (qzeros
// created (E, groups, N / 8) in params_dtype; g_idx emptied without act-order), moe_wna16.py
// (the fallback; a symmetric GPTQ's qzeros registered empty), utils/marlin_utils.py
// (check_moe_marlin_supports_layer; marlin_make_workspace_new: SMs x blocks int32), and
// kernels/mixed_precision/marlin.py (one workspace of one int32 per SM per Marlin linear). The
// caching allocator holds each workspace in whole 512-byte blocks.
#include <string>

#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {
namespace {

// A Qwen3-MoE of 2 layers: hidden 1024, 8 heads and 4 KV heads of 128, 8 experts of
// \p moe_intermediate, bf16. Per layer and rank at TP 1: qkv 1024 x 2048, o 1024 x 1024, and per
// expert gate_up 1024 x 2I and down I x 1024; the router stays bf16.
ModelSpec Moe(const std::string& quantization_config, int moe_intermediate = 256) {
  return ModelSpec::FromHfConfigText(R"({"model_type": "qwen3_moe", "num_hidden_layers": 2, "hidden_size": 1024,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 2048,
    "moe_intermediate_size": )" + std::to_string(moe_intermediate) +
                                     R"(, "num_experts": 8, "num_experts_per_tok": 2, "vocab_size": 1024,
    "max_position_embeddings": 64, "torch_dtype": "bfloat16", "quantization_config": )" +
                                     quantization_config + "}");
}

RankWeights With(const ModelSpec& spec, const std::string& kernel, int64_t sm_count = 132, int64_t tp = 1) {
  WeightOptions o;
  o.mp_linear_kernel = kernel;
  o.gpu_sm_count = sm_count;
  o.tensor_parallel_size = tp;
  return ComputeWeights(spec, o).per_pp_rank.at(0);
}

constexpr int64_t kLayers = 2;
constexpr int64_t kExperts = 8;
constexpr const char* kAwq = R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true})";
constexpr const char* kGptq = R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false,
  "sym": true})";

// 132 SMs (H100): a Marlin linear's 132 int32 = 528 bytes -> 1024; a Marlin MoE layer's 4 x 132 int32
// = 2112 bytes -> 2560. 108 SMs (A100): 432 -> 512 and 1728 -> 2048.
constexpr int64_t kLinearWorkspace132 = 1024;
constexpr int64_t kMoeWorkspace132 = 2560;
constexpr int64_t kLinearWorkspace108 = 512;
constexpr int64_t kMoeWorkspace108 = 2048;

TEST(MoeWna16Layout, AwqExpertsKeepTheirBytesAndAddOneWorkspaceALayer) {
  const ModelSpec spec = Moe(kAwq);
  const RankWeights checkpoint = With(spec, "");
  // AWQMoEMethod: repacked values, permuted scales, int32 zero points, all of the stored bytes;
  // Marlin linears (qkv, o) likewise; what is new is the workspaces.
  const RankWeights marlin = With(spec, "marlin");
  EXPECT_EQ(marlin.total_bytes - checkpoint.total_bytes, kLayers * (2 * kLinearWorkspace132 + kMoeWorkspace132));
  EXPECT_EQ(marlin.kernel_layout_bytes, kLayers * (2 * kLinearWorkspace132 + kMoeWorkspace132));
  const RankWeights a100 = With(spec, "marlin", 108);
  EXPECT_EQ(a100.total_bytes - checkpoint.total_bytes, kLayers * (2 * kLinearWorkspace108 + kMoeWorkspace108));
  // Machete takes the linears (no workspace, bf16 zero points: 1.5 bytes more per group entry of
  // qkv's 8 x 2048 and o's 8 x 1024); the experts are still Marlin MoE's.
  const RankWeights machete = With(spec, "machete");
  EXPECT_EQ(machete.total_bytes - checkpoint.total_bytes, kLayers * ((8 * 2048 + 8 * 1024) * 3 / 2 + kMoeWorkspace132));
}

TEST(MoeWna16Layout, SymmetricGptqExpertQzerosAreHeldInTheModelDtype) {
  const ModelSpec spec = Moe(kGptq);
  // Checkpoint: int32 qzeros, half a byte per (group, output) entry. GPTQMarlinMoEMethod holds
  // (groups, N / 8) values of 2 bytes: a quarter byte an entry. gate_up: 8 groups x 512 = 4,096
  // entries; down: 2 groups x 1,024 = 2,048; so 6,144 x 0.25 = 1,536 bytes less per expert.
  const int64_t experts_delta = -kExperts * 1536;
  // The Marlin linears free the unused qzeros: qkv 8 x 2048 / 2 + o 8 x 1024 / 2 = 12,288 bytes.
  const int64_t linears_delta = -12'288 + 2 * kLinearWorkspace132;
  const RankWeights checkpoint = With(spec, "");
  const RankWeights marlin = With(spec, "marlin");
  EXPECT_EQ(marlin.quantization_overhead_bytes - checkpoint.quantization_overhead_bytes,
            kLayers * (experts_delta + kMoeWorkspace132 + linears_delta));
  EXPECT_EQ(marlin.kernel_layout_bytes, kLayers * (kMoeWorkspace132 + 2 * kLinearWorkspace132));
}

TEST(MoeWna16Layout, GptqActOrderKeepsSortIndicesPerExpertAndIsRefusedSplit) {
  const ModelSpec spec = Moe(R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": true,
    "sym": true})");
  // Sorted g_idx (the checkpoint's size) plus g_idx_sort_indices: one int32 per input, per expert:
  // (1024 + 256) x 4 = 5,120 bytes; the Marlin linears likewise (1024 + 1024) x 4 = 8,192.
  const RankWeights marlin = With(spec, "marlin");
  EXPECT_EQ(marlin.kernel_layout_bytes,
            kLayers * (kExperts * 5120 + kMoeWorkspace132 + 8192 + 2 * kLinearWorkspace132));
  // load_full_w2: w2's scales stay whole on every rank at TP > 1 (not modelled).
  EXPECT_THROW(With(spec, "marlin", 132, 2), Unsupported);
}

TEST(MoeWna16Layout, ShapesMarlinMoeRefusesGoToMoeWna16) {
  // Group 32, intermediate 96: 96 % max(64, 32) != 0, so check_moe_marlin_supports_layer fails and
  // the experts go to moe_wna16: AWQ's tensors as stored, no workspace. The linears are Marlin's.
  const ModelSpec awq = Moe(R"({"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": true})", 96);
  EXPECT_EQ(With(awq, "marlin").total_bytes - With(awq, "").total_bytes, kLayers * 2 * kLinearWorkspace132);
  // A symmetric GPTQ's qzeros are registered empty: gate_up 32 groups x 192 / 2 and down 3 x 1024 / 2
  // bytes fewer per expert (4,608); the linears free qkv 32 x 2048 / 2 + o 32 x 1024 / 2 = 49,152.
  const ModelSpec gptq = Moe(R"({"quant_method": "gptq", "bits": 4, "group_size": 32, "sym": true})", 96);
  EXPECT_EQ(With(gptq, "marlin").total_bytes - With(gptq, "").total_bytes,
            kLayers * (-kExperts * 4608 - 49'152 + 2 * kLinearWorkspace132));
}

TEST(MoeWna16Layout, LayoutsNotModelledAreRefusedByName) {
  // Intermediate 192 with group 128: moe_wna16 halves the group to 64 and repeats the scales.
  EXPECT_THROW(With(Moe(kAwq, 192), "marlin"), Unsupported);
  // compressed-tensors experts Marlin MoE cannot take go to CompressedTensorsWNA16MoEMethod.
  const ModelSpec ct = Moe(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0":
    {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": true, "group_size": 32,
    "strategy": "group"}}}})",
                           96);
  EXPECT_THROW(With(ct, "marlin"), Unsupported);
  // Without a kernel (no GPU known) the checkpoint's layout is kept whatever the shape.
  EXPECT_GT(With(Moe(kAwq, 192), "").total_bytes, 0);
}

TEST(MoeWna16Layout, ASmCountBelowOneIsRefusedByField) {
  try {
    With(Moe(kAwq), "marlin", 0);
    FAIL() << "accepted 0 SMs";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "gpu_sm_count");
  }
}

}  // namespace
}  // namespace vllm_mem
