/*!
 * \file device/cuda_driver.cc
 * \brief The driver entry points, resolved by their versioned exported names (cuda.h maps
 *        cuMemGetInfo to cuMemGetInfo_v2 and so on; dlsym needs the real names).
 */
#include "device/cuda_driver.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
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
constexpr CUresult kErrorNoDevice = 100;

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
    const CUresult rc = d->cuInit(0);
    if (rc == kErrorNoDevice) {
      d->ok = true;  // a driver with no visible device: count 0, not an error
      d->init_pid = getpid();
      return d;
    }
    if (rc != kSuccess) {
      d->why = "cuInit failed with CUresult " + std::to_string(rc);
      return d;
    }
    d->cuDriverGetVersion(&d->version);
    if (d->cuDeviceGetCount(&d->device_count) != kSuccess) d->device_count = 0;
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
  const char* name = nullptr;
  if (d.cuGetErrorName == nullptr || d.cuGetErrorName(rc, &name) != kSuccess) name = nullptr;
  throw DeviceError(std::string(what) + " failed: " + (name ? name : "CUresult ") +
                    (name ? "" : std::to_string(rc)));
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
  CUcontext ctx = d.contexts[device].load(std::memory_order_acquire);
  if (ctx != nullptr) return ctx;
  std::lock_guard<std::mutex> lock(d.retain_mutex);
  ctx = d.contexts[device].load(std::memory_order_acquire);
  if (ctx != nullptr) return ctx;
  // Retaining the primary context makes it the runtime's context too: no second context. If
  // torch has not initialised CUDA yet this activates it, exactly as torch.cuda.mem_get_info.
  Check(d, d.cuDevicePrimaryCtxRetain(&ctx, Handle(d, device)), "cuDevicePrimaryCtxRetain");
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

}  // namespace vllm_mem::cuda
