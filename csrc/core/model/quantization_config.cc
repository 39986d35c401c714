/*!
 * \file core/model/quantization_config.cc
 * \brief quantization_config read into a QuantizationSpec, one reader per quant_method family.
 */
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

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

/*! The checkpoint's list of unquantized modules under \p key: a list of strings, or absent. */
void ReadModuleList(const JsonValue& q, const char* key, QuantizationSpec& spec) {
  const JsonValue* list = q.Find(key);
  if (list == nullptr || list->IsNull()) return;
  const std::string field = std::string("quantization_config.") + key;
  if (!list->IsArray()) throw InvalidArgument(field, "must be a list of module names, got " + list->KindName());
  for (const JsonValue& e : list->AsArray()) {
    if (!e.IsString()) throw InvalidArgument(field, "entries must be module names (strings), got " + e.KindName());
    spec.unquantized_modules.push_back(e.AsString());
  }
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
  spec.gptq_symmetric = OptionalBool(q, "sym").value_or(true);
  ReadModuleList(q, "modules_to_not_convert", spec);
  if (const JsonValue* d = q.Find("dynamic"); d != nullptr && d->IsObject() && !d->AsObject().empty()) {
    // gptq.py's per-module overrides ("-:" skips a module, "+:" changes its bits or group size).
    throw Unsupported("GPTQ `dynamic` per-module overrides are not modelled");
  }
}

/*! One compressed-tensors config group's weight scheme. NVFP4 (nvfp4-pack-quantized) is 4-bit
 *  "float" weights in groups of 16; other 4-bit float schemes (MXFP4) are refused by name. */
void ReadCompressedGroup(const JsonValue& w, QuantizationSpec& spec) {
  spec.weight_bits = OptionalInt(w, {"num_bits"}).value_or(8);
  spec.group_size = OptionalInt(w, {"group_size"}).value_or(-1);
  spec.zero_point = !OptionalBool(w, "symmetric").value_or(true);
  const std::string strategy = OptionalString(w, "strategy");
  spec.per_tensor_scale = strategy == "tensor";
  if (strategy == "block") {
    if (const JsonValue* b = w.Find("block_structure"); b != nullptr && b->IsArray() && b->AsArray().size() == 2) {
      ReadBlock(*b, "quantization_config.block_structure", spec);
    }
  }
  if (OptionalString(w, "type") == "float" && spec.weight_bits == 4) {
    if (spec.group_size != 16) {
      throw Unsupported("compressed-tensors 4-bit float weights in groups of " + std::to_string(spec.group_size) +
                        " (MXFP4) are not modelled; NVFP4 (groups of 16) is");
    }
    spec.nvfp4 = true;
    spec.zero_point = false;
  }
}

bool SameStorage(const QuantizationSpec& a, const QuantizationSpec& b) {
  return a.weight_bits == b.weight_bits && a.group_size == b.group_size && a.zero_point == b.zero_point &&
         a.per_tensor_scale == b.per_tensor_scale && a.block_out == b.block_out && a.block_in == b.block_in &&
         a.nvfp4 == b.nvfp4;
}

/*! compressed-tensors: the config groups' weight scheme decides the storage width. It writes
 *  {"group_0": {...}}; a list would otherwise read as 8-bit weights, so it is refused. Groups with
 *  different weight schemes (mixed precision, each group its own targets) are refused by name. */
void ReadCompressedTensors(const JsonValue& q, QuantizationSpec& spec) {
  spec.weight_bits = 8;
  const JsonValue* groups = OptionalObject(q, "config_groups", "quantization_config.config_groups");
  if (groups == nullptr || groups->AsObject().empty()) return;
  std::optional<QuantizationSpec> first;
  for (const auto& [name, group] : groups->AsObject()) {
    if (!group.IsObject()) {
      throw InvalidArgument("quantization_config.config_groups", "each group must be an object, got " + group.KindName());
    }
    const JsonValue* w = group.Find("weights");
    if (w == nullptr || !w->IsObject()) continue;
    QuantizationSpec one = spec;
    ReadCompressedGroup(*w, one);
    if (first && !SameStorage(*first, one)) {
      throw Unsupported("compressed-tensors config_groups with different weight schemes (" + name +
                        ") are not modelled: mixed-precision checkpoints are refused");
    }
    if (!first) first = one;
  }
  if (first) spec = *first;
}

/*! ModelOpt: quant_algo FP8 (per-tensor scales) or NVFP4 (vLLM's modelopt_fp4), read from the
 *  config or its nested "quantization" block (hf_quant_config.json); other algorithms are refused. */
void ReadModelOpt(const JsonValue& q, QuantizationSpec& spec) {
  const JsonValue* nested = q.Find("quantization");
  const JsonValue& body = nested != nullptr && nested->IsObject() ? *nested : q;
  std::string algo = OptionalString(body, "quant_algo");
  std::transform(algo.begin(), algo.end(), algo.begin(), [](unsigned char c) { return std::toupper(c); });
  if (algo.empty() || algo == "FP8") {
    ReadFp8(q, spec);
  } else if (algo == "NVFP4") {
    spec.weight_bits = 4;
    spec.group_size = OptionalInt(body, {"group_size"}).value_or(16);
    spec.nvfp4 = true;
  } else {
    throw Unsupported("ModelOpt quant_algo " + EchoValue(algo) + " is not modelled (FP8 and NVFP4 are)");
  }
  ReadModuleList(body, "exclude_modules", spec);
}

/*! The method's own reader; an unknown method is refused with the known list. */
void ReadMethod(const JsonValue& q, QuantizationSpec& spec) {
  const std::string& m = spec.method;
  if (m == "fp8" || m == "fbgemm_fp8") {
    ReadFp8(q, spec);
    ReadModuleList(q, "ignored_layers", spec);
  } else if (m == "modelopt" || m == "modelopt_fp4") {
    ReadModelOpt(q, spec);
  } else if (m == "awq" || m == "gptq" || m == "awq_marlin" || m == "gptq_marlin") {
    ReadGroupedInt(q, spec);
  } else if (m == "compressed-tensors") {
    ReadCompressedTensors(q, spec);
    ReadModuleList(q, "ignore", spec);
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
                              "; allowed: fp8, fbgemm_fp8, modelopt, modelopt_fp4, awq, gptq, awq_marlin, "
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
