/*!
 * \file core/stages/stage_config.cc
 * \brief Parsing of vLLM-Omni stage configs (stage_args: and stages:), see stage_config.h.
 */
#include "vllm_mem/stages/stage_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/memory/memory_budget.h"

namespace vllm_mem {
namespace {

std::string JoinIds(const std::vector<int64_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

/*! JoinIds for a message: at most 16 ids, then how many there are (a list may be long). */
std::string JoinIdsShort(const std::vector<int64_t>& ids) {
  constexpr size_t kShown = 16;
  if (ids.size() <= kShown) return JoinIds(ids);
  std::string out = JoinIds(std::vector<int64_t>(ids.begin(), ids.begin() + kShown));
  out.append(",... (").append(std::to_string(ids.size())).append(" devices)");
  return out;
}

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Describe(const JsonValue& v) {
  if (v.IsNumber()) return FormatUtilization(v.AsNumber().value);
  if (v.IsString()) return EchoValue(v.AsString());
  return v.KindName();
}

/*! \brief Reads one stage: knows the stage's name for messages and the lookup precedence. */
class StageReader {
 public:
  StageReader(const JsonValue& stage, std::string source) : stage_(stage), source_(std::move(source)) {
    engine_args_ = SubMapping("engine_args");
    runtime_ = SubMapping("runtime");
  }

  /*! \brief "stage_args[1] (stage 1) engine_args.x": where a field is, for InvalidArgument. */
  std::string Field(const std::string& key) const { return Name() + " " + key; }
  std::string Name() const {
    return has_id_ ? source_ + " (stage " + std::to_string(stage_id_) + ")" : source_;
  }
  void SetStageId(int64_t id) {
    stage_id_ = id;
    has_id_ = true;
  }

  /*! \brief engine_args[key], then stage[key]; sets *where to the path found. */
  const JsonValue* Knob(const std::string& key, std::string* where) const {
    if (engine_args_ != nullptr) {
      if (const JsonValue* v = engine_args_->Find(key); v != nullptr && !v->IsNull()) {
        *where = "engine_args." + key;
        return v;
      }
    }
    if (const JsonValue* v = stage_.Find(key); v != nullptr && !v->IsNull()) {
      *where = key;
      return v;
    }
    return nullptr;
  }

  /*! \brief runtime.devices, then devices; nullptr when neither is present. A present null is
   *  returned as is (vLLM-Omni: keep the current visibility). */
  const JsonValue* Devices(std::string* where) const {
    if (runtime_ != nullptr) {
      if (const JsonValue* v = runtime_->Find("devices"); v != nullptr) {
        *where = "runtime.devices";
        return v;
      }
    }
    if (const JsonValue* v = stage_.Find("devices"); v != nullptr) {
      *where = "devices";
      return v;
    }
    return nullptr;
  }

  const JsonValue* Runtime(const std::string& key) const {
    return runtime_ == nullptr ? nullptr : runtime_->Find(key);
  }
  const JsonValue* Own(const std::string& key) const { return stage_.Find(key); }

  int64_t PositiveInt(const JsonValue* v, const std::string& where) const {
    if (v == nullptr || v->IsNull()) return 0;
    if (!v->IsNumber() || !v->AsNumber().integer.has_value() || *v->AsNumber().integer <= 0) {
      throw InvalidArgument(Field(where), "must be a positive integer, got " + Describe(*v));
    }
    return *v->AsNumber().integer;
  }

  int64_t PositiveKnob(const std::string& key) const {
    std::string where;
    const JsonValue* v = Knob(key, &where);
    return PositiveInt(v, where);
  }

  /*! \brief A positive knob with an upper bound (vllm_mem/base/limits.h); 0 when absent. */
  int64_t BoundedKnob(const std::string& key, int64_t bound) const {
    std::string where;
    const JsonValue* v = Knob(key, &where);
    const int64_t value = PositiveInt(v, where);
    if (value > bound) {
      throw InvalidArgument(Field(where), "must be at most " + std::to_string(bound) +
                                              " (vllm_mem/base/limits.h: 100x beyond real deployments), got " +
                                              std::to_string(value));
    }
    return value;
  }

  std::string StringKnob(const std::string& key) const {
    std::string where;
    const JsonValue* v = Knob(key, &where);
    if (v == nullptr) return "";
    if (!v->IsString()) throw InvalidArgument(Field(where), "must be a string, got " + Describe(*v));
    return v->AsString();
  }

 private:
  const JsonValue* SubMapping(const char* key) const {
    const JsonValue* v = stage_.Find(key);
    if (v == nullptr || v->IsNull()) return nullptr;
    if (!v->IsObject()) throw InvalidArgument(source_ + " " + key, "must be a mapping, got " + v->KindName());
    return v;
  }

  const JsonValue& stage_;
  std::string source_;
  const JsonValue* engine_args_ = nullptr;
  const JsonValue* runtime_ = nullptr;
  int64_t stage_id_ = 0;
  bool has_id_ = false;
};

int64_t ParseIndex(std::string_view token, const std::string& field) {
  if (!IsDigits(token) || token.size() > 9) {
    throw InvalidArgument(field, "device " + EchoValue(token) + " is not a non-negative integer index");
  }
  const int64_t index = std::stoll(std::string(token));
  RequireAtMost(index, kMaxDeviceId, field.c_str(), "a device index; vllm_mem/base/limits.h");
  return index;
}

/*! Appends to a device list, bounded before it grows (a 16 MB "0,0,0,..." string). */
void PushDevice(std::vector<int64_t>& out, int64_t index, const std::string& field) {
  if (static_cast<int64_t>(out.size()) >= kMaxDevicesPerList) {
    throw InvalidArgument(field, "lists more than " + std::to_string(kMaxDevicesPerList) +
                                     " devices (vllm_mem/base/limits.h)");
  }
  out.push_back(index);
}

/*! \brief The logical indices a devices value names, as set_stage_devices reads it. */
std::vector<int64_t> LogicalDevices(const JsonValue& v, const std::string& field, std::string* text) {
  std::vector<int64_t> out;
  if (v.IsNumber()) {
    const auto& n = v.AsNumber();
    if (!n.integer.has_value() || *n.integer < 0) {
      throw InvalidArgument(field, "must be a device index, a \"0,1\" list or \"cpu\"; got " + Describe(v));
    }
    RequireAtMost(*n.integer, kMaxDeviceId, field.c_str(), "a device index; vllm_mem/base/limits.h");
    out.push_back(*n.integer);
    *text = std::to_string(*n.integer);
    return out;
  }
  if (!v.IsString()) {
    throw InvalidArgument(field, "must be a device index, a \"0,1\" list or \"cpu\"; got " + v.KindName());
  }
  *text = v.AsString();
  std::string_view rest = v.AsString();
  // vLLM-Omni splits on commas and skips empty tokens ("0,1," is "0,1").
  while (true) {
    size_t comma = rest.find(',');
    std::string_view token = Trim(rest.substr(0, comma));
    if (!token.empty()) PushDevice(out, ParseIndex(token, field), field);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (out.empty()) throw InvalidArgument(field, "names no device: " + EchoValue(v.AsString()));
  return out;
}

double Utilization(const StageReader& r, const JsonValue& v, const std::string& where) {
  if (!v.IsNumber()) {
    throw InvalidArgument(r.Field(where), "must be a number in (0, 1], got " + Describe(v));
  }
  double u = v.AsNumber().value;
  const std::string field = r.Field(where);
  ValidateUtilization(u, field.c_str());
  return u;
}

/*! The stage's logical devices through CUDA_VISIBLE_DEVICES (or the visible count) to GPU ids. */
void MapToPhysical(StageConfig& s, const StageConfigOptions& options, const std::string& dev_field) {
  const auto& visible = options.cuda_visible_devices;
  std::set<int64_t> listed_ids;
  for (int64_t logical : s.logical_devices) {
    int64_t physical = logical;
    if (!visible.empty()) {
      if (logical >= static_cast<int64_t>(visible.size())) {
        throw InvalidArgument(dev_field, "device index " + std::to_string(logical) +
                                             " is outside the visible set: CUDA_VISIBLE_DEVICES=" +
                                             JoinIdsShort(visible) + " has indices 0.." +
                                             std::to_string(visible.size() - 1));
      }
      physical = visible[static_cast<size_t>(logical)];
    } else if (options.num_visible_devices > 0 && logical >= options.num_visible_devices) {
      throw InvalidArgument(dev_field, "device index " + std::to_string(logical) + " is outside the visible set: " +
                                           std::to_string(options.num_visible_devices) + " GPU(s), indices 0.." +
                                           std::to_string(options.num_visible_devices - 1));
    }
    // A set, not a scan per device: the check stays linear in a long list.
    if (!listed_ids.insert(physical).second) {
      throw InvalidArgument(dev_field, "lists GPU " + std::to_string(physical) + " twice");
    }
    s.physical_devices.push_back(physical);
  }

}

/*! vLLM runs one worker per tensor x pipeline rank on the first devices listed. */
void CheckDeviceCount(StageConfig& s, const StageReader& r, std::vector<std::string>* notes) {
  const int64_t world = s.WorldSize();
  const int64_t listed = static_cast<int64_t>(s.physical_devices.size());
  if (listed < world) {
    std::string what = std::string("tensor_parallel_size ") + std::to_string(s.tensor_parallel_size);
    if (s.pipeline_parallel_size > 1) what += " x pipeline_parallel_size " + std::to_string(s.pipeline_parallel_size);
    throw InvalidArgument(
        r.Field("tensor_parallel_size"),
        what + " needs " + std::to_string(world) + " GPU(s) but devices " + EchoValue(s.devices_text) + " lists " +
            std::to_string(listed) +
            " (vLLM-Omni sets CUDA_VISIBLE_DEVICES to the stage's devices and vLLM runs one worker per "
            "tensor x pipeline rank on them)");
  }
  s.resident_devices.assign(s.physical_devices.begin(), s.physical_devices.begin() + world);
  if (listed > world) {
    notes->push_back(s.Label() + ": devices " + EchoValue(s.devices_text) + " lists " + std::to_string(listed) +
                     " GPUs for " + std::to_string(world) + " worker(s); vLLM uses the first " +
                     std::to_string(world) + ", so GPU(s) " +
                     JoinIdsShort(std::vector<int64_t>(s.physical_devices.begin() + world, s.physical_devices.end())) +
                     " carry nothing of this stage");
  }
}

StageConfig ReadStage(const JsonValue& entry, const std::string& source, const StageConfigOptions& options,
                      std::vector<std::string>* notes) {
  if (!entry.IsObject()) throw InvalidArgument(source, "must be a mapping (one stage), got " + entry.KindName());
  StageReader r(entry, source);
  StageConfig s;
  s.source = source;

  const JsonValue* id = r.Own("stage_id");
  if (id == nullptr || id->IsNull()) throw InvalidArgument(r.Field("stage_id"), "missing (every stage needs an integer stage_id)");
  if (!id->IsNumber() || !id->AsNumber().integer.has_value() || *id->AsNumber().integer < 0) {
    throw InvalidArgument(r.Field("stage_id"), "must be a non-negative integer, got " + Describe(*id));
  }
  s.stage_id = *id->AsNumber().integer;
  r.SetStageId(s.stage_id);

  // Parallel sizes first: the device count is checked against them.
  // Bounded, so tp * pp (WorldSize) cannot overflow: fuzzing found 2^62 x 4.
  s.tensor_parallel_size = std::max<int64_t>(1, r.BoundedKnob("tensor_parallel_size", kMaxTensorParallelSize));
  s.pipeline_parallel_size = std::max<int64_t>(1, r.BoundedKnob("pipeline_parallel_size", kMaxPipelineParallelSize));

  std::string where;
  if (const JsonValue* u = r.Knob("gpu_memory_utilization", &where)) {
    s.gpu_memory_utilization = Utilization(r, *u, where);
    s.utilization_field = where;
  } else {
    s.gpu_memory_utilization = kOmniDefaultGpuMemoryUtilization;
    s.utilization_defaulted = true;
    s.utilization_field = "gpu_memory_utilization";
    notes->push_back(s.Label() + ": gpu_memory_utilization not set; vLLM-Omni's documented default " +
                     FormatUtilization(kOmniDefaultGpuMemoryUtilization) + " is assumed");
  }
  s.utilization_ppm = UtilizationToPpm(s.gpu_memory_utilization);
  s.utilization_text = FormatUtilization(s.gpu_memory_utilization);

  if (const JsonValue* e = r.Knob("enforce_eager", &where)) {
    if (!e->IsBool()) throw InvalidArgument(r.Field(where), "must be true or false, got " + Describe(*e));
    s.enforce_eager = e->AsBool();
  }
  s.max_num_batched_tokens = r.BoundedKnob("max_num_batched_tokens", kMaxNumBatchedTokens);
  s.max_num_seqs = r.BoundedKnob("max_num_seqs", kMaxNumSeqs);
  s.max_model_len = r.BoundedKnob("max_model_len", kMaxModelLenTokens);
  s.max_batch_size = r.PositiveInt(r.Runtime("max_batch_size"), "runtime.max_batch_size");
  RequireAtMost(s.max_batch_size, kMaxNumSeqs, r.Field("runtime.max_batch_size").c_str(), "vllm_mem/base/limits.h");
  s.model = r.StringKnob("model");
  s.model_stage = r.StringKnob("model_stage");
  s.model_arch = r.StringKnob("model_arch");

  const JsonValue* devices = r.Devices(&where);
  if (devices == nullptr) {
    s.devices_defaulted = true;
    s.logical_devices = {0};
    notes->push_back(s.Label() + ": devices not set; vLLM-Omni's documented default \"0\" is assumed");
  } else if (devices->IsNull() || (devices->IsString() && devices->AsString() == "cpu")) {
    s.on_cpu = true;
    s.devices_text = devices->IsNull() ? "" : "cpu";
    notes->push_back(s.Label() + ": " + where + " is " + (devices->IsNull() ? "null" : "\"cpu\"") +
                     ": no GPU budget is checked for it");
    return s;
  } else {
    s.logical_devices = LogicalDevices(*devices, r.Field(where), &s.devices_text);
  }
  const std::string dev_field = r.Field(devices == nullptr ? "devices" : where);

  MapToPhysical(s, options, dev_field);
  CheckDeviceCount(s, r, notes);
  return s;
}

}  // namespace

std::string FormatUtilization(double utilization) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), utilization);  // shortest round trip, as repr
  std::string s(buf, res.ptr);
  if (std::isfinite(utilization) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string FormatUtilizationPpm(int64_t ppm) {
  const bool negative = ppm < 0;
  const uint64_t magnitude = negative ? 0ULL - static_cast<uint64_t>(ppm) : static_cast<uint64_t>(ppm);
  std::string frac = std::to_string(magnitude % 1'000'000);
  frac = std::string(6 - frac.size(), '0') + frac;
  while (frac.size() > 1 && frac.back() == '0') frac.pop_back();
  std::string out = negative ? "-" : "";
  out += std::to_string(magnitude / 1'000'000);
  out += '.';
  return out + frac;
}

std::vector<int64_t> ParseCudaVisibleDevices(std::string_view text) {
  std::vector<int64_t> out;
  std::string_view rest = text;
  while (!Trim(rest).empty()) {
    size_t comma = rest.find(',');
    std::string_view token = Trim(rest.substr(0, comma));
    if (!token.empty()) PushDevice(out, ParseIndex(token, "CUDA_VISIBLE_DEVICES"), "CUDA_VISIBLE_DEVICES");
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

StageConfigSet ParseStageConfig(const JsonValue& root, const StageConfigOptions& options) {
  if (!root.IsObject()) {
    throw InvalidArgument("top level", "a stage config must be a mapping with a stages: (or stage_args:) list, got " +
                                           root.KindName());
  }
  StageConfigSet set;
  set.cuda_visible_devices = options.cuda_visible_devices;
  const JsonValue* stages = root.Find("stages");
  const JsonValue* stage_args = root.Find("stage_args");
  if (stages != nullptr && stage_args != nullptr) {
    throw InvalidArgument("top level", "has both stages: and stage_args:; keep one (vLLM-Omni now reads stages:)");
  }
  std::string list_name = "stages";
  const JsonValue* list = stages;
  if (stage_args != nullptr) {
    list = stage_args;
    list_name = "stage_args";
    set.format = StageConfigFormat::kStageArgs;
    set.notes.push_back(
        "stage_args: is vLLM-Omni's old schema; current vLLM-Omni reads a top-level stages: list instead "
        "(vllm_omni/deploy/*.yaml). The budgets below are the same for both.");
  }
  if (list == nullptr) throw InvalidArgument("top level", "missing the stages: (or stage_args:) list");
  if (!list->IsArray()) throw InvalidArgument(list_name, "must be a list of stages, got " + list->KindName());
  if (list->AsArray().empty()) throw InvalidArgument(list_name, "lists no stage");
  // Bounded before any stage is read: every later check walks stages x devices.
  RequireAtMost(static_cast<int64_t>(list->AsArray().size()), kMaxStages, list_name.c_str(),
                "stages; vLLM-Omni pipelines have 2-4 (vllm_mem/base/limits.h)");
  if (root.Find("platforms") != nullptr) {
    set.notes.push_back("platforms: overrides (npu/rocm/xpu) are ignored; the CUDA layout is checked");
  }
  if (root.Find("base_config") != nullptr) {
    set.notes.push_back("base_config: is not resolved; only the stages in this file are checked");
  }

  std::map<int64_t, std::string> seen;  // stage_id -> where
  const auto& entries = list->AsArray();
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string source = list_name + "[" + std::to_string(i) + "]";
    StageConfig s = ReadStage(entries[i], source, options, &set.notes);
    s.list_index = static_cast<int64_t>(i);
    if (auto it = seen.find(s.stage_id); it != seen.end()) {
      throw InvalidArgument(source + " (stage " + std::to_string(s.stage_id) + ") stage_id",
                            "duplicate: " + it->second + " already has stage_id " + std::to_string(s.stage_id));
    }
    seen.emplace(s.stage_id, source);
    set.stages.push_back(std::move(s));
  }
  return set;
}

StageConfigSet ParseStageConfigText(std::string_view json_text, const StageConfigOptions& options) {
  return ParseStageConfig(ParseJson(json_text, "stage config"), options);
}

}  // namespace vllm_mem
