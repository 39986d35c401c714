/*!
 * \file device/nvml.cc
 * \brief The few NVML prototypes and structs are declared here (nvml.h is not shipped with the
 *        toolkit); the C ABI is stable. We use the _v3 query with nvmlProcessInfo_v2_t.
 */
#include "device/nvml.h"

#include <dlfcn.h>

#include <mutex>

namespace vllm_mem::nvml {
namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr unsigned long long kValueNotAvailable = ~0ULL;

struct ProcessInfoV2 {  // nvmlProcessInfo_v2_t, the struct of the _v2/_v3 queries
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct MemoryV1 {  // nvmlMemory_t
  unsigned long long total, free, used;
};

struct MemoryV2 {  // nvmlMemory_v2_t; version = sizeof | 2 << 24 (nvmlMemory_v2)
  unsigned int version;
  unsigned long long total, reserved, free, used;
};

struct Nvml {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*memory_v1)(nvmlDevice_t, MemoryV1*) = nullptr;
  nvmlReturn_t (*memory_v2)(nvmlDevice_t, MemoryV2*) = nullptr;  // optional: drivers >= 510
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int*, ProcessInfoV2*) = nullptr;
  bool ok = false;
  std::string why;
};

Nvml& Load() {
  static Nvml* nvml = [] {
    auto* n = new Nvml();  // leaked on purpose: lives as long as the process
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      n->why = "NVML not available (libnvidia-ml.so.1 not loadable)";
      return n;
    }
    n->init = reinterpret_cast<decltype(n->init)>(dlsym(lib, "nvmlInit_v2"));
    n->by_pci = reinterpret_cast<decltype(n->by_pci)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    n->procs = reinterpret_cast<decltype(n->procs)>(
        dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
    n->memory_v1 = reinterpret_cast<decltype(n->memory_v1)>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    n->memory_v2 = reinterpret_cast<decltype(n->memory_v2)>(dlsym(lib, "nvmlDeviceGetMemoryInfo_v2"));
    if (!n->init || !n->by_pci || !n->procs) {
      n->why = "NVML lacks nvmlDeviceGetComputeRunningProcesses_v3 (driver too old)";
      return n;
    }
    const nvmlReturn_t rc = n->init();
    if (rc != kSuccess) {
      n->why = "nvmlInit_v2 failed with " + std::to_string(rc);
      return n;
    }
    n->ok = true;
    return n;
  }();
  return *nvml;
}

}  // namespace

MemoryInfo DeviceMemory(const std::string& pci_bus_id) {
  MemoryInfo out;
  Nvml& n = Load();
  if (!n.ok) {
    out.detail = n.why;
    return out;
  }
  if (n.memory_v1 == nullptr && n.memory_v2 == nullptr) {
    out.detail = "NVML lacks nvmlDeviceGetMemoryInfo";
    return out;
  }
  nvmlDevice_t dev = nullptr;
  nvmlReturn_t rc = n.by_pci(pci_bus_id.c_str(), &dev);
  if (rc != kSuccess) {
    out.detail = "nvmlDeviceGetHandleByPciBusId_v2(" + pci_bus_id + ") failed with " + std::to_string(rc);
    return out;
  }
  if (n.memory_v2 != nullptr) {
    MemoryV2 m{};
    m.version = static_cast<unsigned int>(sizeof(MemoryV2)) | (2u << 24);
    rc = n.memory_v2(dev, &m);
    if (rc == kSuccess) {
      out.available = true;
      out.total_bytes = static_cast<int64_t>(m.total);
      out.reserved_bytes = static_cast<int64_t>(m.reserved);
      out.free_bytes = static_cast<int64_t>(m.free);
      out.used_bytes = static_cast<int64_t>(m.used);
      return out;
    }
  }
  if (n.memory_v1 != nullptr) {
    MemoryV1 m{};
    rc = n.memory_v1(dev, &m);
    if (rc == kSuccess) {
      out.available = true;
      out.total_bytes = static_cast<int64_t>(m.total);
      out.free_bytes = static_cast<int64_t>(m.free);
      out.used_bytes = static_cast<int64_t>(m.used);
      return out;
    }
  }
  // Integrated GPUs (unified memory) answer NVML_ERROR_NOT_SUPPORTED (3) here.
  out.detail = "nvmlDeviceGetMemoryInfo failed with " + std::to_string(rc);
  return out;
}

ProcessList ComputeProcesses(const std::string& pci_bus_id) {
  ProcessList out;
  Nvml& n = Load();
  if (!n.ok) {
    out.detail = n.why;
    return out;
  }
  nvmlDevice_t dev = nullptr;
  nvmlReturn_t rc = n.by_pci(pci_bus_id.c_str(), &dev);
  if (rc != kSuccess) {
    out.detail = "nvmlDeviceGetHandleByPciBusId_v2(" + pci_bus_id + ") failed with " +
                 std::to_string(rc);
    return out;
  }
  // Ask for the count first; processes may come and go between calls, so retry a few times.
  std::vector<ProcessInfoV2> infos;
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned int count = static_cast<unsigned int>(infos.size());
    rc = n.procs(dev, &count, infos.empty() ? nullptr : infos.data());
    if (rc == kSuccess) {
      infos.resize(count);
      out.available = true;
      for (const ProcessInfoV2& info : infos) {
        out.processes.push_back(
            {info.pid, info.usedGpuMemory == kValueNotAvailable
                           ? int64_t{-1}
                           : static_cast<int64_t>(info.usedGpuMemory)});
      }
      return out;
    }
    if (rc != kInsufficientSize) break;
    infos.resize(count + 8);
  }
  out.detail = "nvmlDeviceGetComputeRunningProcesses_v3 failed with " + std::to_string(rc);
  return out;
}

}  // namespace vllm_mem::nvml
