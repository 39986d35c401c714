/*!
 * \file device/cuda_driver.cc
 * \brief The driver entry points, resolved by their versioned exported names (cuda.h maps
 *        cuMemGetInfo to cuMemGetInfo_v2 and so on; dlsym needs the real names).
 */
#include "device/cuda_driver.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "vllm_mem/base/error.h"

namespace vllm_mem::cuda {
namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
constexpr CUresult kSuccess = 0;
constexpr CUresult kErrorNotInitialized = 3;
constexpr CUresult kErrorNoDevice = 100;

// Set once Load() has run in this address space (a forked child inherits it with the parent's
// init_pid, which is how the child knows the driver state is not its own).
std::atomic<bool> g_loaded{false};

struct Driver {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetPCIBusId)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemGetInfo)(size_t*, size_t*) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;

  bool symbols_ok = false;  // libcuda loaded and every entry point found
  bool ok = false;          // ... and cuInit succeeded
  std::string why;          // reason when !ok
  int device_count = 0;
  int version = 0;
  pid_t init_pid = 0;     // a forked child cannot use the parent's driver state
  // Primary contexts retained on first use, one per device, never released: releasing the
  // last reference would destroy the context PyTorch works in.
  std::unique_ptr<std::atomic<CUcontext>[]> contexts;
  std::mutex retain_mutex;
};

template <typename Fn>
bool Resolve(void* lib, const char* name, Fn*& out, std::string* why) {
  out = reinterpret_cast<Fn*>(dlsym(lib, name));
  if (out == nullptr) *why = std::string("libcuda.so.1 lacks ") + name;
  return out != nullptr;
}

/*! "CUDA_ERROR_SYSTEM_NOT_READY (802)", or the bare code when the driver cannot name it. */
std::string ErrorText(const Driver& d, CUresult rc) {
  const char* name = nullptr;
  if (d.cuGetErrorName == nullptr || d.cuGetErrorName(rc, &name) != kSuccess) name = nullptr;
  return name != nullptr ? std::string(name) + " (" + std::to_string(rc) + ")"
                         : "CUresult " + std::to_string(rc);
}

/*! Stage 1: dlopen and resolve the symbols. Initialises nothing (fork-safe). */
Driver& LoadSymbols() {
  static Driver* driver = [] {
    auto* d = new Driver();  // leaked on purpose: used by the sampler until process exit
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* err = dlerror();
      d->why = std::string("no CUDA driver (libcuda.so.1 not loadable: ") +
               (err != nullptr ? err : "unknown") + ")";
      return d;
    }
    std::string* why = &d->why;
    d->symbols_ok = Resolve(lib, "cuInit", d->cuInit, why) &&
                    Resolve(lib, "cuDriverGetVersion", d->cuDriverGetVersion, why) &&
                    Resolve(lib, "cuDeviceGetCount", d->cuDeviceGetCount, why) &&
                    Resolve(lib, "cuDeviceGet", d->cuDeviceGet, why) &&
                    Resolve(lib, "cuDeviceGetAttribute", d->cuDeviceGetAttribute, why) &&
                    Resolve(lib, "cuDeviceGetPCIBusId", d->cuDeviceGetPCIBusId, why) &&
                    Resolve(lib, "cuDevicePrimaryCtxRetain", d->cuDevicePrimaryCtxRetain, why) &&
                    Resolve(lib, "cuCtxPushCurrent_v2", d->cuCtxPushCurrent, why) &&
                    Resolve(lib, "cuCtxPopCurrent_v2", d->cuCtxPopCurrent, why) &&
                    Resolve(lib, "cuCtxGetCurrent", d->cuCtxGetCurrent, why) &&
                    Resolve(lib, "cuCtxGetDevice", d->cuCtxGetDevice, why) &&
                    Resolve(lib, "cuCtxSynchronize", d->cuCtxSynchronize, why) &&
                    Resolve(lib, "cuMemGetInfo_v2", d->cuMemGetInfo, why) &&
                    Resolve(lib, "cuGetErrorName", d->cuGetErrorName, why);
    return d;
  }();
  return *driver;
}

/*! Stage 2: cuInit (which creates no context), the device count, the context slots. */
Driver& Load() {
  static Driver* driver = [] {
    Driver* d = &LoadSymbols();
    if (!d->symbols_ok) return d;
    g_loaded.store(true, std::memory_order_release);
    d->cuDriverGetVersion(&d->version);  // needs no cuInit
    const CUresult rc = d->cuInit(0);
    if (rc == kErrorNoDevice) {
      d->ok = true;  // a driver with no visible device: count 0, not an error
      d->contexts.reset(new std::atomic<CUcontext>[1]);  // never indexed: every index is refused
      d->init_pid = getpid();
      return d;
    }
    if (rc != kSuccess) {
      d->why = "cuInit failed: " + ErrorText(*d, rc);
      return d;
    }
    if (d->cuDeviceGetCount(&d->device_count) != kSuccess || d->device_count < 0) d->device_count = 0;
    d->contexts.reset(new std::atomic<CUcontext>[static_cast<size_t>(d->device_count) + 1]);
    for (int i = 0; i <= d->device_count; ++i) d->contexts[i].store(nullptr);
    d->init_pid = getpid();
    d->ok = true;
    return d;
  }();
  return *driver;
}

Driver& Require() {
  Driver& d = Load();
  if (!d.ok) throw DeviceError(d.why);
  if (getpid() != d.init_pid) {
    throw DeviceError("the CUDA driver was initialised by vllm_mem in a parent process before "
                      "fork(); CUDA cannot be used in a forked child (use the 'spawn' start method)");
  }
  return d;
}

void Check(Driver& d, CUresult rc, const char* what) {
  if (rc == kSuccess) return;
  throw DeviceError(std::string(what) + " failed: " + ErrorText(d, rc));
}

CUdevice Handle(Driver& d, int device) {
  if (device < 0 || device >= d.device_count) {
    throw InvalidArgument("device", "unknown CUDA device index " + std::to_string(device) + " (" +
                                        std::to_string(d.device_count) + " visible)");
  }
  CUdevice dev = 0;
  Check(d, d.cuDeviceGet(&dev, device), "cuDeviceGet");
  return dev;
}

CUcontext PrimaryContext(Driver& d, int device) {
  // The index is validated before the context table is read: with no device the table has one
  // unused slot, and a negative or too large index must never reach the driver as a handle.
  const CUdevice handle = Handle(d, device);
  CUcontext ctx = d.contexts[device].load(std::memory_order_acquire);
  if (ctx != nullptr) return ctx;
  std::lock_guard<std::mutex> lock(d.retain_mutex);
  ctx = d.contexts[device].load(std::memory_order_acquire);
  if (ctx != nullptr) return ctx;
  // Retaining the primary context makes it the runtime's context too: no second context. If
  // torch has not initialised CUDA yet this activates it, exactly as torch.cuda.mem_get_info.
  Check(d, d.cuDevicePrimaryCtxRetain(&ctx, handle), "cuDevicePrimaryCtxRetain");
  d.contexts[device].store(ctx, std::memory_order_release);
  return ctx;
}

/*! Runs \p fn with the primary context of \p device current, restoring the caller's. */
template <typename Fn>
void InPrimaryContext(Driver& d, int device, Fn&& fn) {
  CUcontext ctx = PrimaryContext(d, device);
  CUcontext current = nullptr;
  Check(d, d.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current == ctx) {  // the common case inside a worker: no push/pop at all
    fn();
    return;
  }
  Check(d, d.cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
  try {
    fn();
  } catch (...) {
    CUcontext popped = nullptr;
    d.cuCtxPopCurrent(&popped);
    throw;
  }
  CUcontext popped = nullptr;
  Check(d, d.cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
}

}  // namespace

bool DriverAvailable(std::string* why) {
  Driver& d = Load();
  if (!d.ok && why != nullptr) *why = d.why;
  return d.ok;
}

int DeviceCount() {
  Driver& d = Load();
  return d.ok ? d.device_count : 0;
}

int CurrentDevice() {
  // If nobody has loaded the driver, no context can be current: answer without loading it.
  // Otherwise ask without cuInit: naming "the current device" (a snapshot built with
  // auto_measure=False, say, in a parent that will fork) must never initialise CUDA.
  static std::atomic<bool> driver_in_process{false};
  if (!driver_in_process.load(std::memory_order_acquire)) {
    void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (lib == nullptr) return 0;
    dlclose(lib);
    driver_in_process.store(true, std::memory_order_release);
  }
  // A forked child of a process whose driver we initialised must not call the driver at all:
  // the pid check comes before any call.
  if (g_loaded.load(std::memory_order_acquire) && Load().init_pid != getpid()) return 0;
  Driver& s = LoadSymbols();
  if (!s.symbols_ok) return 0;
  CUcontext current = nullptr;
  // Before anyone's cuInit this returns CUDA_ERROR_NOT_INITIALIZED: no context, device 0.
  if (s.cuCtxGetCurrent(&current) != kSuccess || current == nullptr) return 0;
  Driver& d = Load();  // a context exists, so the driver is initialised already
  if (!d.ok || getpid() != d.init_pid) return 0;
  CUdevice dev = 0;
  if (d.cuCtxGetDevice(&dev) != kSuccess) return 0;
  // A CUdevice handle is its ordinal in every driver release; map it back explicitly anyway.
  for (int i = 0; i < d.device_count; ++i) {
    CUdevice h = 0;
    if (d.cuDeviceGet(&h, i) == kSuccess && h == dev) return i;
  }
  return 0;
}

DeviceMemInfo MemGetInfo(int device) {
  Driver& d = Require();
  size_t free_bytes = 0, total_bytes = 0;
  InPrimaryContext(d, device, [&] {
    Check(d, d.cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
  });
  return {static_cast<int64_t>(free_bytes), static_cast<int64_t>(total_bytes)};
}

int DeviceAttribute(int device, int attribute) {
  Driver& d = Require();
  int value = 0;
  Check(d, d.cuDeviceGetAttribute(&value, attribute, Handle(d, device)), "cuDeviceGetAttribute");
  return value;
}

void Synchronize(int device) {
  Driver& d = Require();
  InPrimaryContext(d, device, [&] { Check(d, d.cuCtxSynchronize(), "cuCtxSynchronize"); });
}

std::string PciBusId(int device) {
  Driver& d = Require();
  char buf[32] = {0};
  Check(d, d.cuDeviceGetPCIBusId(buf, sizeof(buf), Handle(d, device)), "cuDeviceGetPCIBusId");
  return buf;
}

int DriverVersion() {
  Driver& d = Load();
  return d.ok ? d.version : 0;
}


bool DriverInitialisedHere() {
  if (g_loaded.load(std::memory_order_acquire)) {
    Driver& d = Load();
    return d.ok && d.init_pid == getpid();
  }
  // Not ours; maybe torch's. Without libcuda in the process nobody can have initialised it.
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) return false;
  dlclose(lib);
  Driver& s = LoadSymbols();
  if (!s.symbols_ok) return false;
  int count = 0;
  // Before any cuInit this answers CUDA_ERROR_NOT_INITIALIZED and initialises nothing.
  return s.cuDeviceGetCount(&count) == kSuccess;
}

namespace {

constexpr int kProbeMaxDevices = 64;
constexpr int kProbeTimeoutS = 60;  // cuInit on a large node without persistence mode: seconds

// What the probing child writes back: plain data, one write.
struct ProbeReply {
  int32_t init_rc;
  int32_t count_rc;
  int32_t count;
  struct Device {
    int32_t rc;
    int32_t integrated;
    int32_t max_shared_memory_per_block;
    char pci_bus_id[32];
  } devices[kProbeMaxDevices];
};

/*! Reads the facts in this process: the driver is initialised here already. */
DriverFacts ReadFactsHere() {
  DriverFacts f;
  Driver& d = Load();
  f.driver_version = d.version;
  f.ok = d.ok;
  f.why = d.why;
  if (!d.ok) return f;
  f.device_count = d.device_count;
  for (int i = 0; i < d.device_count; ++i) {
    DeviceFacts dev;
    CUdevice h = 0;
    int integrated = 0, smem = 0;
    char bus[32] = {0};
    if (d.cuDeviceGet(&h, i) != kSuccess ||
        d.cuDeviceGetAttribute(&integrated, kAttrIntegrated, h) != kSuccess ||
        d.cuDeviceGetAttribute(&smem, kAttrMaxSharedMemoryPerBlockOptin, h) != kSuccess ||
        d.cuDeviceGetPCIBusId(bus, sizeof(bus) - 1, h) != kSuccess) {
      f.ok = false;
      f.why = "reading device " + std::to_string(i) + "'s attributes failed";
      return f;
    }
    dev.pci_bus_id = bus;
    dev.integrated = integrated != 0;
    dev.max_shared_memory_per_block = smem;
    f.devices.push_back(dev);
  }
  return f;
}

/*! Child side of the probe: only driver calls, write and _exit (no Python, no allocation). */
[[noreturn]] void ProbeChild(Driver& s, int fd) {
  static ProbeReply r;  // static: no large stack frame in a child of an arbitrary thread
  std::memset(&r, 0, sizeof(r));
  r.init_rc = s.cuInit(0);
  if (r.init_rc == kSuccess) {
    r.count_rc = s.cuDeviceGetCount(&r.count);
    const int n = r.count_rc == kSuccess ? (r.count < kProbeMaxDevices ? r.count : kProbeMaxDevices) : 0;
    for (int i = 0; i < n; ++i) {
      ProbeReply::Device& dev = r.devices[i];
      CUdevice h = 0;
      dev.rc = s.cuDeviceGet(&h, i);
      if (dev.rc == kSuccess) dev.rc = s.cuDeviceGetAttribute(&dev.integrated, kAttrIntegrated, h);
      if (dev.rc == kSuccess) {
        dev.rc = s.cuDeviceGetAttribute(&dev.max_shared_memory_per_block,
                                        kAttrMaxSharedMemoryPerBlockOptin, h);
      }
      if (dev.rc == kSuccess) dev.rc = s.cuDeviceGetPCIBusId(dev.pci_bus_id, sizeof(dev.pci_bus_id) - 1, h);
    }
  }
  const char* p = reinterpret_cast<const char*>(&r);
  size_t left = sizeof(r);
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  _exit(0);
}

/*! Reads the facts in a forked child, so that cuInit never runs in this process. */
DriverFacts ProbeInChild(Driver& s) {
  DriverFacts f;
  f.from_child = true;
  if (s.cuDriverGetVersion != nullptr) s.cuDriverGetVersion(&f.driver_version);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    f.why = std::string("cannot probe the CUDA driver: pipe failed: ") + std::strerror(errno);
    return f;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    f.why = std::string("cannot probe the CUDA driver: fork failed: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return f;
  }
  if (pid == 0) {
    close(fds[0]);
    ProbeChild(s, fds[1]);
  }
  close(fds[1]);
  auto reply = std::make_unique<ProbeReply>();
  char* p = reinterpret_cast<char*>(reply.get());
  size_t got = 0;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kProbeTimeoutS);
  while (got < sizeof(ProbeReply)) {
    const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - std::chrono::steady_clock::now()).count();
    if (left_ms <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left_ms));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check ends the loop
    const ssize_t n = read(fds[0], p + got, sizeof(ProbeReply) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child died before writing everything
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    f.why = "the CUDA driver probe (cuInit in a forked child) did not answer within " +
            std::to_string(kProbeTimeoutS) + " s";
    return f;
  }
  if (got < sizeof(ProbeReply)) {
    f.why = WIFSIGNALED(status)
                ? "the CUDA driver probe (cuInit in a forked child) died with signal " +
                      std::to_string(WTERMSIG(status))
                : std::string("the CUDA driver probe (cuInit in a forked child) gave no answer");
    return f;
  }
  const ProbeReply& r = *reply;
  if (r.init_rc == kErrorNoDevice) {
    f.ok = true;  // as Load(): a driver with no visible device
    return f;
  }
  if (r.init_rc != kSuccess) {
    f.why = "cuInit failed: " + ErrorText(s, r.init_rc);
    if (r.init_rc == kErrorNotInitialized) {
      f.why += " (is this a process forked after CUDA was initialised? use the 'spawn' start method)";
    }
    return f;
  }
  if (r.count_rc != kSuccess) {
    f.why = "cuDeviceGetCount failed: " + ErrorText(s, r.count_rc);
    return f;
  }
  const int n = r.count < kProbeMaxDevices ? r.count : kProbeMaxDevices;
  for (int i = 0; i < n; ++i) {
    if (r.devices[i].rc != kSuccess) {
      f.why = "reading device " + std::to_string(i) + "'s attributes failed: " + ErrorText(s, r.devices[i].rc);
      return f;
    }
    DeviceFacts dev;
    dev.pci_bus_id.assign(r.devices[i].pci_bus_id, strnlen(r.devices[i].pci_bus_id, 31));
    dev.integrated = r.devices[i].integrated != 0;
    dev.max_shared_memory_per_block = r.devices[i].max_shared_memory_per_block;
    f.devices.push_back(dev);
  }
  f.device_count = n;
  f.ok = true;
  return f;
}

std::string EnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string("\x01unset") : std::string(v);
}

}  // namespace

DriverFacts QueryDriverFacts() {
  if (g_loaded.load(std::memory_order_acquire)) {
    Driver& d = Load();
    if (d.init_pid != 0 && d.init_pid != getpid()) {
      DriverFacts f;
      f.driver_version = d.version;
      f.why = "the CUDA driver was initialised by vllm_mem in a parent process before fork(); "
              "CUDA cannot be used in a forked child (use the 'spawn' start method)";
      return f;
    }
  }
  // Once the driver is initialised here the facts are fixed for the life of the process (the
  // visible devices cannot change after cuInit): read them once, not on every is_integrated().
  static std::atomic<DriverFacts*> here{nullptr};
  static std::atomic<pid_t> here_pid{0};
  DriverFacts* known = here.load(std::memory_order_acquire);
  if (known != nullptr && here_pid.load(std::memory_order_acquire) == getpid()) return *known;
  if (DriverInitialisedHere()) {
    DriverFacts f = ReadFactsHere();
    if (f.ok && known == nullptr) {
      auto* fresh = new DriverFacts(f);  // never destroyed, like the driver table
      DriverFacts* expected = nullptr;
      if (here.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
        here_pid.store(getpid(), std::memory_order_release);
      } else {
        delete fresh;
      }
    }
    return f;
  }
  Driver& s = LoadSymbols();
  if (!s.symbols_ok) {
    DriverFacts f;
    f.why = s.why;
    return f;
  }
  // The answer depends on what the child's driver sees: the visible devices and their order.
  static std::mutex mutex;
  static auto* cache = new std::map<std::string, DriverFacts>();  // never destroyed
  const std::string key = EnvOr("CUDA_VISIBLE_DEVICES") + '\0' + EnvOr("CUDA_DEVICE_ORDER");
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  DriverFacts f = ProbeInChild(s);
  // Failures are not cached: 802 (system not ready) clears once the fabric manager is up.
  if (f.ok) cache->emplace(key, f);
  return f;
}

}  // namespace vllm_mem::cuda
