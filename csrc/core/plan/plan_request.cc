/*!
 * \file core/plan/plan_request.cc
 * \brief The settings table's rows and the one bounds check of every setting.
 */
#include "vllm_mem/plan/plan_request.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "vllm_mem/base/error.h"
#include "vllm_mem/base/units.h"
#include "vllm_mem/plan/vllm_version_profile.h"

namespace vllm_mem {
namespace {

std::vector<SettingRow> BuildRows() {
  std::vector<SettingRow> rows;
#define VLLM_MEM_SETTING_ROW(type, field, init, ...) rows.push_back(SettingRow{.name = #field, __VA_ARGS__});
  VLLM_MEM_KV_CACHE_SETTINGS(VLLM_MEM_SETTING_ROW)
  for (SettingRow& row : rows) row.kv = true;
  VLLM_MEM_PLAN_SETTINGS(VLLM_MEM_SETTING_ROW)
#undef VLLM_MEM_SETTING_ROW
  return rows;
}

// Built only when a value is refused: a valid call allocates nothing.
std::string FieldName(const SettingRow& row, const std::string& field) {
  return field.empty() ? std::string(row.name) : field;
}

/*! \p value is one of the row's comma-separated choices (spaces around each ignored). */
bool IsChoice(const std::string& choices, std::string_view value) {
  size_t start = 0;
  while (start <= choices.size()) {
    size_t end = choices.find(',', start);
    if (end == std::string::npos) end = choices.size();
    std::string_view item(choices.data() + start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == value) return true;
    start = end + 1;
  }
  return false;
}

// Worded as the Python layer words its refusals (_validate.message): "field: must be ...; got V".
std::string Bounds(const SettingRow& row, const char* kind) {
  const auto show = [](double v) {
    return v == std::floor(v) && std::fabs(v) < 9.0e15 ? std::to_string(static_cast<int64_t>(v)) : FormatRounded(v, 6);
  };
  return std::string(kind) + " in " + (row.low_exclusive ? "(" : "[") + show(row.low) + ", " + show(row.high) + "]";
}

std::string Why(const SettingRow& row) { return row.why[0] != '\0' ? std::string(" (") + row.why + ")" : ""; }

void IntInRange(const SettingRow& row, int64_t value, const std::string& field) {
  if (!row.choices.empty()) {
    if (!IsChoice(row.choices, std::to_string(value))) {
      throw InvalidArgument(FieldName(row, field),
                            "must be one of " + row.choices + "; got " + std::to_string(value) + Why(row));
    }
    return;
  }
  const double v = static_cast<double>(value);
  if (v < row.low || v > row.high) {
    const std::string or_auto = row.auto_text[0] != '\0' ? std::string(" or ") + row.auto_text + " (" +
                                                                std::to_string(row.auto_int) + ")"
                                                          : std::string();
    throw InvalidArgument(FieldName(row, field), "must be " + Bounds(row, "an integer") + or_auto + "; got " +
                                                     std::to_string(value) + Why(row));
  }
}

}  // namespace

std::string SettingKindName(SettingKind kind) {
  switch (kind) {
    case SettingKind::kInt: return "int";
    case SettingKind::kFloat: return "float";
    case SettingKind::kBool: return "bool";
    case SettingKind::kOptionalBool: return "optional bool";
    case SettingKind::kText: return "str";
    case SettingKind::kEnum: return "enum";
    case SettingKind::kIntList: return "int list";
    case SettingKind::kTextList: return "text list";
    case SettingKind::kMapping:
      return "mapping";
  }
  return "";
}

const std::vector<SettingRow>& PlanSettingRows() {
  static const std::vector<SettingRow> rows = BuildRows();
  return rows;
}

const SettingRow* FindSettingRow(const std::string& name) {
  for (const SettingRow& row : PlanSettingRows()) {
    if (name == row.name) return &row;
  }
  return nullptr;
}

std::string ClosestSettingName(const std::string& name) {
  // Levenshtein distance, bounded inputs (names are short; the asked one is cut at 80).
  const std::string asked = name.substr(0, static_cast<size_t>(kMaxEchoedChars));
  std::string best;
  size_t best_distance = SIZE_MAX;
  std::vector<size_t> prev, cur;
  for (const SettingRow& row : PlanSettingRows()) {
    const std::string_view known(row.name);
    prev.resize(known.size() + 1);
    cur.resize(known.size() + 1);
    for (size_t j = 0; j <= known.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= asked.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= known.size(); ++j) {
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (asked[i - 1] == known[j - 1] ? 0 : 1)});
      }
      std::swap(prev, cur);
    }
    if (prev[known.size()] < best_distance) {
      best_distance = prev[known.size()];
      best = row.name;
    }
  }
  return best;
}

void ValidateSetting(const SettingRow& row, int64_t value, const std::string& field) {
  if (row.unset[0] != '\0' && value == row.unset_int) return;
  ValidateExplicitSetting(row, value, field);
}

void ValidateExplicitSetting(const SettingRow& row, int64_t value, const std::string& field) {
  if (row.auto_int != 0 && value == row.auto_int) return;
  IntInRange(row, value, field);
}

void ValidateSetting(const SettingRow& row, double value, const std::string& field) {
  if (row.unset[0] != '\0' && value == 0.0) return;
  ValidateExplicitSetting(row, value, field);
}

void ValidateExplicitSetting(const SettingRow& row, double value, const std::string& field) {
  const bool above_low = row.low_exclusive ? value > row.low : value >= row.low;
  if (!(above_low && value <= row.high)) {  // also false for NaN
    throw InvalidArgument(FieldName(row, field),
                          "must be " + Bounds(row, "a finite number") + "; got " + FormatRounded(value, 6) + Why(row));
  }
}

void ValidateSetting(const SettingRow& row, const std::string& value, const std::string& field) {
  if (static_cast<int64_t>(value.size()) > kMaxGpuNameChars) {
    const std::string name = FieldName(row, field);
    throw InvalidArgument(name, "must be a string of at most " + std::to_string(kMaxGpuNameChars) +
                                    " characters; got " + std::to_string(value.size()) + " characters");
  }
  if (value.find('\0') != std::string::npos) {
    throw InvalidArgument(FieldName(row, field), "must not hold NUL characters");
  }
  if (value.empty() && row.unset[0] != '\0') return;
  if (!row.choices.empty() && !IsChoice(row.choices, value)) {
    throw InvalidArgument(FieldName(row, field), "must be one of " + row.choices + "; got " + EchoValue(value));
  }
}

void ValidateSetting(const SettingRow& row, const std::vector<int64_t>& value, const std::string& field) {
  const std::string name = FieldName(row, field);
  if (static_cast<int64_t>(value.size()) > row.max_items) {
    throw InvalidArgument(name, "must be a list of at most " + std::to_string(row.max_items) + " items; got " +
                                    std::to_string(value.size()) + Why(row));
  }
  for (size_t i = 0; i < value.size(); ++i) IntInRange(row, value[i], name + "[" + std::to_string(i) + "]");
}

void ValidateSetting(const SettingRow& row, const std::vector<std::string>& value, const std::string& field) {
  const std::string name = FieldName(row, field);
  if (static_cast<int64_t>(value.size()) > row.max_items) {
    throw InvalidArgument(name, "must be a list of at most " + std::to_string(row.max_items) + " items; got " +
                                    std::to_string(value.size()) + Why(row));
  }
  // Each item as a string of the row (length, NUL, choices); what the items mean is the area's.
  for (size_t i = 0; i < value.size(); ++i) ValidateSetting(row, value[i], name + "[" + std::to_string(i) + "]");
}

void ValidateSetting(const SettingRow& row, const MmLimitPerPrompt& value, const std::string& field) {
  const std::string name = FieldName(row, field);
  if (value.images >= 0) IntInRange(row, value.images, name);
  for (const MmModalityLimit& m : value.modalities) IntInRange(row, m.count, name + "." + m.modality);
}

// The rows are in the structs' order (BuildRows), so field i is checked against rows[i].
#define VLLM_MEM_CHECK_FIELD(type, name, init, ...) ValidateSetting(rows[i++], s.name);

void ValidateKvCacheSettings(const KvCacheSettings& s) {
  const std::vector<SettingRow>& rows = PlanSettingRows();
  size_t i = 0;
  VLLM_MEM_KV_CACHE_SETTINGS(VLLM_MEM_CHECK_FIELD)
}

void ValidatePlanRequest(const PlanRequest& s) {
  ValidateKvCacheSettings(s);
  const std::vector<SettingRow>& rows = PlanSettingRows();
  size_t i = 0;
  for (const SettingRow& row : rows) i += row.kv ? 1 : 0;
  VLLM_MEM_PLAN_SETTINGS(VLLM_MEM_CHECK_FIELD)
  // vLLM's LoRAConfig._validate_lora_config (vllm/config/lora.py); unset is max_loras.
  if (s.max_cpu_loras > 0 && s.max_cpu_loras < s.max_loras) {
    throw InvalidArgument("max_cpu_loras", "max_cpu_loras (" + std::to_string(s.max_cpu_loras) +
                                               ") must be >= max_loras (" + std::to_string(s.max_loras) + ")");
  }
}

#undef VLLM_MEM_CHECK_FIELD

KvCacheOptions KvCacheOptionsFrom(const KvCacheSettings& s) {
  KvCacheOptions k;
  k.max_model_len = s.max_model_len;
  k.block_size = s.block_size;
  k.kv_cache_dtype = s.kv_cache_dtype.empty() ? "auto" : s.kv_cache_dtype;
  k.kv_cache_dtype_skip_layers = s.kv_cache_dtype_skip_layers;
  k.model_dtype = s.dtype.empty() ? "auto" : s.dtype;
  k.tensor_parallel_size = s.tensor_parallel_size;
  k.pipeline_parallel_size = s.pipeline_parallel_size;
  k.decode_context_parallel_size = s.decode_context_parallel_size;
  k.max_num_batched_tokens = s.max_num_batched_tokens;
  k.mamba_cache_mode = s.mamba_cache_mode.empty() ? "none" : s.mamba_cache_mode;
  k.mamba_cache_dtype = s.mamba_cache_dtype;
  k.mamba_ssm_cache_dtype = s.mamba_ssm_cache_dtype;
  k.num_gpu_blocks_override = s.num_gpu_blocks_override;
  k.disable_hybrid_kv_cache_manager = s.disable_hybrid_kv_cache_manager;
  k.max_concurrent_batches = s.max_concurrent_batches;
  if (s.cap_sliding_window_at_full.has_value()) k.cap_sliding_window_at_full = *s.cap_sliding_window_at_full;
  return k;
}

KvCacheOptions KvOptionsForRelease(const KvCacheSettings& settings, int64_t num_speculative_tokens) {
  ValidateKvCacheSettings(settings);
  KvCacheOptions k = KvCacheOptionsFrom(settings);
  k.num_speculative_tokens = num_speculative_tokens;
  const VllmVersionProfile& profile = *LookupVllmVersion(settings.vllm_version).profile;
  if (const std::string r = KvCacheDTypeRefusal(profile, k.kv_cache_dtype); !r.empty()) {
    throw InvalidArgument("kv_cache_dtype", r);
  }
  if (k.max_model_len == kMaxModelLenAuto) {
    if (const std::string r = MaxModelLenAutoRefusal(profile); !r.empty()) throw InvalidArgument("max_model_len", r);
  }
  if (const std::string r = KvSkipLayersRefusal(profile, k.kv_cache_dtype_skip_layers); !r.empty()) {
    throw InvalidArgument("kv_cache_dtype_skip_layers", r);
  }
  ApplyVersionKvRules(profile, "", k);
  // What the user asked wins over the release's rule; the release may only turn the manager off.
  if (settings.cap_sliding_window_at_full) k.cap_sliding_window_at_full = *settings.cap_sliding_window_at_full;
  k.disable_hybrid_kv_cache_manager = k.disable_hybrid_kv_cache_manager || settings.disable_hybrid_kv_cache_manager;
  return k;
}

}  // namespace vllm_mem
