/*!
 * \file device/torch_allocator.cc
 * \brief Finding and opening the torch provider. "Is torch loaded?" is asked of the dynamic
 *        loader (dlopen with RTLD_NOLOAD on libc10.so), never of Python, so the check is safe
 *        from the sampler thread and cheap enough to repeat until torch shows up.
 */
#include "device/torch_allocator.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "vllm_mem/base/error.h"
#include "device/torch_provider_abi.h"

namespace vllm_mem::torch_allocator {
namespace {

namespace abi = torch_abi;

struct Provider {
  abi::StatsFn stats = nullptr;
  abi::ResetPeakFn reset_peak = nullptr;
  abi::EmptyCacheFn empty_cache = nullptr;
};

std::atomic<const Provider*> g_provider{nullptr};
std::mutex g_load_mutex;
std::string g_load_error;  // guarded by g_load_mutex; a broken provider is reported, not retried

std::string DefaultProviderPath() {
  if (const char* env = std::getenv("VLLM_MEM_TORCH_PROVIDER"); env != nullptr && *env) return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&DefaultProviderPath), &info) == 0 || !info.dli_fname) {
    return "";
  }
  std::string self = info.dli_fname;
  const size_t slash = self.rfind('/');
  return (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) +
         "/_torch_provider.so";
}

/*! The provider, or null with \p why saying why (kNoTorch in every case: without it we know
 *  nothing about torch's allocator). */
const Provider* Get(std::string* why) {
  const Provider* p = g_provider.load(std::memory_order_acquire);
  if (p != nullptr) return p;
  std::lock_guard<std::mutex> lock(g_load_mutex);
  p = g_provider.load(std::memory_order_acquire);
  if (p != nullptr) return p;
  if (!g_load_error.empty()) {
    *why = g_load_error;
    return nullptr;
  }
  // Only once torch is in the process: opening the provider would otherwise load libc10 (and
  // with it the whole torch) behind the user's back.
  void* c10 = dlopen("libc10.so", RTLD_LAZY | RTLD_NOLOAD);
  if (c10 == nullptr) {
    *why = "torch is not imported in this process";
    return nullptr;
  }
  dlclose(c10);  // RTLD_NOLOAD still took a reference
  const std::string path = DefaultProviderPath();
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    g_load_error = "vllm_mem was built without the torch provider, or it cannot be loaded (" +
                   path + ": " + (err ? err : "unknown") + ")";
    *why = g_load_error;
    return nullptr;
  }
  auto version = reinterpret_cast<abi::AbiVersionFn>(dlsym(lib, abi::kAbiVersionSymbol));
  auto* provider = new Provider();  // leaked on purpose: the sampler may use it until exit
  provider->stats = reinterpret_cast<abi::StatsFn>(dlsym(lib, abi::kStatsSymbol));
  provider->reset_peak = reinterpret_cast<abi::ResetPeakFn>(dlsym(lib, abi::kResetPeakSymbol));
  provider->empty_cache = reinterpret_cast<abi::EmptyCacheFn>(dlsym(lib, abi::kEmptyCacheSymbol));
  if (!version || version() != abi::kAbiVersion || !provider->stats || !provider->reset_peak ||
      !provider->empty_cache) {
    g_load_error = "the torch provider at " + path + " has a different ABI; rebuild vllm_mem";
    delete provider;
    *why = g_load_error;
    return nullptr;
  }
  g_provider.store(provider, std::memory_order_release);
  return provider;
}

AllocatorStatus ToStatus(int code) {
  if (code < 0 || code > static_cast<int>(AllocatorStatus::kError)) return AllocatorStatus::kError;
  return static_cast<AllocatorStatus>(code);
}

AllocatorStats Read(int device, int64_t* values) {
  AllocatorStats out;
  std::string why;
  const Provider* p = Get(&why);
  if (p == nullptr) {
    out.status = AllocatorStatus::kNoTorch;
    out.detail = why;
    return out;
  }
  char msg[512] = {0};
  out.status = ToStatus(p->stats(device, values, abi::kNumValues, msg, sizeof(msg)));
  if (!out.available()) {
    out.detail = msg;
    return out;
  }
  constexpr int kAll = 0, kCurrent = 0, kPeak = 1;
  out.allocated_bytes = values[abi::StatIndex(abi::kAllocatedBytes, kAll, kCurrent)];
  out.allocated_peak_bytes = values[abi::StatIndex(abi::kAllocatedBytes, kAll, kPeak)];
  out.reserved_bytes = values[abi::StatIndex(abi::kReservedBytes, kAll, kCurrent)];
  out.reserved_peak_bytes = values[abi::StatIndex(abi::kReservedBytes, kAll, kPeak)];
  return out;
}

}  // namespace

AllocatorStats Stats(int device) {
  int64_t values[abi::kNumValues];
  return Read(device, values);
}

std::vector<std::pair<std::string, int64_t>> AllStats(int device, AllocatorStats* status) {
  int64_t values[abi::kNumValues];
  *status = Read(device, values);
  std::vector<std::pair<std::string, int64_t>> out;
  if (!status->available()) return out;
  for (int a = 0; a < abi::kNumStatArrays; ++a) {
    for (int p = 0; p < abi::kNumPools; ++p) {
      for (int f = 0; f < abi::kNumFields; ++f) {
        out.emplace_back(std::string(abi::kStatArrays[a]) + "." + abi::kPools[p] + "." +
                             abi::kFields[f],
                         values[abi::StatIndex(a, p, f)]);
      }
    }
  }
  for (int s = 0; s < abi::kNumStats; ++s) {
    for (int f = 0; f < abi::kNumFields; ++f) {
      out.emplace_back(std::string(abi::kStats[s]) + "." + abi::kFields[f],
                       values[abi::SingleStatIndex(s, f)]);
    }
  }
  for (int c = 0; c < abi::kNumCounters; ++c) {
    out.emplace_back(abi::kCounters[c], values[abi::CounterIndex(c)]);
  }
  std::sort(out.begin(), out.end());  // torch.cuda.memory_stats() sorts its keys too
  return out;
}

void ResetPeak(int device) {
  std::string why;
  if (const Provider* p = Get(&why)) {
    char msg[512] = {0};
    // Unavailable (not initialised) is torch's own no-op; a c10 error is a real failure.
    if (ToStatus(p->reset_peak(device, msg, sizeof(msg))) == AllocatorStatus::kError) {
      throw DeviceError(std::string("torch reset_peak_memory_stats failed: ") + msg);
    }
  }
}

void EmptyCache() {
  std::string why;
  if (const Provider* p = Get(&why)) {
    char msg[512] = {0};
    if (ToStatus(p->empty_cache(msg, sizeof(msg))) == AllocatorStatus::kError) {
      throw DeviceError(std::string("torch empty_cache failed: ") + msg);
    }
  }
}

std::string ProviderPath() { return DefaultProviderPath(); }

bool ProviderLoaded() { return g_provider.load() != nullptr; }

}  // namespace vllm_mem::torch_allocator
