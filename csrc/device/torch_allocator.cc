/*!
 * \file device/torch_allocator.cc
 * \brief Finding and opening the torch provider. "Is torch loaded?" is asked of the dynamic
 *        loader (dlopen with RTLD_NOLOAD on libc10.so), never of Python, so the check is safe
 *        from the sampler thread and cheap enough to repeat until torch shows up.
 */
#include "device/torch_allocator.h"

#include <dlfcn.h>

#include <link.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>

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

/*! "2.11.0" of "2.11.0+cu130" / "2.11.0a0+git1234": the release, without the local build tag.
 *  Builds of one release (CPU, cu126, cu130) share c10's allocator interface and its layout. */
std::string ReleaseOf(const std::string& version) {
  const size_t cut = version.find_first_of("+");
  return version.substr(0, cut);
}

/*! The directory of the libc10.so the process has loaded, or "" (dlinfo on the handle). */
std::string LoadedLibc10Dir(void* c10) {
  struct link_map* map = nullptr;
  if (dlinfo(c10, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) return "";
  std::error_code ec;
  const auto path = std::filesystem::weakly_canonical(map->l_name, ec);
  return ec ? "" : path.parent_path().string();
}

/*! torch.__version__ of the torch whose libc10 is in \p lib_dir, read from torch/version.py
 *  beside it (pip wheels: torch/lib/libc10.so and torch/version.py); "" when not found. Read
 *  from the file, not from Python: this code runs without the GIL, even on the sampler thread. */
std::string TorchVersionNear(const std::string& lib_dir) {
  std::ifstream in(std::filesystem::path(lib_dir) / ".." / "version.py");
  std::string line;
  static const std::regex kVersionLine(R"re(^__version__\s*=\s*['"]([^'"]{1,64})['"])re");
  for (int i = 0; i < 64 && std::getline(in, line); ++i) {
    std::smatch m;
    if (std::regex_search(line, m, kVersionLine)) return m[1].str();
  }
  return "";
}

/*! Empty when the provider was built against the torch now loaded (same libc10 file, or the
 *  same release read from the loaded torch's version.py); otherwise why it must not be used.
 *  A provider built against another torch could read c10's statistics at the wrong offsets, so
 *  it is refused and snapshots fall back to the driver's figures, saying why. */
std::string MismatchWithLoadedTorch(void* lib, void* c10) {
  auto built_version_fn =
      reinterpret_cast<abi::BuiltStringFn>(dlsym(lib, abi::kBuiltTorchVersionSymbol));
  auto built_dir_fn = reinterpret_cast<abi::BuiltStringFn>(dlsym(lib, abi::kBuiltTorchLibDirSymbol));
  if (built_version_fn == nullptr || built_dir_fn == nullptr) {
    return "it does not say which torch it was built against";
  }
  const std::string built_version = built_version_fn();
  const std::string loaded_dir = LoadedLibc10Dir(c10);
  const std::string loaded_version = loaded_dir.empty() ? "" : TorchVersionNear(loaded_dir);
  std::error_code ec;
  const bool same_libc10 =
      !loaded_dir.empty() && std::filesystem::weakly_canonical(built_dir_fn(), ec).string() == loaded_dir && !ec;
  // The very libc10 it was built against: trusted unless its version.py names another release.
  if (same_libc10 && (loaded_version.empty() || ReleaseOf(loaded_version) == ReleaseOf(built_version))) return "";
  if (loaded_version.empty()) {
    return "it was built against torch " + built_version + " and the loaded torch's version "
           "cannot be read (libc10 in '" + loaded_dir + "')";
  }
  if (ReleaseOf(loaded_version) != ReleaseOf(built_version)) {
    return "it was built against torch " + built_version + " but torch " + loaded_version +
           " is loaded";
  }
  return "";
}

/*! The provider, or null with \p why saying why; \p torch_loaded (when given) says whether torch
 *  is in the process, i.e. whether the figures are zero (no torch) or merely unknown to us. */
const Provider* Get(std::string* why, bool* torch_loaded = nullptr) {
  if (torch_loaded != nullptr) *torch_loaded = true;
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
    if (torch_loaded != nullptr) *torch_loaded = false;
    *why = "torch is not imported in this process";
    return nullptr;
  }
  const std::string path = DefaultProviderPath();
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    dlclose(c10);  // RTLD_NOLOAD still took a reference
    const char* err = dlerror();
    g_load_error = "vllm_mem was built without the torch provider, or it cannot be loaded (" +
                   path + ": " + (err ? err : "unknown") + ")";
    *why = g_load_error;
    return nullptr;
  }
  auto version = reinterpret_cast<abi::AbiVersionFn>(dlsym(lib, abi::kAbiVersionSymbol));
  if (!version || version() != abi::kAbiVersion) {
    dlclose(c10);
    g_load_error = "the torch provider at " + path + " has a different ABI; rebuild vllm_mem";
    *why = g_load_error;
    return nullptr;
  }
  const std::string mismatch = MismatchWithLoadedTorch(lib, c10);
  dlclose(c10);
  if (!mismatch.empty()) {
    // The library stays mapped (unloading a C++ library is not safe); its functions are unused.
    g_load_error = "torch allocator statistics disabled: the provider " + path + " was refused (" +
                   mismatch + "); snapshots read torch.cuda's statistics instead and the peak "
                   "sampler cannot run. Rebuild vllm_mem against this torch: pip install "
                   "--no-build-isolation --force-reinstall vllm_mem";
    *why = g_load_error;
    return nullptr;
  }
  auto* provider = new Provider();  // leaked on purpose: the sampler may use it until exit
  provider->stats = reinterpret_cast<abi::StatsFn>(dlsym(lib, abi::kStatsSymbol));
  provider->reset_peak = reinterpret_cast<abi::ResetPeakFn>(dlsym(lib, abi::kResetPeakSymbol));
  provider->empty_cache = reinterpret_cast<abi::EmptyCacheFn>(dlsym(lib, abi::kEmptyCacheSymbol));
  if (!provider->stats || !provider->reset_peak || !provider->empty_cache) {
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
  bool torch_loaded = true;
  const Provider* p = Get(&why, &torch_loaded);
  if (p == nullptr) {
    // Torch in the process without a usable provider: its figures exist but we cannot read
    // them, which is not the same as "no torch, so zero" (Python then asks torch.cuda).
    out.status = torch_loaded ? AllocatorStatus::kNoProvider : AllocatorStatus::kNoTorch;
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

std::string ProviderRefusal() {
  std::lock_guard<std::mutex> lock(g_load_mutex);
  return g_load_error;
}

}  // namespace vllm_mem::torch_allocator
