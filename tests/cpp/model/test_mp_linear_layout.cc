// WNA16 linears as vLLM's mixed-precision kernels keep them after loading (model/mp_linear_layout.cc).
// Sources: vLLM's kernels/mixed_precision/machete.py (transform_w_zp: zero points as -scale x zp in
// the activation dtype; can_implement: group sizes -1/64/128, in % 64, out % 128) and marlin.py
// (marlin_zero_points keeps them packed; MARLIN_SUPPORTED_GROUP_SIZES in marlin_utils.py).
#include <string>

#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {
namespace {

// A Llama of 2 layers whose linears every kernel takes: hidden 1024, 8 heads (and 8 KV heads) of
// 128, intermediate 2048, bf16. Per layer: qkv 1024 x 3072, o 1024 x 1024, gate_up 1024 x 4096,
// down 2048 x 1024.
ModelSpec Quantized(const std::string& quantization_config) {
  return ModelSpec::FromHfConfigText(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 1024,
    "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 2048,
    "vocab_size": 1024, "max_position_embeddings": 64, "torch_dtype": "bfloat16",
    "quantization_config": )" + quantization_config +
                                     "}");
}

RankWeights With(const ModelSpec& spec, const std::string& kernel) {
  WeightOptions o;
  o.mp_linear_kernel = kernel;
  return ComputeWeights(spec, o).per_pp_rank.at(0);
}

constexpr int64_t kLayers = 2;
// (group, output channel) pairs of one layer at group 128: 8 x 3072 + 8 x 1024 + 8 x 4096 + 16 x 1024.
constexpr int64_t kGroupEntries = 81'920;
// MarlinLinearKernel allocates a workspace per linear while loading (marlin_utils.py
// marlin_make_workspace_new: one int32 per SM): at WeightOptions' default 132 SMs, 528 bytes held in
// a 1024-byte allocator allocation (512-byte blocks); four Marlin linears a layer.
constexpr int64_t kMarlinWorkspaces = 4 * 1024;

TEST(MpLinearLayout, AsymmetricCompressedTensorsZeroPointsWidenOnMachete) {
  const ModelSpec spec = Quantized(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0":
    {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": false, "group_size": 128,
    "strategy": "group"}}}})");
  const RankWeights checkpoint = With(spec, "");
  const RankWeights marlin = With(spec, "marlin");
  const RankWeights machete = With(spec, "machete");
  // bf16 scales + packed 4-bit zero points; Machete: bf16 zero points.
  EXPECT_EQ(checkpoint.quantization_overhead_bytes, kLayers * (kGroupEntries * 2 + kGroupEntries / 2));
  EXPECT_EQ(marlin.quantization_overhead_bytes, checkpoint.quantization_overhead_bytes + kLayers * kMarlinWorkspaces);
  EXPECT_EQ(machete.quantization_overhead_bytes, kLayers * kGroupEntries * 4);
  EXPECT_EQ(machete.kernel_layout_bytes, kLayers * kGroupEntries * 3 / 2);
  EXPECT_EQ(machete.total_bytes - checkpoint.total_bytes, kLayers * kGroupEntries * 3 / 2);
  // Symmetric: no zero points, nothing for either kernel to change.
  const ModelSpec sym = Quantized(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0":
    {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": true, "group_size": 128,
    "strategy": "group"}}}})");
  EXPECT_EQ(With(sym, "machete").total_bytes, With(sym, "").total_bytes);
  EXPECT_EQ(With(sym, "marlin").total_bytes, With(sym, "").total_bytes + kLayers * kMarlinWorkspaces);
}

TEST(MpLinearLayout, GroupsMacheteCannotTakeFallBackToMarlin) {
  // Group 32 is in MARLIN_SUPPORTED_GROUP_SIZES, not in Machete's (-1, 64, 128).
  const ModelSpec spec = Quantized(R"({"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": true})");
  EXPECT_EQ(With(spec, "machete").total_bytes, With(spec, "marlin").total_bytes);
  const ModelSpec g64 = Quantized(R"({"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": true})");
  EXPECT_EQ(With(g64, "machete").total_bytes - With(g64, "marlin").total_bytes,
            kLayers * (kGroupEntries * 2 * 3 / 2 - kMarlinWorkspaces));
}

TEST(MpLinearLayout, UnknownKernelIsRefusedByField) {
  const ModelSpec spec = Quantized(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true})");
  try {
    With(spec, "exllama");
    FAIL() << "accepted an unknown kernel";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.field(), "mp_linear_kernel");
  }
}

}  // namespace
}  // namespace vllm_mem
