/*!
 * \file bindings/bind_device.cc
 * \brief Bindings of the memory area: snapshots, profiling arithmetic, the sampler, the device
 *        reader in use (real or simulated) and the simulated device itself. Conversions only;
 *        every call that may reach the driver or wait on a thread releases the GIL.
 */
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <tuple>

#include "bindings/bind.h"
#include "vllm_mem/base/error.h"
#include "vllm_mem/memory/device_reader.h"
#include "vllm_mem/memory/memory_profiling.h"
#include "vllm_mem/memory/memory_sampler.h"
#include "vllm_mem/memory/memory_snapshot.h"
#include "device/cuda_driver.h"
#include "device/nvml.h"
#include "device/registry.h"
#include "device/simulated_device.h"
#include "device/torch_allocator.h"

namespace py = pybind11;

namespace vllm_mem::bindings {
namespace {

using Release = py::call_guard<py::gil_scoped_release>;

template <typename T>
py::array_t<T> ToArray(const std::vector<T>& v) {
  py::array_t<T> out(static_cast<py::ssize_t>(v.size()));
  if (!v.empty()) std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

bool IsRealDevice(const DeviceReader& r) { return r.Name() == "cuda"; }

/*! The context-free facts of a visible real device, for the tool queries: DeviceError without a
 *  usable driver, InvalidArgument naming "device" for an index that is not visible. Never calls
 *  cuInit in this process (cuda::QueryDriverFacts). */
cuda::DeviceFacts FactsOf(int device) {
  cuda::DriverFacts f = cuda::QueryDriverFacts();
  if (!f.ok) throw DeviceError(f.why);
  if (device < 0 || device >= f.device_count) {
    throw InvalidArgument("device", "unknown CUDA device index " + std::to_string(device) + " (" +
                                        std::to_string(f.device_count) + " visible)");
  }
  return f.devices[static_cast<size_t>(device)];
}

/*! The index check of the torch-statistics calls: a negative index always, an index past the
 *  visible devices when the driver is known, without initialising CUDA for the real device
 *  (the torch figures of an uninitialised process are "not initialized", not an error). */
void CheckTorchDevice(DeviceReader& r, int device) {
  if (!IsRealDevice(r)) {
    r.CheckDevice(device);
    return;
  }
  if (device < 0) {
    throw InvalidArgument("device", "unknown CUDA device index " + std::to_string(device) +
                                        " (indices are >= 0)");
  }
  const cuda::DriverFacts f = cuda::QueryDriverFacts();
  if (f.ok && device >= f.device_count) FactsOf(device);  // throws naming the visible count
}

void BindRecords(py::module_& m) {
  py::class_<MemorySnapshotRecord>(m, "SnapshotRecord", "One device reading (bytes, seconds).")
      .def(py::init<>())
      .def_readwrite("device", &MemorySnapshotRecord::device)
      .def_readwrite("torch_peak", &MemorySnapshotRecord::torch_peak)
      .def_readwrite("free_memory", &MemorySnapshotRecord::free_memory)
      .def_readwrite("total_memory", &MemorySnapshotRecord::total_memory)
      .def_readwrite("cuda_memory", &MemorySnapshotRecord::cuda_memory)
      .def_readwrite("torch_memory", &MemorySnapshotRecord::torch_memory)
      .def_readwrite("non_torch_memory", &MemorySnapshotRecord::non_torch_memory)
      .def_readwrite("timestamp", &MemorySnapshotRecord::timestamp)
      .def_readwrite("torch_allocated", &MemorySnapshotRecord::torch_allocated)
      .def_readwrite("integrated", &MemorySnapshotRecord::integrated)
      .def_readwrite("cuda_free_memory", &MemorySnapshotRecord::cuda_free_memory)
      .def_property(
          "torch_status",
          [](const MemorySnapshotRecord& r) { return AllocatorStatusName(r.torch_status); },
          [](MemorySnapshotRecord& r, const std::string& name) {
            r.torch_status = ParseAllocatorStatus(name);
          });

  py::class_<AllocatorStats>(m, "AllocatorStats", "Torch caching-allocator aggregate figures.")
      .def_property_readonly("status", [](const AllocatorStats& s) { return AllocatorStatusName(s.status); })
      .def_readonly("detail", &AllocatorStats::detail)
      .def_readonly("allocated_bytes", &AllocatorStats::allocated_bytes)
      .def_readonly("allocated_peak_bytes", &AllocatorStats::allocated_peak_bytes)
      .def_readonly("reserved_bytes", &AllocatorStats::reserved_bytes)
      .def_readonly("reserved_peak_bytes", &AllocatorStats::reserved_peak_bytes)
      .def_property_readonly("available", &AllocatorStats::available);

  py::class_<SamplerPeaks>(m, "SamplerPeaks", "Maxima over all samples taken.")
      .def(py::init<>())
      .def_readonly("num_samples", &SamplerPeaks::num_samples)
      .def_readonly("peak_cuda_memory", &SamplerPeaks::peak_cuda_memory)
      .def_readonly("peak_non_torch_memory", &SamplerPeaks::peak_non_torch_memory)
      .def_readonly("peak_torch_allocated", &SamplerPeaks::peak_torch_allocated)
      .def_readonly("peak_torch_reserved", &SamplerPeaks::peak_torch_reserved);

  py::class_<MemoryProfilingFigures>(m, "ProfilingFigures", "memory_profiling()'s numbers.")
      .def(py::init<>())
      .def_readwrite("non_kv_cache_memory", &MemoryProfilingFigures::non_kv_cache_memory)
      .def_readwrite("torch_peak_increase", &MemoryProfilingFigures::torch_peak_increase)
      .def_readwrite("non_torch_increase", &MemoryProfilingFigures::non_torch_increase)
      .def_readwrite("weights_memory", &MemoryProfilingFigures::weights_memory)
      .def_readwrite("profile_time", &MemoryProfilingFigures::profile_time)
      .def_readwrite("total_consumed", &MemoryProfilingFigures::total_consumed)
      .def_readwrite("transient_peak_headroom", &MemoryProfilingFigures::transient_peak_headroom)
      .def_readwrite("non_torch_peak_increase", &MemoryProfilingFigures::non_torch_peak_increase)
      .def_readwrite("peak_cuda_memory", &MemoryProfilingFigures::peak_cuda_memory)
      .def_readwrite("non_kv_cache_memory_components", &MemoryProfilingFigures::non_kv_cache_memory_components)
      .def_readwrite("non_kv_cache_memory_total_consumed",
                     &MemoryProfilingFigures::non_kv_cache_memory_total_consumed)
      .def_property(
          "formula", [](const MemoryProfilingFigures& f) { return NonKvFormulaName(f.formula); },
          [](MemoryProfilingFigures& f, const std::string& name) { f.formula = ParseNonKvFormula(name); });
}

void BindReaderFunctions(py::module_& m) {
  m.def("measure_snapshot",
        [](int device) { return MeasureSnapshot(*ActiveDeviceReader(), device); },
        py::arg("device"), Release(), "MemorySnapshot.measure() on the active device");
  // The hot path of MemorySnapshot.measure(): one tuple converts faster than eleven attribute
  // reads on a bound record. Order: _SNAPSHOT_FIELDS in mem_utils.py.
  m.def("measure_snapshot_fields",
        [](int device) {
          const MemorySnapshotRecord r = MeasureSnapshot(*ActiveDeviceReader(), device);
          return std::make_tuple(r.torch_peak, r.free_memory, r.total_memory, r.cuda_memory,
                                 r.torch_memory, r.non_torch_memory, r.timestamp,
                                 r.torch_allocated, r.integrated, r.cuda_free_memory,
                                 std::string(AllocatorStatusName(r.torch_status)));
        },
        py::arg("device"), Release());
  m.def("mem_get_info",
        [](int device) {
          auto r = ActiveDeviceReader();
          r->CheckDevice(device);
          const DeviceMemInfo info = r->MemInfo(device);
          return std::make_tuple(info.free_bytes, info.total_bytes);
        },
        py::arg("device"), Release(), "(free, total) as torch.cuda.mem_get_info");
  m.def("subtract_snapshots", &SubtractSnapshots, py::arg("a"), py::arg("b"), "a - b, field-wise");
  m.def("parse_cuda_device", &ParseCudaDevice, py::arg("text"),
        "'cuda' -> None, 'cuda:N' -> N; ValueError for anything else");
  m.def("different_devices_message", &DifferentDevicesMessage, py::arg("a"), py::arg("b"));
  m.def("current_device", [] { return ActiveDeviceReader()->CurrentDevice(); }, Release());
  m.def("device_count",
        [] {
          auto r = ActiveDeviceReader();
          if (!IsRealDevice(*r)) return r->DeviceCount();
          const cuda::DriverFacts f = cuda::QueryDriverFacts();
          return f.ok ? f.device_count : 0;
        },
        Release(), "Visible devices of the active reader (0 without a driver); no cuInit here");
  m.def("check_device", [](int device) { ActiveDeviceReader()->CheckDevice(device); },
        py::arg("device"), Release());
  m.def("active_device_name", [] { return ActiveDeviceReader()->Name(); });
  m.def("is_integrated",
        [](int device) {
          auto r = ActiveDeviceReader();
          if (IsRealDevice(*r)) return FactsOf(device).integrated;
          r->CheckDevice(device);
          return r->IsIntegrated(device);
        },
        py::arg("device"), Release());
  m.def("max_shared_memory_per_block",
        [](int device) {
          auto r = ActiveDeviceReader();
          if (IsRealDevice(*r)) return static_cast<int64_t>(FactsOf(device).max_shared_memory_per_block);
          r->CheckDevice(device);
          return r->MaxSharedMemoryPerBlock(device);
        },
        py::arg("device"), Release());
  m.def("host_memory",
        [] {
          const HostMemory h = ActiveDeviceReader()->HostMemoryInfo();
          return std::make_tuple(h.total_bytes, h.available_bytes);
        },
        Release(), "(MemTotal, MemAvailable) in bytes");
  m.def("torch_stats",
        [](int device) {
          auto r = ActiveDeviceReader();
          CheckTorchDevice(*r, device);
          return r->TorchStats(device);
        },
        py::arg("device"), Release());
  m.def("torch_memory_stats",
        [](int device) {
          auto r = ActiveDeviceReader();
          CheckTorchDevice(*r, device);
          return r->TorchStatsAll(device);
        },
        py::arg("device"), Release(), "[(key, value)] as torch.cuda.memory_stats, sorted");
  m.def("empty_cache", [] { ActiveDeviceReader()->EmptyCache(); }, Release());
  m.def("reset_peak_memory_stats",
        [](int device) {
          auto r = ActiveDeviceReader();
          CheckTorchDevice(*r, device);
          r->ResetPeak(device);
        },
        py::arg("device"), Release());
  // Needs a context: on the real device this initialises CUDA and retains the primary context.
  m.def("synchronize",
        [](int device) {
          auto r = ActiveDeviceReader();
          r->CheckDevice(device);
          r->Synchronize(device);
        },
        py::arg("device"), Release());
  m.def("current_torch_memory_usage",
        [](int device) { return CurrentTorchMemoryUsage(*ActiveDeviceReader(), device); },
        py::arg("device"), Release());
  m.def("release_device_memory_under_pressure",
        [](int device) { return ReleaseDeviceMemoryUnderPressure(*ActiveDeviceReader(), device); },
        py::arg("device"), Release(), "bytes released, 0 when nothing was done");
  m.def("compute_memory_profiling",
        [](const MemorySnapshotRecord& before_create, const MemorySnapshotRecord& before_profile,
           const MemorySnapshotRecord& after_profile, int64_t weights_memory,
           std::optional<SamplerPeaks> peaks, const std::string& formula) {
          return ComputeMemoryProfiling(before_create, before_profile, after_profile,
                                        weights_memory, peaks ? &*peaks : nullptr,
                                        ParseNonKvFormula(formula));
        },
        py::arg("before_create"), py::arg("before_profile"), py::arg("after_profile"),
        py::arg("weights_memory"), py::arg("peaks") = py::none(),
        py::arg("formula") = std::string("components"));
  m.def("memory_profiling_repr", &MemoryProfilingRepr, py::arg("figures"));

  // Real-device diagnostics (never the simulated one).
  m.def("cuda_driver_status",
        [] {
          const cuda::DriverFacts f = cuda::QueryDriverFacts();
          return std::make_tuple(f.ok, f.why, f.device_count, f.driver_version);
        },
        Release(), "(driver usable, reason if not, device count, driver version); no cuInit here");
  m.def("torch_provider_info",
        [] {
          return std::make_tuple(torch_allocator::ProviderPath(), torch_allocator::ProviderLoaded(),
                                 torch_allocator::ProviderRefusal());
        },
        "(where the provider is looked for, whether it is loaded, why it was refused or '')");
  m.def("process_memory",
        [](int device) {
          const nvml::ProcessList list = nvml::ComputeProcesses(FactsOf(device).pci_bus_id);
          std::vector<std::pair<uint32_t, int64_t>> procs;
          for (const auto& p : list.processes) procs.emplace_back(p.pid, p.used_bytes);
          return std::make_tuple(list.available, list.detail, procs);
        },
        py::arg("device"), Release(), "NVML per-process usage on the real device; no cuInit here");
  m.def("nvml_memory",
        [](int device) {
          const std::string bus = FactsOf(device).pci_bus_id;
          const nvml::MemoryInfo info = nvml::DeviceMemory(bus);
          return std::make_tuple(info.available, info.detail, info.free_bytes, info.total_bytes,
                                 info.reserved_bytes, bus);
        },
        py::arg("device"), Release(),
        "(available, reason if not, free, total, reserved, PCI bus id) from NVML; no context, no cuInit");
}

void BindSampler(py::module_& m) {
  py::class_<MemorySampler>(m, "MemorySampler", "Background sampler of the active device.")
      .def(py::init([](int device, double interval_s, int64_t max_samples) {
             return std::make_unique<MemorySampler>(ActiveDeviceReader(), device, interval_s,
                                                    max_samples);
           }),
           py::arg("device"), py::arg("interval_s"),
           py::arg("max_samples") = MemorySampler::kDefaultMaxSamples)
      .def("start", &MemorySampler::Start, Release())
      .def("stop", &MemorySampler::Stop, Release())
      .def_property_readonly("running", &MemorySampler::running)
      .def_property_readonly("device", &MemorySampler::device)
      .def_property_readonly("interval_s", &MemorySampler::interval_s)
      .def_property_readonly("error", &MemorySampler::error)
      .def_property_readonly("dropped_samples", &MemorySampler::dropped_samples)
      .def("peaks", &MemorySampler::Peaks)
      .def("timeline", [](const MemorySampler& s) {
        const MemoryTimeline t = s.Timeline();
        py::dict out;
        out["start_timestamp"] = t.start_timestamp;
        out["time_s"] = ToArray(t.time_s);
        out["free_memory"] = ToArray(t.free_memory);
        out["cuda_memory"] = ToArray(t.cuda_memory);
        out["torch_allocated"] = ToArray(t.torch_allocated);
        out["torch_reserved"] = ToArray(t.torch_reserved);
        out["non_torch_memory"] = ToArray(t.non_torch_memory);
        return out;
      });
  m.attr("SAMPLER_MIN_INTERVAL_S") = MemorySampler::kMinIntervalS;
  m.attr("SAMPLER_MAX_INTERVAL_S") = MemorySampler::kMaxIntervalS;
}

void BindSimulated(py::module_& m) {
  py::class_<DeviceReader, std::shared_ptr<DeviceReader>>(m, "DeviceReader");
  py::class_<SimulatedDeviceState>(m, "SimulatedDeviceState")
      .def_readonly("total_bytes", &SimulatedDeviceState::total_bytes)
      .def_readonly("other_process_bytes", &SimulatedDeviceState::other_process_bytes)
      .def_readonly("non_torch_bytes", &SimulatedDeviceState::non_torch_bytes)
      .def_readonly("torch_allocated_bytes", &SimulatedDeviceState::torch_allocated_bytes)
      .def_readonly("torch_allocated_peak_bytes", &SimulatedDeviceState::torch_allocated_peak_bytes)
      .def_readonly("torch_reserved_bytes", &SimulatedDeviceState::torch_reserved_bytes)
      .def_readonly("torch_reserved_peak_bytes", &SimulatedDeviceState::torch_reserved_peak_bytes)
      .def_readonly("integrated", &SimulatedDeviceState::integrated)
      .def_property_readonly("free_bytes", &SimulatedDeviceState::free_bytes);
  py::class_<SimulatedDevice, DeviceReader, std::shared_ptr<SimulatedDevice>>(m, "SimulatedDevice")
      .def(py::init([](int num_devices, int64_t total_bytes, bool integrated,
                       int64_t host_total_bytes, int64_t host_available_bytes,
                       int64_t max_shared_memory_per_block, bool torch_initialized) {
             SimulatedDeviceConfig c;
             c.num_devices = num_devices;
             c.total_bytes = total_bytes;
             c.integrated = integrated;
             c.host_total_bytes = host_total_bytes;
             c.host_available_bytes = host_available_bytes;
             c.max_shared_memory_per_block = max_shared_memory_per_block;
             c.torch_status = torch_initialized ? AllocatorStatus::kAvailable
                                                : AllocatorStatus::kNotInitialized;
             return std::make_shared<SimulatedDevice>(c);
           }),
           py::arg("num_devices"), py::arg("total_bytes"), py::arg("integrated"),
           py::arg("host_total_bytes"), py::arg("host_available_bytes"),
           py::arg("max_shared_memory_per_block"), py::arg("torch_initialized"))
      .def("add_other_process_bytes", &SimulatedDevice::AddOtherProcessBytes, py::arg("device"),
           py::arg("delta_bytes"))
      .def("add_non_torch_bytes", &SimulatedDevice::AddNonTorchBytes, py::arg("device"),
           py::arg("delta_bytes"))
      .def("torch_allocate", &SimulatedDevice::TorchAllocate, py::arg("device"), py::arg("bytes"))
      .def("torch_free", &SimulatedDevice::TorchFree, py::arg("device"), py::arg("bytes"))
      .def("set_current_device", &SimulatedDevice::SetCurrentDevice, py::arg("device"))
      .def("set_integrated", &SimulatedDevice::SetIntegrated, py::arg("device"), py::arg("integrated"))
      .def("set_host_memory", &SimulatedDevice::SetHostMemory, py::arg("total_bytes"),
           py::arg("available_bytes"))
      .def("set_torch_initialized",
           [](SimulatedDevice& s, bool on) {
             s.SetTorchStatus(on ? AllocatorStatus::kAvailable : AllocatorStatus::kNotInitialized);
           },
           py::arg("initialized"))
      .def("set_torch_status",
           [](SimulatedDevice& s, const std::string& name) { s.SetTorchStatus(ParseAllocatorStatus(name)); },
           py::arg("status"))
      .def("torch_allocate_at_next_read", &SimulatedDevice::TorchAllocateAtNextRead, py::arg("device"),
           py::arg("bytes"))
      .def("torch_empty_cache", &SimulatedDevice::TorchEmptyCache)
      .def("torch_reset_peak", &SimulatedDevice::TorchResetPeak, py::arg("device"))
      .def("set_failure", &SimulatedDevice::SetFailure, py::arg("message"))
      .def("state", &SimulatedDevice::State, py::arg("device"))
      .def_property_readonly("empty_cache_calls", &SimulatedDevice::empty_cache_calls)
      .def_property_readonly("reset_peak_calls", &SimulatedDevice::reset_peak_calls)
      .def_property_readonly("mem_info_calls", &SimulatedDevice::mem_info_calls);
  m.def("install_device", &InstallDeviceReader, py::arg("reader"),
        "Make a (simulated) device the active one");
  m.def("remove_device",
        [](const std::shared_ptr<DeviceReader>& r) { return RemoveDeviceReader(r.get()); },
        py::arg("reader"));
}

}  // namespace

void BindDevice(py::module_& m) {
  BindRecords(m);
  BindReaderFunctions(m);
  BindSampler(m);
  BindSimulated(m);
}

}  // namespace vllm_mem::bindings
