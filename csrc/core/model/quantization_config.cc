/*!
 * \file core/model/quantization_config.cc
 * \brief quantization_config read into a QuantizationSpec, one reader per quant_method family.
 */
#include <algorithm>

#include "core/base/checked_math.h"
#include "core/model/config_fields.h"
#include "core/model/config_readers.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"

namespace vllm_mem {
namespace {

/*! A two-entry block shape [out, in], each in [1, kMaxIntermediateSize]. */
void ReadBlock(const JsonValue& b, const char* field, QuantizationSpec& spec) {
  if (!b.IsArray() || b.AsArray().size() != 2) throw InvalidArgument(field, "must be a list [out, in]");
  spec.block_out = AsInteger(b.AsArray()[0], field);
  spec.block_in = AsInteger(b.AsArray()[1], field);
  RequirePositiveAtMost(spec.block_out, kMaxIntermediateSize, field, "a block is never larger than a weight");
  RequirePositiveAtMost(spec.block_in, kMaxIntermediateSize, field, "a block is never larger than a weight");
}

/*! fp8: per-tensor scales unless weight_block_size asks for [out, in] blocks; fbgemm_fp8:
 *  per-channel; modelopt fp8: per-tensor. */
void ReadFp8(const JsonValue& q, QuantizationSpec& spec) {
  spec.weight_bits = 8;
  spec.per_tensor_scale = spec.method != "fbgemm_fp8";
  if (const JsonValue* b = q.Find("weight_block_size"); b != nullptr && !b->IsNull()) {
    ReadBlock(*b, "quantization_config.weight_block_size", spec);
    spec.per_tensor_scale = false;
  }
}

/*! AWQ / GPTQ (and their Marlin spellings): AWQ stores zero points unless told otherwise; GPTQ
 *  checkpoints always carry a qzeros tensor, symmetric or not. */
void ReadGroupedInt(const JsonValue& q, QuantizationSpec& spec) {
  spec.weight_bits = OptionalInt(q, {"bits", "w_bit"}).value_or(4);
  spec.group_size = OptionalInt(q, {"group_size", "q_group_size"}).value_or(128);
  spec.zero_point = spec.method.rfind("awq", 0) == 0 ? OptionalBool(q, "zero_point").value_or(true) : true;
  spec.desc_act = OptionalBool(q, "desc_act").value_or(false);
}

/*! compressed-tensors: the first config group's weight scheme decides the storage width. It
 *  writes {"group_0": {...}}; a list would otherwise read as 8-bit weights, so it is refused. */
void ReadCompressedTensors(const JsonValue& q, QuantizationSpec& spec) {
  spec.weight_bits = 8;
  const JsonValue* groups = OptionalObject(q, "config_groups", "quantization_config.config_groups");
  if (groups == nullptr || groups->AsObject().empty()) return;
  const JsonValue& first = groups->AsObject().begin()->second;
  if (!first.IsObject()) {
    throw InvalidArgument("quantization_config.config_groups", "each group must be an object, got " + first.KindName());
  }
  const JsonValue* w = first.Find("weights");
  if (w == nullptr || !w->IsObject()) return;
  spec.weight_bits = OptionalInt(*w, {"num_bits"}).value_or(8);
  spec.group_size = OptionalInt(*w, {"group_size"}).value_or(-1);
  spec.zero_point = !OptionalBool(*w, "symmetric").value_or(true);
  const std::string strategy = OptionalString(*w, "strategy");
  spec.per_tensor_scale = strategy == "tensor";
  if (strategy == "block") {
    if (const JsonValue* b = w->Find("block_structure"); b != nullptr && b->IsArray() && b->AsArray().size() == 2) {
      ReadBlock(*b, "quantization_config.block_structure", spec);
    }
  }
}

/*! The method's own reader; an unknown method is refused with the known list. */
void ReadMethod(const JsonValue& q, QuantizationSpec& spec) {
  const std::string& m = spec.method;
  if (m == "fp8" || m == "fbgemm_fp8" || m == "modelopt") {
    ReadFp8(q, spec);
  } else if (m == "awq" || m == "gptq" || m == "awq_marlin" || m == "gptq_marlin") {
    ReadGroupedInt(q, spec);
  } else if (m == "compressed-tensors") {
    ReadCompressedTensors(q, spec);
  } else if (m == "bitsandbytes") {
    spec.weight_bits = OptionalBool(q, "load_in_4bit").value_or(false) ? 4 : 8;
    spec.group_size = spec.weight_bits == 4 ? 64 : -1;  // bnb 4-bit blocksize 64
  } else if (m == "mxfp4") {
    spec.weight_bits = 4;
    spec.group_size = 32;      // one e8m0 scale byte per 32 weights
    spec.experts_only = true;  // gpt-oss: attention, router, embeddings stay in bf16
  } else {
    throw InvalidArgument("quantization_config.quant_method",
                          "unknown quantization method " + EchoValue(m) +
                              "; allowed: fp8, fbgemm_fp8, modelopt, awq, gptq, awq_marlin, "
                              "gptq_marlin, compressed-tensors, bitsandbytes, mxfp4");
  }
}

/*! The ranges vLLM's quantization configs can use. */
void CheckQuantization(const QuantizationSpec& spec) {
  if (spec.weight_bits <= 0 || spec.weight_bits > 16) {
    throw InvalidArgument("quantization_config.bits",
                          "must be between 1 and 16, got " + std::to_string(spec.weight_bits));
  }
  // -1 is GPTQ/AWQ's "per channel" (one group per row); 0 and other negatives are what vLLM's
  // GPTQConfig/AWQConfig cannot use (a zero group divides by zero when sizing the scales).
  if (spec.group_size == 0 || spec.group_size < -1) {
    throw InvalidArgument("quantization_config.group_size",
                          "must be a positive integer or -1 (per-channel), got " + std::to_string(spec.group_size));
  }
  RequireAtMost(spec.group_size, kMaxIntermediateSize, "quantization_config.group_size",
                "a group is never larger than a weight row");
}

}  // namespace

std::optional<QuantizationSpec> ReadQuantization(const JsonValue& text, const JsonValue& top) {
  const JsonValue* q = top.Find("quantization_config");
  if (q == nullptr || q->IsNull()) q = text.Find("quantization_config");
  if (q == nullptr || q->IsNull()) return std::nullopt;
  if (!q->IsObject()) {
    throw InvalidArgument("quantization_config", "must be an object, got " + q->KindName());
  }
  QuantizationSpec spec;
  spec.method = OptionalString(*q, "quant_method");
  std::transform(spec.method.begin(), spec.method.end(), spec.method.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  ReadMethod(*q, spec);
  CheckQuantization(spec);
  return spec;
}

}  // namespace vllm_mem
