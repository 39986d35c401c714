/*!
 * \file core/model/mp_linear_layout.cc
 * \brief What vLLM's mixed-precision linear kernels (MPLinearKernel: Machete, Marlin) leave
 *        allocated for an AWQ / GPTQ / compressed-tensors WNA16 linear once
 *        process_weights_after_loading has run, against the checkpoint layout StoredLinearBytes
 *        counts (packed values, model-dtype scales, packed zero points, act-order g_idx).
 *
 * Read in vLLM's source (vllm/model_executor/layers/quantization/kernels/mixed_precision/, later
 * vllm/model_executor/kernels/linear/mixed_precision/):
 *  - both kernels keep the values' bytes (machete_prepack_B and gptq_marlin_repack permute) and the
 *    scales' (model dtype, groups x out);
 *  - Machete's transform_w_zp ("pre-apply scales to zero-points") replaces each packed zero point
 *    by -scale x zp in the activation dtype; it leaves the checkpoint's qzeros and g_idx of a
 *    symmetric GPTQ linear registered, and act-order adds an int32 `perm` per input (the closure
 *    of act_perm);
 *  - Marlin keeps packed zero points (marlin_zero_points / awq_to_marlin_zero_points) and replaces
 *    the unused g_idx and zero points of a symmetric scheme by empty tensors (freed); act-order
 *    keeps the sorted g_idx and g_idx_sort_indices, an int32 each per input, and allocates its
 *    workspace per linear (marlin_make_workspace_new(device): one int32 per SM) while loading;
 *    awq_marlin.py's AWQMarlinLinearMethod (before the release's awq_mp_linear_kernel rule)
 *    allocates the same. Machete has none.
 * MoE experts are moe_wna16_layout.cc's.
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
constexpr int64_t kMarlinLinearBlocksPerSm = 1;  // MarlinLinearKernel: marlin_make_workspace_new(device)

int64_t Mul(int64_t a, int64_t b) { return CheckedMul(a, b, kField); }
int64_t Add(int64_t a, int64_t b) { return CheckedAdd(a, b, kField); }

/*! MPLinearLayerConfig.zero_points: AWQ's zero_point, compressed-tensors' asymmetric schemes;
 *  gptq_marlin serves symmetric GPTQ only (its TYPE_MAP), so never for GPTQ. */
bool KernelZeroPoints(const QuantizationSpec& q, const std::string& family) { return family != "gptq" && q.zero_point; }

/*! machete_utils.py: group sizes -1, 64, 128 with 16-bit activations; the prepacked block
 *  (MACHETE_PREPACKED_BLOCK_SHAPE [64, 128]) must divide in x out. */
bool MacheteImplements(const Linear& l, const QuantizationSpec& q) {
  const bool group_ok = q.group_size == -1 || q.group_size == 64 || q.group_size == 128;
  return group_ok && l.in_features % 64 == 0 && l.out_features % 128 == 0;
}

/*! marlin_utils.py check_marlin_supports_shape: out a multiple of GPTQ_MARLIN_MIN_THREAD_N (64),
 *  in of GPTQ_MARLIN_MIN_THREAD_K (128) and of the group size (MARLIN_SUPPORTED_GROUP_SIZES). */
bool MarlinImplements(const Linear& l, const QuantizationSpec& q) {
  const bool group_ok = q.group_size == -1 || q.group_size == 32 || q.group_size == 64 || q.group_size == 128;
  return group_ok && l.out_features % 64 == 0 && l.in_features % 128 == 0 &&
         (q.group_size == -1 || l.in_features % q.group_size == 0);
}

/*! Overhead (scales, zero points, index tensors) per copy after \p kernel's loading. */
int64_t KernelOverhead(const Linear& l, const QuantizationSpec& q, const std::string& family, int64_t dtype_bytes,
                       bool machete) {
  const int64_t groups = q.group_size > 0 ? CeilDiv(l.in_features, q.group_size) : 1;
  const int64_t group_entries = Mul(groups, l.out_features);
  const int64_t packed_zp = CeilDiv(Mul(group_entries, q.weight_bits), 8);
  const int64_t per_input = Mul(l.in_features, kInt32Bytes);
  int64_t overhead = Mul(group_entries, dtype_bytes);  // scales
  if (KernelZeroPoints(q, family)) {
    overhead = Add(overhead, machete ? Mul(group_entries, dtype_bytes) : packed_zp);
  } else if (machete && family == "gptq") {
    overhead = Add(overhead, Add(packed_zp, per_input));  // qzeros and g_idx stay registered
  }
  if (q.desc_act) overhead = Add(overhead, machete ? per_input : Mul(2, per_input));  // perm / sorted g_idx + indices
  return overhead;
}

/*! What the kernel changes in one linear's bytes after loading. */
struct MpLinearDelta {
  int64_t overhead = 0;       //!< signed change of LinearBytes::overhead (all copies)
  int64_t kernel_layout = 0;  //!< of the bytes held, those no checkpoint tensor holds
};

MpLinearDelta MpLinearLayoutDelta(const Linear& l, const std::optional<QuantizationSpec>& q, int64_t dtype_bytes,
                                  const std::string& kernel, int64_t tensor_parallel_size, int64_t sm_count) {
  MpLinearDelta d;
  if (kernel.empty() || !q || !l.quantizable || l.expert || l.element_bytes > 0) return d;
  const std::string family = Wna16Family(*q);
  if (family.empty() || (family == "gptq" && !q->gptq_symmetric)) return d;  // gptq (exllama) keeps the checkpoint's
  bool machete = kernel == "machete" && MacheteImplements(l, *q);
  if (machete && q->desc_act && tensor_parallel_size > 1) {
    // MacheteLinearKernel.can_implement refuses act-order on a row-split input and Marlin takes
    // those linears; which linears are row-split is not told to this count.
    throw Unsupported(
        "GPTQ act-order (desc_act) under tensor parallelism on Machete (compute capability 9.0) "
        "is not modelled");
  }
  if (!machete && !MarlinImplements(l, *q)) return d;  // vLLM's fallback kernels keep the checkpoint's layout
  const int64_t checkpoint = StoredLinearBytes(l, q, dtype_bytes).overhead / l.copies;
  const int64_t after = KernelOverhead(l, *q, family, dtype_bytes, machete);
  d.overhead = Mul(after - checkpoint, l.copies);
  // Beyond any checkpoint tensor: Machete's widened zero points, act-order's index copies.
  int64_t added = 0;
  const int64_t group_entries = Mul(q->group_size > 0 ? CeilDiv(l.in_features, q->group_size) : 1, l.out_features);
  if (machete && KernelZeroPoints(*q, family)) {
    added = Mul(group_entries, dtype_bytes) - CeilDiv(Mul(group_entries, q->weight_bits), 8);
  }
  if (q->desc_act) added = Add(added, Mul(l.in_features, kInt32Bytes));
  d.kernel_layout = Mul(added, l.copies);
  if (!machete) {
    const int64_t workspace = MarlinWorkspaceBytes(sm_count, kMarlinLinearBlocksPerSm);
    d.overhead = Add(d.overhead, workspace);
    d.kernel_layout = Add(d.kernel_layout, workspace);
  }
  return d;
}

void CheckMpLinearKernel(const WeightOptions& options) {
  const std::string& kernel = options.mp_linear_kernel;
  if (!kernel.empty() && options.gpu_sm_count <= 0) {
    throw InvalidArgument("gpu_sm_count",
                          "the GPU's SM count must be positive, got " + std::to_string(options.gpu_sm_count));
  }
  if (kernel.empty() || kernel == "marlin" || kernel == "machete") return;
  throw InvalidArgument("mp_linear_kernel", "unknown mixed-precision linear kernel " + EchoValue(kernel) +
                                                "; allowed: '' (the checkpoint's layout), marlin, machete");
}

}  // namespace

std::string Wna16Family(const QuantizationSpec& q) {
  if (!HasWna16Linears(q)) return "";
  if (q.method.rfind("awq", 0) == 0) return "awq";
  return q.method.rfind("gptq", 0) == 0 ? "gptq" : "compressed-tensors";
}

int64_t MarlinWorkspaceBytes(int64_t sm_count, int64_t blocks_per_sm) {
  return AllocatorBlockBytes(Mul(Mul(sm_count, blocks_per_sm), kInt32Bytes), kField);
}

bool HasWna16Linears(const QuantizationSpec& q) {
  if (q.weight_bits != 4 || q.nvfp4) return false;
  return q.method.rfind("awq", 0) == 0 || q.method.rfind("gptq", 0) == 0 || q.method == "compressed-tensors";
}

void AddMpLinearLayout(RankWeights& r, const std::vector<Linear>& linears, const std::optional<QuantizationSpec>& q,
                       int64_t dtype_bytes, int64_t times, const WeightOptions& options) {
  CheckMpLinearKernel(options);
  for (const Linear& l : linears) {
    const MpLinearDelta d = MpLinearLayoutDelta(l, q, dtype_bytes, options.mp_linear_kernel,
                                                options.tensor_parallel_size, options.gpu_sm_count);
    r.quantization_overhead_bytes = Add(r.quantization_overhead_bytes, Mul(d.overhead, times));
    r.kernel_layout_bytes = Add(r.kernel_layout_bytes, Mul(d.kernel_layout, times));
  }
  AddWna16MoeLayout(r, linears, q, dtype_bytes, times, options);
}

}  // namespace vllm_mem
