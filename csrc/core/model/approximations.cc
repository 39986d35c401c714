/*!
 * \file core/model/approximations.cc
 * \brief The GPU-memory guide's rules of thumb, computed with checked arithmetic.
 */
#include "vllm_mem/model/approximations.h"

#include "core/base/checked_math.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {
namespace {
constexpr int64_t kActivationLowPercent = 10;
constexpr int64_t kActivationHighPercent = 30;
}  // namespace

int64_t RuleOfThumbKvCacheBytes(int64_t batch_size, int64_t seq_len, int64_t hidden_size,
                                int64_t num_layers, int64_t dtype_bytes) {
  RequireNonNegative(batch_size, "batch_size");
  RequireNonNegative(seq_len, "seq_len");
  RequirePositive(hidden_size, "hidden_size");
  RequirePositive(num_layers, "num_layers");
  RequirePositive(dtype_bytes, "dtype_bytes");
  const char* field = "kv_cache_bytes";
  int64_t bytes = CheckedMul(batch_size, seq_len, field);
  bytes = CheckedMul(bytes, hidden_size, field);
  bytes = CheckedMul(bytes, num_layers, field);
  bytes = CheckedMul(bytes, 2, field);  // K and V
  return CheckedMul(bytes, dtype_bytes, field);
}

int64_t RuleOfThumbDTypeBytes(const ModelSpec& spec, std::string_view dtype) {
  if (dtype.empty() || dtype == "auto") return DTypeSizeBytes(ResolveModelDType("auto", spec.dtype, "dtype"));
  return DTypeSizeBytes(ParseDType(dtype, "dtype"));
}

int64_t RuleOfThumbKvCacheBytes(const ModelSpec& spec, int64_t batch_size, int64_t seq_len,
                                std::string_view dtype) {
  return RuleOfThumbKvCacheBytes(batch_size, seq_len, spec.hidden_size, spec.num_layers,
                                 RuleOfThumbDTypeBytes(spec, dtype));
}

int64_t RuleOfThumbWeightBytes(int64_t num_parameters, int64_t dtype_bytes) {
  RequireNonNegative(num_parameters, "num_parameters");
  RequirePositive(dtype_bytes, "dtype_bytes");
  return CheckedMul(num_parameters, dtype_bytes, "weight_bytes");
}

int64_t RuleOfThumbWeightBytes(const ModelSpec& spec, std::string_view dtype) {
  return RuleOfThumbWeightBytes(NumParameters(spec), RuleOfThumbDTypeBytes(spec, dtype));
}

ActivationRange RuleOfThumbActivationBytes(int64_t weight_bytes) {
  RequireNonNegative(weight_bytes, "weight_bytes");
  // weight * p / 100 without overflowing for any int64 weight: split into quotient and rest.
  auto percent = [weight_bytes](int64_t p) {
    return CheckedAdd(CheckedMul(weight_bytes / 100, p, "weight_bytes"), (weight_bytes % 100) * p / 100,
                      "weight_bytes");
  };
  return {percent(kActivationLowPercent), percent(kActivationHighPercent)};
}

}  // namespace vllm_mem
