/*!
 * \file core/kv_cache/kv_cache_dtype.cc
 * \brief The --kv-cache-dtype table.
 */
#include "vllm_mem/kv_cache/kv_cache_dtype.h"

#include <array>

#include "vllm_mem/base/error.h"

namespace vllm_mem {
namespace {

struct Entry {
  const char* name;
  int64_t element_size_bytes;
  KvQuantMode mode;
};

// vLLM's STR_DTYPE_TO_TORCH_DTYPE: every quantized format is stored as 1-byte elements
// (uint8 / int8 / float8_e4m3fn); get_kv_quant_mode decides the scale layout.
constexpr std::array<Entry, 18> kTable{{
    {"float16", 2, KvQuantMode::kNone},
    {"half", 2, KvQuantMode::kNone},
    {"bfloat16", 2, KvQuantMode::kNone},
    {"float32", 4, KvQuantMode::kNone},
    {"float", 4, KvQuantMode::kNone},
    {"fp8", 1, KvQuantMode::kFp8PerTensor},
    {"fp8_e4m3", 1, KvQuantMode::kFp8PerTensor},
    {"fp8_e5m2", 1, KvQuantMode::kFp8PerTensor},
    {"fp8_inc", 1, KvQuantMode::kFp8PerTensor},
    {"fp8_ds_mla", 1, KvQuantMode::kFp8PerTensor},
    {"fp8_per_token_head", 1, KvQuantMode::kPerTokenHead},
    {"int8_per_token_head", 1, KvQuantMode::kPerTokenHead},
    {"int4_per_token_head", 1, KvQuantMode::kInt4PerTokenHead},
    {"nvfp4", 1, KvQuantMode::kNvfp4},
    {"turboquant_k8v4", 1, KvQuantMode::kTurboQuant},
    {"turboquant_4bit_nc", 1, KvQuantMode::kTurboQuant},
    {"turboquant_k3v4_nc", 1, KvQuantMode::kTurboQuant},
    {"turboquant_3bit_nc", 1, KvQuantMode::kTurboQuant},
}};

}  // namespace

std::string AllowedKvCacheDTypes() {
  std::string out = "auto";
  for (const Entry& e : kTable) {
    out += ", ";
    out += e.name;
  }
  return out;
}

KvCacheDType ResolveKvCacheDType(std::string_view kv_cache_dtype, DType model_dtype, const char* field) {
  // An empty name is not vLLM's "auto" (its --kv-cache-dtype choices refuse ""): a caller's
  // blank field would otherwise plan with the model dtype silently.
  if (kv_cache_dtype == "auto") {
    return KvCacheDType{DTypeName(model_dtype), DTypeSizeBytes(model_dtype), KvQuantMode::kNone};
  }
  for (const Entry& e : kTable) {
    if (kv_cache_dtype == e.name) return KvCacheDType{e.name, e.element_size_bytes, e.mode};
  }
  throw InvalidArgument(field, "unknown KV-cache dtype " + EchoValue(kv_cache_dtype) +
                                   "; allowed: " + AllowedKvCacheDTypes());
}

}  // namespace vllm_mem
