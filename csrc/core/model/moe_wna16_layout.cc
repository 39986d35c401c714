/*!
 * \file core/model/moe_wna16_layout.cc
 * \brief What vLLM's WNA16 MoE methods leave allocated for the routed experts of an AWQ / GPTQ /
 *        compressed-tensors 4-bit checkpoint once process_weights_after_loading has run, against
 *        the checkpoint layout StoredLinearBytes counts (packed values, model-dtype scales, packed
 *        zero points, act-order g_idx), and the Marlin MoE workspace.
 *
 * Read in vLLM's source (vllm/model_executor/layers/quantization/): awq_marlin.py AWQMarlinConfig
 * .get_quant_method and AWQMoEMethod, gptq_marlin.py GPTQMarlinConfig.get_quant_method and
 * GPTQMarlinMoEMethod, compressed_tensors/compressed_tensors_moe*.py
 * CompressedTensorsWNA16MarlinMoEMethod, moe_wna16.py MoeWNA16Method, utils/marlin_utils.py
 * (check_moe_marlin_supports_layer, marlin_make_workspace_new, marlin_moe_permute_scales,
 * moe_awq_to_marlin_zero_points). Where the linears get a mixed-precision kernel (compute
 * capability 8.0 and up on NVIDIA: WeightOptions::mp_linear_kernel set), the experts go to the
 * Marlin MoE method whenever check_moe_marlin_supports_layer accepts the layer (hidden % 128,
 * intermediate per rank % max(64, group), a gated SiLU MLP); otherwise AWQ and GPTQ fall back to
 * moe_wna16's Triton kernel. Machete is a linear kernel only: on 9.0 the experts are Marlin MoE's
 * too. Per expert (E copies) on one rank:
 *  - Marlin MoE repacks the values (awq_marlin_moe_repack / gptq_marlin_moe_repack) and permutes
 *    the scales (marlin_moe_permute_scales) into tensors of the same shapes and dtypes;
 *  - zero points: AWQ's and compressed-tensors' stay packed int32 (G x N / 8, the checkpoint's
 *    bytes); GPTQMarlinMoEMethod creates w13/w2_qzeros (G, N / pack_factor) in params_dtype and
 *    keeps them although the symmetric kernel never reads them (2 bytes per 8 values at 4 bits,
 *    half the checkpoint's int32);
 *  - g_idx: w13/w2_g_idx and their sort indices (int32 per input) are created for GPTQ and
 *    compressed-tensors, emptied without act-order; GPTQ act-order keeps the sorted g_idx and the
 *    indices (two per input);
 *  - workspace: marlin_make_workspace_new(device, 4) per MoE layer, SMs x 4 int32, inside the
 *    loader (so inside "Model loading took").
 * moe_wna16 keeps uint8-packed values and scales of the checkpoint's bytes, AWQ zero points packed
 * as stored, and registers a symmetric GPTQ checkpoint's qzeros and g_idx as empty tensors (not
 * held). Its group-size halving (an intermediate per rank its group does not divide, scales
 * repeated) and compressed-tensors' own Triton fallback are refused by name.
 */
#include <optional>
#include <string>
#include <vector>

#include "core/base/checked_math.h"
#include "core/model/weights_common.h"
#include "vllm_mem/base/error.h"

namespace vllm_mem {
namespace {

constexpr const char* kField = "weights";  // overflow errors name the computation
constexpr int64_t kInt32Bytes = 4;
constexpr int64_t kMarlinMoeBlocksPerSm =
    4;  // AWQMoEMethod / GPTQMarlinMoEMethod: marlin_make_workspace_new(device, 4)

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kField); }
int64_t Add(int64_t a, int64_t b) { return CheckedAdd(a, b, kField); }

/*! A layer's routed experts as DescribeMlp lists them: the fused gate/up (in = hidden) and down
 *  (in = intermediate per rank) projections, E copies each. */
struct ExpertPair {
  const Linear* up = nullptr;
  const Linear* down = nullptr;
};

ExpertPair FindExperts(const std::vector<Linear>& linears) {
  for (size_t i = 0; i + 1 < linears.size(); ++i) {
    if (linears[i].expert && linears[i + 1].expert && linears[i].quantizable) return {&linears[i], &linears[i + 1]};
  }
  return {};
}

/*! marlin_utils.py check_moe_marlin_supports_layer: hidden % 128, intermediate per rank a multiple
 *  of max(64, group), a Marlin group size; the SiLU-and-mul activation (a gated MLP). */
bool MarlinMoeTakes(const ExpertPair& e, const QuantizationSpec& q) {
  const int64_t hidden = e.up->in_features;
  const int64_t intermediate = e.down->in_features;
  const bool gated = e.up->out_features == 2 * intermediate;
  const bool group_ok = q.group_size == -1 || q.group_size == 32 || q.group_size == 64 || q.group_size == 128;
  const int64_t k_align = q.group_size > 64 ? q.group_size : 64;
  return gated && group_ok && hidden % 128 == 0 && intermediate % k_align == 0;
}

/*! One expert's scales, zero points and index tensors after Marlin MoE's loading. */
int64_t MarlinMoeOverhead(const Linear& l, const QuantizationSpec& q, const std::string& family, int64_t dtype_bytes) {
  const int64_t groups = q.group_size > 0 ? CeilDiv(l.in_features, q.group_size) : 1;
  const int64_t group_entries = Mul(groups, l.out_features);
  int64_t overhead = Mul(group_entries, dtype_bytes);  // scales, permuted in place of the loaded ones
  if (family == "gptq") {
    const int64_t pack_factor = 32 / q.weight_bits;  // GPTQMarlinConfig.pack_factor
    overhead = Add(overhead, Mul(Mul(groups, CeilDiv(l.out_features, pack_factor)), dtype_bytes));
    if (q.desc_act) overhead = Add(overhead, Mul(Mul(2, l.in_features), kInt32Bytes));  // sorted g_idx + indices
  } else if (q.zero_point) {
    overhead = Add(overhead, CeilDiv(Mul(group_entries, q.weight_bits), 8));  // int32-packed, as stored
  }
  return overhead;
}

/*! One expert's scales and zero points under moe_wna16 (its group size unchanged). */
int64_t MoeWna16Overhead(const Linear& l, const QuantizationSpec& q, const std::string& family, int64_t dtype_bytes) {
  const int64_t group_entries = Mul(CeilDiv(l.in_features, q.group_size), l.out_features);
  int64_t overhead = Mul(group_entries, dtype_bytes);
  // MoeWNA16Config.has_zp: AWQ's zero_point, GPTQ's not sym (asymmetric GPTQ never reaches here).
  if (family == "awq" && q.zero_point) overhead = Add(overhead, CeilDiv(Mul(group_entries, q.weight_bits), 8));
  return overhead;
}

/*! Why moe_wna16's layout is not modelled for this layer ("" when it is). */
std::string MoeWna16Refusal(const ExpertPair& e, const QuantizationSpec& q, const std::string& family) {
  const std::string what = "AWQ / GPTQ MoE experts that vLLM's Marlin MoE cannot take (hidden " +
                           std::to_string(e.up->in_features) + ", intermediate per rank " +
                           std::to_string(e.down->in_features) + ", group " + std::to_string(q.group_size) + ") ";
  if (family == "compressed-tensors") {
    return "compressed-tensors WNA16 MoE experts that vLLM's Marlin MoE cannot take go to "
           "CompressedTensorsWNA16MoEMethod, whose layout is not modelled";
  }
  if (q.group_size <= 0 || e.up->in_features % q.group_size != 0 || e.down->in_features % q.group_size != 0) {
    return what + "go to moe_wna16, which halves the group size and repeats the scales; not modelled";
  }
  if (q.desc_act) return what + "with act-order (desc_act) go to moe_wna16; not modelled";
  return "";
}

void AddHeld(RankWeights& r, int64_t overhead_delta, int64_t beyond_checkpoint, int64_t times) {
  r.quantization_overhead_bytes = Add(r.quantization_overhead_bytes, Mul(overhead_delta, times));
  r.kernel_layout_bytes = Add(r.kernel_layout_bytes, Mul(beyond_checkpoint, times));
}

/*! The checkpoint overhead of \p l replaced by \p after_per_copy (signed delta, all copies). */
int64_t Replaced(const Linear& l, const QuantizationSpec& q, int64_t dtype_bytes, int64_t after_per_copy) {
  const int64_t checkpoint = StoredLinearBytes(l, q, dtype_bytes).overhead / l.copies;
  return Mul(after_per_copy - checkpoint, l.copies);
}

}  // namespace

void AddWna16MoeLayout(RankWeights& r, const std::vector<Linear>& linears, const std::optional<QuantizationSpec>& q,
                       int64_t dtype_bytes, int64_t times, const WeightOptions& options) {
  if (options.mp_linear_kernel.empty() || !q) return;
  const std::string family = Wna16Family(*q);
  // Asymmetric GPTQ is not gptq_marlin's: vLLM's plain gptq method keeps the checkpoint's layout.
  if (family.empty() || (family == "gptq" && !q->gptq_symmetric)) return;
  const ExpertPair e = FindExperts(linears);
  if (e.up == nullptr) return;
  if (!MarlinMoeTakes(e, *q)) {
    const std::string refusal = MoeWna16Refusal(e, *q, family);
    if (!refusal.empty()) throw Unsupported(refusal);
    for (const Linear* l : {e.up, e.down}) {
      AddHeld(r, Replaced(*l, *q, dtype_bytes, MoeWna16Overhead(*l, *q, family, dtype_bytes)), 0, times);
    }
    return;
  }
  if (family == "gptq" && q->desc_act && options.tensor_parallel_size > 1) {
    // load_full_w2: act-order keeps w2's scales and qzeros whole on every rank.
    throw Unsupported(
        "GPTQ act-order (desc_act) MoE experts under tensor parallelism (w2 scales loaded whole) "
        "are not modelled");
  }
  for (const Linear* l : {e.up, e.down}) {
    const int64_t sort_indices = family == "gptq" && q->desc_act ? Mul(l->in_features, kInt32Bytes) : 0;
    AddHeld(r, Replaced(*l, *q, dtype_bytes, MarlinMoeOverhead(*l, *q, family, dtype_bytes)),
            Mul(sort_indices, l->copies), times);
  }
  const int64_t workspace = MarlinWorkspaceBytes(options.gpu_sm_count, kMarlinMoeBlocksPerSm);
  AddHeld(r, workspace, workspace, times);
}

}  // namespace vllm_mem
