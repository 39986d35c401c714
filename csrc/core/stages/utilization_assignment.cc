/*!
 * \file core/stages/utilization_assignment.cc
 * \brief Utilization search for co-located stages, see utilization_assignment.h.
 */
#include "vllm_mem/stages/utilization_assignment.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/plan/gpu_catalog.h"
#include "vllm_mem/memory/memory_budget.h"
#include "vllm_mem/base/units.h"

namespace vllm_mem {
namespace {

constexpr int64_t kPpm = 1'000'000;

double PpmToDouble(int64_t ppm) { return static_cast<double>(ppm) / static_cast<double>(kPpm); }

struct Gpu {
  int64_t id = 0;
  std::string name;
  int64_t total = 0;
};

/*! \brief Bytes a device can still grant at \p ppm of its total (what vLLM's ceil would not
 *  exceed): floor(total * ppm / 1e6). */
int64_t BytesAt(int64_t total, int64_t ppm) {
  return static_cast<int64_t>(static_cast<__int128>(total) * std::max<int64_t>(ppm, 0) / kPpm);
}

/*! \brief Least multiple of \p step whose ceil(total * u) covers \p bytes (may exceed 1.0). */
int64_t MinUtilization(int64_t total, int64_t bytes, int64_t step) {
  __int128 exact = (static_cast<__int128>(bytes) * kPpm + total - 1) / total;
  int64_t u = static_cast<int64_t>(std::min<__int128>(exact, std::numeric_limits<int32_t>::max()));
  u = std::max<int64_t>(step, CeilDiv(u, step) * step);
  while (u <= kPpm && RequestedMemoryBytes(total, PpmToDouble(u)) < bytes) u += step;
  return u;
}

class Search {
 public:
  Search(const std::vector<StageDemand>& demands, const AssignmentOptions& options, int64_t step)
      : demands_(demands), step_(step), cap_(options.max_device_utilization_ppm) {
    for (const auto& d : options.devices) {
      const int64_t total = DeviceTotalBytes(d);  // first: it names a GPU with no figure at all
      Gpu g{d.physical_id, d.total_bytes > 0 ? d.name : LookupGpu(d.name).name, total};
      if (!gpus_.emplace(g.id, g).second) {
        throw InvalidArgument("gpus", "GPU " + std::to_string(g.id) + " is listed twice");
      }
    }
  }

  UtilizationAssignment Run() {
    UtilizationAssignment out;
    std::vector<size_t> order(demands_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    stages_.resize(demands_.size());
    for (size_t i = 0; i < demands_.size(); ++i) {
      stages_[i].stage_id = demands_[i].stage_id;
      stages_[i].devices = demands_[i].devices;
      stages_[i].kv_bytes_needed = demands_[i].kv_bytes_needed;
    }
    // Fixed stages first, in start order; then the unplaced ones, largest need first.
    for (size_t i : order) {
      if (!demands_[i].devices.empty() && !Place(i, &out)) return out;
    }
    std::vector<size_t> unplaced;
    for (size_t i : order) {
      if (demands_[i].devices.empty()) unplaced.push_back(i);
    }
    std::stable_sort(unplaced.begin(), unplaced.end(),
                     [&](size_t a, size_t b) { return Need(demands_[a]) > Need(demands_[b]); });
    for (size_t i : unplaced) {
      if (!ChooseDevices(i, &out) || !Place(i, &out)) return out;
    }
    Fill();
    out.feasible = true;
    for (size_t i = 0; i < stages_.size(); ++i) Finish(i);
    out.stages = stages_;
    out.devices = Devices();
    out.message = "every stage fits; the headroom left is shared by KV-cache need";
    return out;
  }

 private:
  static int64_t Need(const StageDemand& d) { return CheckedAdd(d.fixed_bytes, d.kv_bytes_needed, "bytes needed"); }

  const Gpu& G(int64_t id) const { return gpus_.at(id); }

  int64_t MinOn(size_t i, int64_t device) const { return MinUtilization(G(device).total, Need(demands_[i]), step_); }

  /*! \brief Records stage i's least utilization on its devices, or the shortfall. */
  bool Place(size_t i, UtilizationAssignment* out) {
    StageAssignment& s = stages_[i];
    int64_t u = step_;
    for (int64_t dev : s.devices) u = std::max(u, MinOn(i, dev));
    for (int64_t dev : s.devices) {
      const int64_t room = cap_ - sum_[dev];
      if (u > room) {
        const int64_t available = BytesAt(G(dev).total, room);
        out->unsatisfied_stage_id = s.stage_id;
        out->unsatisfied_device = dev;
        out->shortfall_bytes = std::max<int64_t>(1, Need(demands_[i]) - available);
        out->message = "stage " + std::to_string(s.stage_id) + " cannot be satisfied on GPU " + std::to_string(dev) +
                       ": it needs " + FormatGib(Need(demands_[i])) + " GiB per worker (" +
                       FormatGib(demands_[i].fixed_bytes) + " GiB weights and overheads + " +
                       FormatGib(demands_[i].kv_bytes_needed) + " GiB KV cache), but only " + FormatGib(available) +
                       " GiB is left under the " + FormatUtilizationPpm(cap_) + " cap (" +
                       FormatUtilizationPpm(sum_[dev]) + " taken by earlier stages): " +
                       FormatThousands(out->shortfall_bytes) + " bytes (" + FormatGib(out->shortfall_bytes) +
                       " GiB) short";
        stages_ = {};
        return false;
      }
    }
    s.min_utilization_ppm = u;
    s.utilization_ppm = u;
    for (int64_t dev : s.devices) sum_[dev] += u;
    return true;
  }

  /*! \brief Picks world_size devices with the most room for unplaced stage i. */
  bool ChooseDevices(size_t i, UtilizationAssignment* out) {
    std::vector<int64_t> ids;
    for (const auto& [id, g] : gpus_) ids.push_back(id);
    std::stable_sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) {
      return cap_ - sum_[a] - MinOn(i, a) > cap_ - sum_[b] - MinOn(i, b);
    });
    const auto world = static_cast<size_t>(demands_[i].world_size);
    if (ids.size() < world) {
      throw InvalidArgument("stage " + std::to_string(demands_[i].stage_id) + " world_size",
                            std::to_string(world) + " workers but only " + std::to_string(ids.size()) + " GPU(s)");
    }
    ids.resize(world);
    std::sort(ids.begin(), ids.end());
    stages_[i].devices = ids;
    return true;  // Place() reports the shortfall on the best devices when even they lack room
  }

  int64_t KvBytes(size_t i, int64_t u) const {
    int64_t kv = std::numeric_limits<int64_t>::max();
    for (int64_t dev : stages_[i].devices) {
      kv = std::min(kv, RequestedMemoryBytes(G(dev).total, PpmToDouble(u)) - demands_[i].fixed_bytes);
    }
    return kv;
  }

  double Ratio(size_t i) const {
    const double kv = static_cast<double>(KvBytes(i, stages_[i].utilization_ppm));
    const int64_t need = demands_[i].kv_bytes_needed;
    return need > 0 ? kv / static_cast<double>(need) : kv;  // no stated need: plain bytes
  }

  /*! \brief Hands out the room left one step at a time to the stage with the least KV
   *  headroom relative to its need (ties: start order). */
  void Fill() {
    std::vector<bool> frozen(stages_.size(), false);
    while (true) {
      size_t best = stages_.size();
      for (size_t i = 0; i < stages_.size(); ++i) {
        if (frozen[i]) continue;
        if (best == stages_.size() || Ratio(i) < Ratio(best)) best = i;
      }
      if (best == stages_.size()) return;
      StageAssignment& s = stages_[best];
      bool fits = s.utilization_ppm + step_ <= kPpm;
      for (int64_t dev : s.devices) fits = fits && sum_[dev] + step_ <= cap_;
      if (!fits) {
        frozen[best] = true;
        continue;
      }
      s.utilization_ppm += step_;
      for (int64_t dev : s.devices) sum_[dev] += step_;
    }
  }

  void Finish(size_t i) {
    StageAssignment& s = stages_[i];
    s.utilization_text = FormatUtilizationPpm(s.utilization_ppm);
    s.requested_bytes = std::numeric_limits<int64_t>::max();
    for (int64_t dev : s.devices) {
      s.requested_bytes = std::min(s.requested_bytes, RequestedMemoryBytes(G(dev).total, PpmToDouble(s.utilization_ppm)));
    }
    s.kv_bytes = KvBytes(i, s.utilization_ppm);
    s.kv_headroom = s.kv_bytes_needed > 0 ? static_cast<double>(s.kv_bytes) / static_cast<double>(s.kv_bytes_needed) : 0.0;
  }

  std::vector<AssignedDevice> Devices() const {
    std::vector<AssignedDevice> out;
    for (const auto& [id, g] : gpus_) {
      AssignedDevice d;
      d.physical_id = id;
      d.name = g.name;
      d.total_bytes = g.total;
      auto it = sum_.find(id);
      d.utilization_ppm = it == sum_.end() ? 0 : it->second;
      d.utilization_text = FormatUtilizationPpm(d.utilization_ppm);
      for (const auto& s : stages_) {
        if (std::find(s.devices.begin(), s.devices.end(), id) != s.devices.end()) d.stage_ids.push_back(s.stage_id);
      }
      out.push_back(d);
    }
    return out;
  }

  const std::vector<StageDemand>& demands_;
  int64_t step_;
  int64_t cap_;
  std::map<int64_t, Gpu> gpus_;
  std::map<int64_t, int64_t> sum_;
  std::vector<StageAssignment> stages_;
};

void Validate(const std::vector<StageDemand>& demands, const AssignmentOptions& options) {
  if (!(options.max_device_utilization_ppm > 0 && options.max_device_utilization_ppm <= kPpm)) {
    throw InvalidArgument("max_device_utilization", "must be in (0, 1], got " +
                                                        FormatUtilizationPpm(options.max_device_utilization_ppm));
  }
  if (!(options.step_ppm > 0 && options.step_ppm <= options.max_device_utilization_ppm)) {
    throw InvalidArgument("utilization_step", "must be in (0, max_device_utilization], got " +
                                                  FormatUtilizationPpm(options.step_ppm));
  }
  if (demands.empty()) throw InvalidArgument("stages", "needs at least one stage");
  if (options.devices.empty()) throw InvalidArgument("gpus", "needs at least one GPU");
  std::set<int64_t> ids, gpus;
  for (const auto& g : options.devices) gpus.insert(g.physical_id);
  for (const auto& d : demands) {
    const std::string name = "stage " + std::to_string(d.stage_id);
    if (!ids.insert(d.stage_id).second) throw InvalidArgument(name + " stage_id", "duplicate stage id");
    if (d.world_size < 1) throw InvalidArgument(name + " world_size", "must be >= 1");
    RequireNonNegative(d.fixed_bytes, (name + " fixed_bytes").c_str());
    RequireNonNegative(d.kv_bytes_needed, (name + " kv_bytes_needed").c_str());
    if (!d.devices.empty()) {
      if (static_cast<int64_t>(d.devices.size()) != d.world_size) {
        throw InvalidArgument(name + " devices", "lists " + std::to_string(d.devices.size()) + " GPU(s) for " +
                                                     std::to_string(d.world_size) + " worker(s)");
      }
      std::set<int64_t> own;
      for (int64_t dev : d.devices) {
        if (!gpus.count(dev)) throw InvalidArgument(name + " devices", "GPU " + std::to_string(dev) + " is not among the GPUs given");
        if (!own.insert(dev).second) throw InvalidArgument(name + " devices", "lists GPU " + std::to_string(dev) + " twice");
      }
    }
  }
}

}  // namespace

UtilizationAssignment AssignUtilizations(const std::vector<StageDemand>& demands, const AssignmentOptions& options) {
  Validate(demands, options);
  UtilizationAssignment out = Search(demands, options, options.step_ppm).Run();
  if (!out.feasible && options.step_ppm > 1) {
    // Rounding each stage up to the step may be what overflows: try exact (1 ppm) values.
    UtilizationAssignment exact = Search(demands, options, 1).Run();
    if (exact.feasible) {
      exact.message += " (only with utilizations finer than " + FormatUtilizationPpm(options.step_ppm) + ")";
      return exact;
    }
  }
  return out;
}

}  // namespace vllm_mem
