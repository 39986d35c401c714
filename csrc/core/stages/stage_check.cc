/*!
 * \file core/stages/stage_check.cc
 * \brief Per-device budgets of co-located stages, start-up prediction and concrete fixes.
 */
#include "vllm_mem/stages/stage_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/base/limits.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

constexpr int64_t kPpm = 1'000'000;
//! Suggested utilizations are multiples of 0.01, the precision users write them with.
constexpr int64_t kSuggestionStepPpm = 10'000;
//! vLLM-Omni stage_admission.py constants.
constexpr int64_t kAdmissionExternalReserveBytes = kGiB;
constexpr int64_t kAdmissionSafetyMarginBytes = kGiB;
constexpr int64_t kAdmissionGraphReserveBytes = 2 * kGiB;

std::string Gib(int64_t bytes) { return FormatGib(bytes) + " GiB"; }

std::string GpuName(const DeviceCheck& d) { return "GPU " + std::to_string(d.physical_id); }

/*! \brief The largest multiple of the suggestion step whose request fits in \p free_bytes. */
int64_t LargestUtilizationFitting(int64_t total_bytes, int64_t free_bytes) {
  return LargestUtilizationFittingPpm(total_bytes, free_bytes, kSuggestionStepPpm);
}

/*! \brief vLLM-Omni's devices text naming \p physical ids, or "" when one is not visible. */
std::string DevicesText(const std::vector<int64_t>& physical, const std::vector<int64_t>& visible) {
  std::string out;
  for (size_t i = 0; i < physical.size(); ++i) {
    int64_t logical = physical[i];
    if (!visible.empty()) {
      auto it = std::find(visible.begin(), visible.end(), physical[i]);
      if (it == visible.end()) return "";
      logical = it - visible.begin();
    }
    if (i > 0) out += ',';
    out += std::to_string(logical);
  }
  return out;
}

std::string Expression(const DeviceCheck& d) {
  std::string out;
  for (size_t i = 0; i < d.stages.size(); ++i) {
    if (i > 0) out += " + ";
    out += d.stages[i].utilization_text + " (stage " + std::to_string(d.stages[i].stage_id) + ")";
  }
  return out + " = " + d.utilization_text;
}

class Checker {
 public:
  Checker(const StageConfigSet& config, const StageCheckOptions& options) : config_(config), options_(options) {}

  StageCheckResult Run() {
    result_.config = config_;
    result_.notes = config_.notes;
    BuildDevices();
    for (auto& [id, d] : devices_) Sum(d);
    PredictStartup();
    Limits();
    SuggestForOverCommit();
    SuggestForStartup();
    SuggestUnused();
    OomAdvice();
    for (auto& [id, d] : devices_) result_.devices.push_back(d);
    result_.ok = result_.problems.empty();
    return std::move(result_);
  }

 private:
  const DeviceMemoryInfo& Info(int64_t physical) const {
    for (const auto& d : options_.devices) {
      if (d.physical_id == physical) return d;
    }
    if (options_.default_device.total_bytes <= 0 && options_.default_device.name.empty()) {
      throw InvalidArgument("gpus", "no memory figure for GPU " + std::to_string(physical) +
                                        ", which a stage uses; give every device or one GPU kind for all");
    }
    return options_.default_device;
  }

  DeviceCheck& Device(int64_t physical) {
    auto it = devices_.find(physical);
    if (it != devices_.end()) return it->second;
    const DeviceMemoryInfo& info = Info(physical);
    DeviceCheck d;
    d.physical_id = physical;
    d.name = info.name;
    d.total_bytes = DeviceTotalBytes(info);
    if (info.total_bytes <= 0) d.name = LookupGpu(info.name).name;  // the canonical spelling
    if (info.free_bytes >= 0) {
      d.free_bytes = std::min(info.free_bytes, d.total_bytes);
      d.free_is_live = options_.free_is_live;
      d.free_source = options_.free_is_live ? "live" : "given";
    } else {
      // A reserve above the device's total leaves less than nothing: a typo (GiB for MiB), not a
      // plan, so it is refused rather than silently read as "no free memory".
      if (options_.reserve_bytes > d.total_bytes) {
        throw InvalidArgument("reserve_bytes", "must not exceed the total memory of GPU " + std::to_string(physical) +
                                                   " (" + Gib(d.total_bytes) + "), got " +
                                                   Gib(options_.reserve_bytes));
      }
      d.free_bytes = CheckedSub(d.total_bytes, options_.reserve_bytes, "reserve_bytes");
      d.free_source = options_.reserve_bytes > 0 ? "assumed: total - " + Gib(options_.reserve_bytes) + " reserve"
                                                 : "assumed: nothing else on it";
    }
    return devices_.emplace(physical, d).first->second;
  }

  void BuildDevices() {
    RequireNonNegative(options_.reserve_bytes, "reserve_bytes");
    for (const auto& info : options_.devices) Device(info.physical_id);
    for (const auto& s : config_.stages) {
      for (size_t i = 0; i < s.resident_devices.size(); ++i) {
        DeviceCheck& d = Device(s.resident_devices[i]);
        ResidentStage r;
        r.stage_id = s.stage_id;
        r.local_index = static_cast<int64_t>(i);
        r.utilization = s.gpu_memory_utilization;
        r.utilization_ppm = s.utilization_ppm;
        r.utilization_text = s.utilization_text;
        r.requested_bytes = RequestedMemoryBytes(d.total_bytes, s.gpu_memory_utilization);
        r.enforce_eager = s.enforce_eager;
        d.stages.push_back(r);
      }
    }
  }

  void Sum(DeviceCheck& d) {
    int64_t admission = CheckedAdd(kAdmissionExternalReserveBytes, kAdmissionSafetyMarginBytes, "admission");
    for (const auto& r : d.stages) {
      d.utilization_ppm = CheckedAdd(d.utilization_ppm, r.utilization_ppm, "gpu_memory_utilization");
      d.requested_bytes = CheckedAdd(d.requested_bytes, r.requested_bytes, "requested_bytes");
      // Admission truncates (Python int(capacity * util)) where vLLM rounds up; CUDA graphs add a
      // fixed reserve per stage.
      const int64_t truncated = CheckedDoubleToInt64(
          std::floor(static_cast<double>(d.total_bytes) * r.utilization), "gpu_memory_utilization");
      admission = CheckedAdd(admission, truncated, "admission");
      if (!r.enforce_eager) admission = CheckedAdd(admission, kAdmissionGraphReserveBytes, "admission");
    }
    d.utilization_text = FormatUtilizationPpm(d.utilization_ppm);
    d.utilization_expression = d.stages.empty() ? "0.0" : Expression(d);
    d.headroom_bytes = CheckedSub(d.total_bytes, d.requested_bytes, "headroom_bytes");
    d.headroom_ppm = kPpm - d.utilization_ppm;
    d.admission_required_bytes = admission;
    d.admission_ok = d.stages.empty() || admission <= d.total_bytes;
    if (d.utilization_ppm > kPpm) {
      d.over_committed = true;
      d.reason = GpuName(d) + " is over-committed: the gpu_memory_utilization of its resident stages sums to " +
                 d.utilization_expression + " > 1.0; they request " + Gib(d.requested_bytes) + " of its " +
                 Gib(d.total_bytes) + " (" + Gib(-d.headroom_bytes) + " too much)";
      result_.problems.push_back(d.reason);
    } else if (!d.admission_ok) {
      result_.notes.push_back(
          GpuName(d) + ": vLLM-Omni's parallel_stage_init admission would refuse it: need " +
          Gib(d.admission_required_bytes) + " > " + Gib(d.total_bytes) +
          " (budgets + 2 GiB per stage with CUDA graphs + 1 GiB external reserve + 1 GiB margin); "
          "the default serial start-up is not affected");
    }
  }

  void PredictStartup() {
    std::map<int64_t, int64_t> free;
    for (const auto& [id, d] : devices_) free[id] = d.free_bytes;
    for (const auto& s : config_.stages) {
      bool stage_fails = false;
      std::vector<StartupPrediction> rows;
      for (size_t i = 0; i < s.resident_devices.size(); ++i) {
        const DeviceCheck& d = devices_.at(s.resident_devices[i]);
        StartupPrediction p;
        p.stage_id = s.stage_id;
        p.physical_id = d.physical_id;
        p.device = "cuda:" + std::to_string(i);
        p.free_bytes = free[d.physical_id];
        p.requested_bytes = RequestedMemoryBytes(d.total_bytes, s.gpu_memory_utilization);
        if (p.free_bytes < p.requested_bytes) {
          p.fails = true;
          stage_fails = true;
          // vLLM's request_memory ValueError, verbatim.
          p.message = "Free memory on device " + p.device + " (" + FormatGib(p.free_bytes) + "/" +
                      FormatGib(d.total_bytes) + " GiB) on startup is less than desired GPU memory utilization (" +
                      s.utilization_text + ", " + FormatGib(p.requested_bytes) +
                      " GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.";
          result_.problems.push_back(s.Label() + " fails to start on " + GpuName(d) + ": " + p.message);
        }
        rows.push_back(p);
      }
      // A stage that fails to start holds nothing; one that starts holds its budget.
      if (!stage_fails) {
        for (const auto& p : rows) free[p.physical_id] -= p.requested_bytes;
      }
      for (auto& p : rows) result_.startup.push_back(std::move(p));
    }
    free_after_ = free;
  }

  int64_t OthersPpm(const DeviceCheck& d, int64_t stage_id) const {
    int64_t sum = 0;
    for (const auto& r : d.stages) {
      if (r.stage_id != stage_id) sum += r.utilization_ppm;
    }
    return sum;
  }

  void Limits() {
    for (const auto& s : config_.stages) {
      if (s.resident_devices.empty()) continue;
      StageLimit l;
      l.stage_id = s.stage_id;
      l.max_utilization_ppm = kPpm;
      l.limiting_device = s.resident_devices.front();
      for (int64_t id : s.resident_devices) {
        int64_t room = kPpm - OthersPpm(devices_.at(id), s.stage_id);
        if (room < l.max_utilization_ppm) {
          l.max_utilization_ppm = room;
          l.limiting_device = id;
        }
      }
      result_.limits.push_back(l);
    }
  }

  /*! \brief The largest utilization (a multiple of the step) stage \p s may have so that every
   *  device it uses stays <= 1.0 and, where other processes hold memory, within what is free. */
  int64_t LoweringTarget(const StageConfig& s) const {
    int64_t target = kPpm;
    for (int64_t id : s.resident_devices) {
      const DeviceCheck& e = devices_.at(id);
      target = std::min(target, kPpm - OthersPpm(e, s.stage_id));
      if (e.free_bytes < e.total_bytes) {
        int64_t allowed = e.free_bytes;
        for (const auto& r : e.stages) {
          if (r.stage_id != s.stage_id) allowed -= r.requested_bytes;
        }
        target = std::min(target, LargestUtilizationFitting(e.total_bytes, allowed));
      }
    }
    return target - target % kSuggestionStepPpm;
  }

  /*! \brief "GPU 1's 79.19 GiB", or "the 74.19 GiB free on GPU 1" when others hold memory. */
  static std::string Fits(const DeviceCheck& d) {
    if (d.free_bytes >= d.total_bytes) return GpuName(d) + "'s " + Gib(d.total_bytes);
    return "the " + Gib(d.free_bytes) + " free on " + GpuName(d);
  }

  const StageConfig& Stage(int64_t stage_id) const {
    for (const auto& s : config_.stages) {
      if (s.stage_id == stage_id) return s;
    }
    throw InvalidArgument("stage_id", "unknown stage " + std::to_string(stage_id));
  }

  /*! \brief "move stage S ..." to a device with room, or "" when none has. */
  std::string MoveSuggestion(const StageConfig& s, const DeviceCheck& from) {
    for (const auto& [id, to] : devices_) {
      if (std::find(s.resident_devices.begin(), s.resident_devices.end(), id) != s.resident_devices.end()) continue;
      const bool fits = to.utilization_ppm + s.utilization_ppm <= kPpm &&
                        RequestedMemoryBytes(to.total_bytes, s.gpu_memory_utilization) <= free_after_.at(id);
      if (!fits) continue;
      std::vector<int64_t> moved = s.physical_devices;
      std::replace(moved.begin(), moved.end(), from.physical_id, id);
      std::string text = DevicesText(moved, config_.cuda_visible_devices);
      if (text.empty()) continue;
      std::string what = s.resident_devices.size() == 1 ? s.Label() : s.Label() + "'s worker on " + GpuName(from);
      return "move " + what + " to " + GpuName(to) + " (devices: \"" + text + "\"); " + GpuName(to) +
             " would carry " + FormatUtilizationPpm(to.utilization_ppm + s.utilization_ppm);
    }
    return "";
  }

  void SuggestForOverCommit() {
    for (auto& [id, d] : devices_) {
      if (!d.over_committed) continue;
      // Lowering one stage: the latest-started first, as that is the one whose start fails.
      for (auto it = d.stages.rbegin(); it != d.stages.rend(); ++it) {
        const StageConfig& s = Stage(it->stage_id);
        const int64_t target = LoweringTarget(s);
        if (target <= 0 || target >= s.utilization_ppm) continue;
        result_.suggestions.push_back("lower " + s.Label() + "'s " + s.utilization_field + " from " +
                                      s.utilization_text + " to " + FormatUtilizationPpm(target) + " to fit " +
                                      Fits(d) + " (" + GpuName(d) + " would carry " +
                                      FormatUtilizationPpm(d.utilization_ppm - s.utilization_ppm + target) + ")");
      }
      for (auto it = d.stages.rbegin(); it != d.stages.rend(); ++it) {
        std::string move = MoveSuggestion(Stage(it->stage_id), d);
        if (!move.empty()) result_.suggestions.push_back(move);
      }
    }
  }

  void SuggestForStartup() {
    for (const auto& p : result_.startup) {
      if (!p.fails) continue;
      const DeviceCheck& d = devices_.at(p.physical_id);
      if (d.over_committed) continue;  // the over-commit suggestions cover it
      const StageConfig& s = Stage(p.stage_id);
      const int64_t short_bytes = p.requested_bytes - p.free_bytes;
      const int64_t others = d.total_bytes - d.free_bytes;  // held before any stage started
      if (others > 0) {
        result_.suggestions.push_back("free up " + Gib(short_bytes) + " on " + GpuName(d) + ": other processes hold " +
                                      Gib(others) + " there (close them, or check nvidia-smi)");
      }
      int64_t target = std::min(LoweringTarget(s), LargestUtilizationFitting(d.total_bytes, p.free_bytes));
      if (target > 0 && target < s.utilization_ppm) {
        result_.suggestions.push_back("lower " + s.Label() + "'s " + s.utilization_field + " from " +
                                      s.utilization_text + " to " + FormatUtilizationPpm(target) + " to fit the " +
                                      Gib(p.free_bytes) + " free on " + GpuName(d) + " when it starts");
      }
      std::string move = MoveSuggestion(s, d);
      if (!move.empty()) result_.suggestions.push_back(move);
      result_.suggestions.push_back("use a GPU with at least " + Gib(p.requested_bytes) + " free when " + s.Label() +
                                    " starts (" + GpuName(d) + " has " + Gib(p.free_bytes) + ")");
    }
  }

  void SuggestUnused() {
    if (!result_.problems.empty()) return;
    for (const auto& [id, d] : devices_) {
      // Less than 0.1 left is the buffer the docs recommend keeping; report only more.
      if (d.stages.empty() || d.headroom_ppm <= 100'000) continue;
      std::string who;
      for (const auto& l : result_.limits) {
        const StageConfig& s = Stage(l.stage_id);
        if (std::find(s.resident_devices.begin(), s.resident_devices.end(), id) == s.resident_devices.end()) continue;
        if (l.max_utilization_ppm <= s.utilization_ppm) continue;
        who += std::string(who.empty() ? "" : "; ") + s.Label() + " could rise from " + s.utilization_text +
               " to at most " + FormatUtilizationPpm(l.max_utilization_ppm) +
               (l.limiting_device != id ? " (bounded by GPU " + std::to_string(l.limiting_device) + ")" : "");
      }
      if (who.empty()) continue;
      result_.notes.push_back(GpuName(d) + " carries only " + d.utilization_text + " (" + Gib(d.headroom_bytes) +
                              " unassigned): for a larger KV cache, " + who);
    }
  }

  void OomAdvice() {
    for (const auto& s : config_.stages) {
      if (s.on_cpu) continue;
      std::string line = s.Label() + ": ";
      line += s.max_num_batched_tokens > 0
                  ? "reduce max_num_batched_tokens (now " + std::to_string(s.max_num_batched_tokens) + ", try " +
                        std::to_string(std::max<int64_t>(1, s.max_num_batched_tokens / 2)) + ")"
                  : "set max_num_batched_tokens below vLLM's default";
      // A batch of one cannot shrink: advise only a change that changes something.
      if (s.max_batch_size > 1) {
        line += "; reduce runtime.max_batch_size (now " + std::to_string(s.max_batch_size) + ", try " +
                std::to_string(s.max_batch_size / 2) + ")";
      } else if (s.max_batch_size <= 0) {
        line += "; set runtime.max_batch_size";
      }
      int64_t lower = s.utilization_ppm - 5 * kSuggestionStepPpm;
      if (lower > 0) {
        line += "; lower gpu_memory_utilization slightly (" + s.utilization_text + " -> " +
                FormatUtilizationPpm(lower) + ") to leave room outside vLLM's budget";
      }
      line += "; enable quantization if the model supports it";
      result_.oom_advice.push_back(line);
    }
  }

  const StageConfigSet& config_;
  const StageCheckOptions& options_;
  std::map<int64_t, DeviceCheck> devices_;
  std::map<int64_t, int64_t> free_after_;
  StageCheckResult result_;
};

}  // namespace

int64_t DeviceTotalBytes(const DeviceMemoryInfo& info) {
  if (info.total_bytes > 0) {
    RequireAtMost(info.total_bytes, kMaxDeviceBytes, "total_bytes", "1 PiB, vllm_mem/base/limits.h");
    return info.total_bytes;
  }
  if (info.total_bytes < 0 || info.name.empty()) {
    throw InvalidArgument("gpu", "GPU " + std::to_string(info.physical_id) +
                                     " needs a catalog name or a positive total in bytes");
  }
  // A catalog GPU: the total the runtime reports, not the marketing size.
  return LookupGpu(info.name).total_memory_bytes;
}

StageCheckResult CheckStages(const StageConfigSet& config, const StageCheckOptions& options) {
  return Checker(config, options).Run();
}

}  // namespace vllm_mem
