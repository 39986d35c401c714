/*!
 * \file core/kv_cache/mamba_state.cc
 * \brief Recurrent-state shapes, dtypes and the attention / Mamba page unification of hybrid
 *        models (vLLM mamba_utils.py, models/config.py, platforms/interface.py).
 */
#include "vllm_mem/kv_cache/mamba_state.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "core/base/checked_math.h"
#include "core/model/parallelism.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

/*! CacheConfig's MambaDType: the values --mamba-cache-dtype / --mamba-ssm-cache-dtype accept. */
DType ParseMambaDType(const std::string& value, const char* field) {
  if (value == "float32" || value == "float16" || value == "bfloat16") return ParseDType(value, field);
  throw InvalidArgument(field, "must be one of auto, float32, float16, bfloat16 (vLLM's MambaDType), got " +
                                   EchoValue(value));
}

/*! vLLM's divide(): asserts divisibility. */
int64_t Divide(int64_t a, int64_t tp, const char* what) {
  if (a % tp != 0) {
    throw InvalidArgument("tensor_parallel_size", std::string(what) + " (" + std::to_string(a) +
                                                      ") must be divisible by tensor_parallel_size (" +
                                                      std::to_string(tp) + ")");
  }
  return a / tp;
}

MambaStateTensor Tensor(const char* name, std::vector<int64_t> shape, DType dtype) {
  MambaStateTensor t;
  t.name = name;
  t.dtype = DTypeName(dtype);
  int64_t elements = 1;
  for (int64_t d : shape) elements = CheckedMul(elements, d, "mamba_state_bytes");
  t.bytes = CheckedMul(elements, DTypeSizeBytes(dtype), "mamba_state_bytes");
  t.shape = std::move(shape);
  return t;
}

}  // namespace

int64_t Mamba2GroupsAfterReplication(int64_t n_groups, int64_t tp) {
  // extra_groups_for_head_shards: 0 when the groups divide TP, else tp - n_groups (for
  // n_groups == 1 that gives one group per rank). MambaMixer2 asserts that any other count
  // divides TP (tp - n_groups would otherwise go negative and shrink the state).
  if (n_groups % tp != 0 && n_groups != 1) {
    throw InvalidArgument("tensor_parallel_size", "If tensor parallel world size does not divide num_groups, then "
                                                  "num_groups must equal 1. (n_groups " + std::to_string(n_groups) +
                                                      ", tensor_parallel_size " + std::to_string(tp) + ")");
  }
  return n_groups % tp == 0 ? n_groups : n_groups + (tp - n_groups);
}

MambaStateLayout ComputeMambaState(const ModelSpec& model, DType model_dtype, const MambaStateOptions& o) {
  if (!model.hybrid) throw InvalidArgument("model", "has no recurrent (Mamba / linear-attention) layers");
  const HybridSpec& h = *model.hybrid;
  const int64_t tp = o.tensor_parallel_size;
  RequirePositive(tp, "tensor_parallel_size");
  RequireNonNegative(o.num_speculative_tokens, "num_speculative_tokens");
  // get_kv_cache_torch_dtype(mamba_cache_dtype, model_dtype): "auto" is the model dtype.
  const DType conv_dtype =
      o.mamba_cache_dtype == "auto" ? model_dtype : ParseMambaDType(o.mamba_cache_dtype, "mamba_cache_dtype");
  std::string ssm_name = o.mamba_ssm_cache_dtype;
  if (ssm_name == "auto" && o.ssm_dtype_from_config && h.ssm_dtype_from_config && !h.config_ssm_cache_dtype.empty()) {
    ssm_name = h.config_ssm_cache_dtype;
  }
  // _mamba_state_dtype: an "auto" SSM dtype follows the conv state's.
  const DType ssm_dtype = ssm_name == "auto" ? conv_dtype : ParseMambaDType(ssm_name, "mamba_ssm_cache_dtype");
  const int64_t spec = o.conv_state_includes_spec_tokens ? o.num_speculative_tokens : 0;

  MambaStateLayout out;
  switch (h.kind) {
    case RecurrentMixerKind::kMamba1: {
      const int64_t dim = Divide(h.intermediate_size, tp, "mamba intermediate_size");
      out.tensors.push_back(Tensor("conv", {h.conv_kernel - 1, dim}, conv_dtype));
      out.tensors.push_back(Tensor("ssm", {dim, h.state_size}, ssm_dtype));
      break;
    }
    case RecurrentMixerKind::kMamba2: {
      const int64_t groups = Mamba2GroupsAfterReplication(h.n_groups, tp);
      const int64_t conv_dim = CheckedAdd(
          h.intermediate_size, CheckedMul(2 * groups, h.state_size, "mamba_state_bytes"), "mamba_state_bytes");
      out.tensors.push_back(
          Tensor("conv", {h.conv_kernel - 1 + spec, Divide(conv_dim, tp, "mamba conv_dim")}, conv_dtype));
      out.tensors.push_back(
          Tensor("ssm", {Divide(h.num_heads, tp, "mamba num_heads"), h.head_dim, h.state_size}, ssm_dtype));
      break;
    }
    case RecurrentMixerKind::kGatedDeltaNet: {
      const int64_t conv_dim = CheckedAdd(CheckedMul(2 * h.num_k_heads, h.head_k_dim, "mamba_state_bytes"),
                                          CheckedMul(h.num_heads, h.head_dim, "mamba_state_bytes"), "mamba_state_bytes");
      out.tensors.push_back(
          Tensor("conv", {h.conv_kernel - 1 + spec, Divide(conv_dim, tp, "linear-attention conv_dim")}, conv_dtype));
      out.tensors.push_back(
          Tensor("ssm", {Divide(h.num_heads, tp, "linear_num_value_heads"), h.head_dim, h.head_k_dim}, ssm_dtype));
      break;
    }
    case RecurrentMixerKind::kKimiDelta: {
      // MambaStateShapeCalculator.kda_state_shape: the q, k and v short-conv states (one (k-1, H*D/tp)
      // tensor each in older releases, one of 3*H*D/tp since; the same bytes) in the conv dtype, and
      // the recurrent state (H/tp, D, D) in float32 whatever --mamba-ssm-cache-dtype says
      // (kda_state_dtype returns (state_dtype, torch.float32)).
      const int64_t proj = CheckedMul(h.num_heads, h.head_dim, "mamba_state_bytes");
      out.tensors.push_back(Tensor(
          "conv", {h.conv_kernel - 1 + spec, Divide(CheckedMul(3, proj, "mamba_state_bytes"), tp, "KDA conv_dim")},
          conv_dtype));
      out.tensors.push_back(
          Tensor("ssm", {Divide(h.num_heads, tp, "linear_attn_config.num_heads"), h.head_dim, h.head_dim},
                 DType::kFloat32));
      break;
    }
    case RecurrentMixerKind::kLightning:
      // MambaStateShapeCalculator.linear_attention_state_shape: (num_heads // tp, head_dim, head_dim), one
      // tensor in linear_attention_state_dtype = get_kv_cache_torch_dtype(mamba_cache_dtype, model dtype)
      // (mamba_utils.py); --mamba-ssm-cache-dtype is not read. MiniMaxText01LinearAttention asserts
      // that TP divides the heads.
      out.tensors.push_back(
          Tensor("ssm", {Divide(h.num_heads, tp, "num_attention_heads"), h.head_dim, h.head_dim}, conv_dtype));
      break;
    case RecurrentMixerKind::kShortConv:
      // MambaStateShapeCalculator.short_conv_state_shape: (conv_kernel - 1 + num_spec, conv_dim / tp),
      // in short_conv_state_dtype (the conv dtype); no SSM state.
      out.tensors.push_back(Tensor(
          "conv", {h.conv_kernel - 1 + spec, Divide(h.intermediate_size, tp, "conv_dim")}, conv_dtype));
      break;
  }
  for (const MambaStateTensor& t : out.tensors) {
    out.page_size_bytes = CheckedAdd(out.page_size_bytes, t.bytes, "mamba_state_bytes");
  }
  return out;
}

HybridBlockSize AlignHybridBlockSize(const HybridBlockSizeInputs& in) {
  RequirePositive(in.attention_page_per_token_bytes, "attention_page_per_token_bytes");
  RequirePositive(in.mamba_page_size_bytes, "mamba_page_size_bytes");
  RequirePositive(in.kernel_block_alignment_tokens, "kernel_block_alignment_tokens");
  RequireNonNegative(in.user_block_size_tokens, "block_size");
  HybridBlockSize out;
  out.mamba_page_size_bytes = in.mamba_page_size_bytes;
  const int64_t page1 = in.attention_page_per_token_bytes;
  const int64_t mamba = in.mamba_page_size_bytes;
  int64_t align = in.kernel_block_alignment_tokens;
  if (in.align_to_user_block_size && in.user_block_size_tokens > 0) align = std::max(align, in.user_block_size_tokens);

  int64_t attn_block = 0;
  if (in.cache_mode == MambaCacheMode::kAll) {
    // Prefix caching of every block: the attention block is a multiple of the SSD chunk (and of
    // the kernel alignment) that holds one Mamba state's worth of attention tokens.
    RequirePositive(in.mamba_chunk_size_tokens, "mamba_block_size");
    const int64_t chunk = std::lcm(in.mamba_chunk_size_tokens, align);
    attn_block = CheckedMul(chunk, CeilDiv(CeilDiv(mamba, page1), chunk), "block_size");
  } else {
    // The smallest multiple of the alignment whose attention page holds one Mamba page.
    attn_block = CheckedMul(align, CeilDiv(mamba, CheckedMul(align, page1, "block_size")), "block_size");
  }
  int64_t block = in.user_block_size_tokens;
  if (block == 0 || block < attn_block) {
    block = attn_block;
    out.log_lines.push_back("Setting attention block size to " + std::to_string(block) +
                            " tokens to ensure that attention page size is >= mamba page size.");
  }
  if (in.cache_mode == MambaCacheMode::kAll) out.mamba_block_size_tokens = attn_block;
  if (in.cache_mode == MambaCacheMode::kAlign) out.mamba_block_size_tokens = block;
  int64_t attn_page = CheckedMul(block, page1, "page_size_bytes");
  if (mamba > attn_page) {
    // Unreachable from the rule above; kept as vLLM keeps it (large linear-attention states).
    block = CeilDiv(mamba, page1);
    attn_page = CheckedMul(block, page1, "page_size_bytes");
    out.log_lines.push_back("Setting attention block size to " + std::to_string(block) +
                            " tokens to ensure attention page size matches large mamba page size.");
  }
  out.attention_block_size_tokens = block;
  out.attention_page_size_bytes = attn_page;
  if (attn_page != mamba) {
    out.mamba_page_size_padded_bytes = attn_page;
    out.mamba_padding_percent = 100.0 * static_cast<double>(attn_page - mamba) / static_cast<double>(mamba);
    out.log_lines.push_back("Padding mamba page size by " + FormatFixed(out.mamba_padding_percent, 2) +
                            "% to ensure that mamba page size and attention page size are exactly equal.");
  }
  return out;
}

HybridKvOptions HybridKvOptionsOf(const KvCacheOptions& o) {
  HybridKvOptions h;
  h.model_dtype = o.model_dtype;
  h.mamba_cache_dtype = o.mamba_cache_dtype;
  h.mamba_ssm_cache_dtype = o.mamba_ssm_cache_dtype;
  if (o.mamba_cache_mode == "none") {
    h.cache_mode = MambaCacheMode::kNone;
  } else if (o.mamba_cache_mode == "align") {
    h.cache_mode = MambaCacheMode::kAlign;
  } else if (o.mamba_cache_mode == "all") {
    h.cache_mode = MambaCacheMode::kAll;
  } else {
    throw InvalidArgument("mamba_cache_mode", "must be one of none, align, all (vLLM's --mamba-cache-mode), got " +
                                                  EchoValue(o.mamba_cache_mode));
  }
  RequireNonNegative(o.num_speculative_tokens, "num_speculative_tokens");
  RequireAtMost(o.num_speculative_tokens, kMaxNumSeqs, "num_speculative_tokens", "vllm_mem/base/limits.h");
  RequireNonNegative(o.mamba_block_size, "mamba_block_size");
  RequireAtMost(o.mamba_block_size, kMaxModelLenTokens, "mamba_block_size", "vllm_mem/base/limits.h");
  RequireNonNegative(o.hybrid_kernel_block_alignment, "hybrid_kernel_block_alignment");
  RequireAtMost(o.hybrid_kernel_block_alignment, kMaxModelLenTokens, "hybrid_kernel_block_alignment",
                "vllm_mem/base/limits.h");
  if (!(o.group_size_max_ratio == 0.0 || (o.group_size_max_ratio >= 1.0 && o.group_size_max_ratio <= 1e6))) {
    throw InvalidArgument("group_size_max_ratio", "must be 0 (always the smallest type's size) or in [1, 1e6], got " +
                                                      FormatFixed(o.group_size_max_ratio, 3));
  }
  h.num_speculative_tokens = o.num_speculative_tokens;
  h.user_block_size_tokens = o.block_size;
  h.mamba_block_size_tokens = o.mamba_block_size;
  h.kernel_block_alignment_tokens = o.hybrid_kernel_block_alignment;
  h.align_to_user_block_size = o.hybrid_align_to_user_block_size;
  h.ssm_dtype_from_config = o.mamba_ssm_dtype_from_config;
  h.conv_state_includes_spec_tokens = o.mamba_conv_state_includes_spec_tokens;
  h.group_size_max_ratio = o.group_size_max_ratio;
  return h;
}

HybridLayerPlan PlanHybridLayers(const ModelSpec& model, const KvSpecBuildOptions& options,
                                 int64_t default_block_size) {
  const HybridKvOptions& h = options.hybrid;
  if (!model.hybrid) throw InvalidArgument("model", "has no recurrent (Mamba / linear-attention) layers");
  if (h.cache_mode == MambaCacheMode::kAll && !model.hybrid->cache_mode_all_refusal.empty()) {
    // The family's model file refuses it when the model is built (model_families.json traits:
    // Qwen3.5's qwen3_5.py, LFM2's lfm2.py).
    throw Unsupported(model.hybrid->cache_mode_all_refusal);
  }
  const DType model_dtype = ResolveModelDType(h.model_dtype, model.dtype, "dtype");
  MambaStateOptions so;
  so.mamba_cache_dtype = h.mamba_cache_dtype;
  so.mamba_ssm_cache_dtype = h.mamba_ssm_cache_dtype;
  so.tensor_parallel_size = options.tensor_parallel_size;
  so.num_speculative_tokens = h.num_speculative_tokens;
  so.conv_state_includes_spec_tokens = h.conv_state_includes_spec_tokens;
  so.ssm_dtype_from_config = h.ssm_dtype_from_config;

  HybridLayerPlan plan;
  plan.state = ComputeMambaState(model, model_dtype, so);
  plan.attention_block_size_tokens = options.block_size_tokens > 0 ? options.block_size_tokens : default_block_size;
  plan.mamba.state_bytes = plan.state.page_size_bytes;
  plan.mamba.block_size_tokens = 0;  // mode "none": max_model_len, filled per request
  plan.mamba.cache_mode = h.cache_mode;
  // MambaSpec.num_speculative_blocks: the states of the speculated tokens.
  plan.mamba.num_speculative_blocks = h.num_speculative_tokens;

  if (model.hybrid->num_attention_layers > 0) {
    // FullAttentionSpec(block_size=1) of the attention layers, in the KV-cache dtype; an
    // MLAAttentionSpec for MLA models (Kimi-Linear), as verify_and_update_config builds it.
    AttentionPageLayout one = AttentionLayoutOf(model, options);
    one.block_size_tokens = 1;
    HybridBlockSizeInputs in;
    in.attention_page_per_token_bytes = model.mla ? UnpaddedPageSizeBytes(MlaKvSpec{one})
                                                  : UnpaddedPageSizeBytes(FullAttentionKvSpec{one, 0, 0});
    in.mamba_page_size_bytes = plan.state.page_size_bytes;
    in.kernel_block_alignment_tokens =
        h.kernel_block_alignment_tokens > 0 ? h.kernel_block_alignment_tokens : (model.mla ? 64 : 16);
    in.user_block_size_tokens = h.user_block_size_tokens;
    in.align_to_user_block_size = h.align_to_user_block_size;
    in.cache_mode = h.cache_mode;
    in.mamba_chunk_size_tokens = h.mamba_block_size_tokens > 0 ? h.mamba_block_size_tokens : model.hybrid->chunk_size;
    if (h.cache_mode == MambaCacheMode::kAll && in.mamba_chunk_size_tokens <= 0) {
      throw InvalidArgument("mamba_block_size", "mamba_cache_mode 'all' aligns blocks to the model's Mamba chunk "
                                                "size, which this config.json does not give; pass mamba_block_size");
    }
    const HybridBlockSize a = AlignHybridBlockSize(in);
    plan.attention_block_size_tokens = a.attention_block_size_tokens;
    plan.mamba.page_size_padded_bytes = a.mamba_page_size_padded_bytes;
    plan.mamba.block_size_tokens = a.mamba_block_size_tokens;
    plan.alignment = a;
  } else if (h.cache_mode != MambaCacheMode::kNone) {
    // Attention-free (Mamba-2): prefix caching aligns to the Mamba block size vLLM resolves.
    plan.mamba.block_size_tokens = h.mamba_block_size_tokens > 0 ? h.mamba_block_size_tokens
                                                                  : model.hybrid->chunk_size;
    RequirePositive(plan.mamba.block_size_tokens, "mamba_block_size");
  }
  return plan;
}

}  // namespace vllm_mem
