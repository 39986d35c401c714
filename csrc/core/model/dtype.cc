/*!
 * \file core/model/dtype.cc
 * \brief Data type names and sizes.
 */
#include "vllm_mem/model/dtype.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "vllm_mem/base/error.h"

namespace vllm_mem {

int64_t DTypeSizeBytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kFloat8E4M3:
    case DType::kFloat8E5M2:
    case DType::kInt8:
    case DType::kUInt8: return 1;
  }
  return 0;  // unreachable: every enumerator is handled above
}

std::string DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat8E4M3: return "float8_e4m3fn";
    case DType::kFloat8E5M2: return "float8_e5m2";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
  }
  return "unknown";
}

DType ParseDType(std::string_view name, const char* field) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  if (n.rfind("torch.", 0) == 0) n = n.substr(6);
  if (n == "float32" || n == "float" || n == "fp32") return DType::kFloat32;
  if (n == "float16" || n == "half" || n == "fp16") return DType::kFloat16;
  if (n == "bfloat16" || n == "bf16") return DType::kBFloat16;
  if (n == "float8_e4m3fn" || n == "float8_e4m3" || n == "fp8" || n == "fp8_e4m3") {
    return DType::kFloat8E4M3;
  }
  if (n == "float8_e5m2" || n == "fp8_e5m2") return DType::kFloat8E5M2;
  if (n == "int8") return DType::kInt8;
  if (n == "uint8") return DType::kUInt8;
  throw InvalidArgument(field, "unknown dtype " + EchoValue(name) +
                                   "; allowed: auto, float16 (half), bfloat16, float32 (float)");
}

DType ResolveModelDType(std::string_view requested, DType checkpoint_dtype, const char* field) {
  if (requested == "auto" || requested.empty()) {
    return checkpoint_dtype == DType::kFloat32 ? DType::kBFloat16 : checkpoint_dtype;
  }
  DType d = ParseDType(requested, field);
  if (d != DType::kFloat32 && d != DType::kFloat16 && d != DType::kBFloat16) {
    throw InvalidArgument(field, "model dtype must be one of auto, float16, bfloat16, float32; got " +
                                     EchoValue(requested));
  }
  return d;
}

}  // namespace vllm_mem
