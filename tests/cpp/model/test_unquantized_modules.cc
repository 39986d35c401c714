// A checkpoint's list of unquantized modules, matched as each method's vLLM config matches a
// layer name: compressed-tensors check_equal_or_regex_match ("re:" = Python re.match, else the
// whole name), AWQ is_layer_skipped_awq (a substring), ModelOpt is_layer_excluded (a substring or
// an fnmatch wildcard).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/model/weights_common.h"
#include "vllm_mem/base/error.h"

namespace vllm_mem {
namespace {

std::vector<int64_t> Layers(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(i);
  return out;
}

QuantizationSpec Listing(const std::string& method, std::vector<std::string> modules) {
  QuantizationSpec q;
  q.method = method;
  q.unquantized_modules = std::move(modules);
  return q;
}

TEST(UnquantizedModules, CompressedTensorsRegexesAreAnchoredAtTheStartOnly) {
  const QuantizationSpec q = Listing("compressed-tensors", {"re:.*mlp.gate$", "re:.*linear_attn.*"});
  EXPECT_TRUE(LeftUnquantized(q, "mlp.gate", Layers(40)));
  EXPECT_FALSE(
      LeftUnquantized(q, "mlp.gate_up_proj|mlp.gate_proj,mlp.up_proj", Layers(40)));  // the $ keeps gate_proj quantized
  EXPECT_TRUE(LeftUnquantized(q, "linear_attn.in_proj_qkvz|linear_attn.in_proj_qkv,linear_attn.in_proj_z", Layers(40)));
  // re.match anchors at the start: "mlp" alone does not match "model.layers.0.mlp.gate".
  EXPECT_FALSE(LeftUnquantized(Listing("compressed-tensors", {"re:mlp.gate"}), "mlp.gate", Layers(40)));
}

TEST(UnquantizedModules, CompressedTensorsNamesAreWholeNamesInEveryLayer) {
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) names.push_back("model.language_model.layers." + std::to_string(i) + ".mlp.gate");
  EXPECT_TRUE(LeftUnquantized(Listing("compressed-tensors", names), "mlp.gate", Layers(4)));
  names.pop_back();  // layer 3 left out: the count is per layer kind, so it is refused
  EXPECT_THROW(LeftUnquantized(Listing("compressed-tensors", names), "mlp.gate", Layers(4)), Unsupported);
}

TEST(UnquantizedModules, CompressedTensorsTakesTheFusedNameOrEveryShard) {
  const char* qkv = "self_attn.qkv_proj|self_attn.q_proj,self_attn.k_proj,self_attn.v_proj";
  EXPECT_TRUE(LeftUnquantized(Listing("compressed-tensors", {"re:.*qkv_proj$"}), qkv, Layers(2)));
  EXPECT_TRUE(LeftUnquantized(Listing("compressed-tensors", {"re:.*self_attn.*"}), qkv, Layers(2)));
}

TEST(UnquantizedModules, FusedShardsMustAgree) {
  const QuantizationSpec q = Listing("compressed-tensors", {"re:.*self_attn.q_proj$"});
  EXPECT_THROW(LeftUnquantized(q, "self_attn.qkv_proj|self_attn.q_proj,self_attn.k_proj,self_attn.v_proj", Layers(2)),
               Unsupported);
}

TEST(UnquantizedModules, AwqSkipsSubstringsAndModelOptTakesWildcards) {
  // AWQ matches vLLM's fused name as a substring: "mlp.gate" skips mlp.gate_up_proj, as in vLLM.
  EXPECT_TRUE(LeftUnquantized(Listing("awq", {"mlp.gate"}), "mlp.gate_up_proj|mlp.gate_proj,mlp.up_proj", Layers(2)));
  EXPECT_TRUE(LeftUnquantized(Listing("modelopt", {"*linear_attn*"}), "linear_attn.out_proj", Layers(2)));
  // ModelOpt's exact shard names (is_layer_skipped) skip the fused linear they make up.
  EXPECT_TRUE(LeftUnquantized(Listing("modelopt", {"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"}),
                              "mlp.gate_up_proj|mlp.gate_proj,mlp.up_proj", Layers(1)));
  EXPECT_FALSE(
      LeftUnquantized(Listing("modelopt", {"*mlp.gate"}), "mlp.gate_up_proj|mlp.gate_proj,mlp.up_proj", Layers(2)));
  EXPECT_TRUE(LeftUnquantized(Listing("modelopt", {"*mlp.gate"}), "mlp.gate", Layers(2)));
}

TEST(UnquantizedModules, AnEmptyListQuantizesEverything) {
  EXPECT_FALSE(LeftUnquantized(Listing("compressed-tensors", {}), "mlp.experts", Layers(40)));
  EXPECT_FALSE(LeftUnquantized(Listing("compressed-tensors", {"lm_head"}), "mlp.experts", Layers(40)));
}

}  // namespace
}  // namespace vllm_mem
