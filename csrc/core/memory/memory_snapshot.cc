/*!
 * \file core/memory/memory_snapshot.cc
 * \brief Measurement and arithmetic of memory snapshots (vLLM's MemorySnapshot).
 */
#include "vllm_mem/memory/memory_snapshot.h"

#include <chrono>
#include <charconv>
#include <utility>

#include "core/base/checked_math.h"
#include "vllm_mem/base/error.h"

namespace vllm_mem {

namespace {

/*! Reads of one sample before giving up on a settled allocator. Each retry costs two allocator
 *  reads and one driver read (a few microseconds); a busy allocator settles within one or two. */
constexpr int kMaxConsistentReadAttempts = 4;

}  // namespace

DeviceSample ReadDeviceSample(DeviceReader& reader, int device, bool integrated) {
  // The driver's free figure and torch's reserved figure come from two calls. A segment torch
  // maps between them is in free memory but not yet in reserved (or the reverse), and then reads
  // as a whole segment of non-torch memory: a false spike in the sampler's peak. So torch is read
  // before AND after the device, and the device read only counts when both torch reads agree on
  // what torch reserves; otherwise it is retried.
  DeviceSample out;
  AllocatorStats before = reader.TorchStats(device);
  for (int attempt = 1;; ++attempt) {
    const DeviceMemInfo info = reader.MemInfo(device);
    out.cuda_free_memory = info.free_bytes;
    out.total_memory = info.total_bytes;
    out.free_memory = info.free_bytes;
    if (integrated) {
      // cudaMemGetInfo under-reports on UMA: it counts reclaimable page cache as used. vLLM (and
      // NVIDIA's Tegra app note) use MemAvailable instead; total stays the CUDA figure.
      out.free_memory = reader.HostMemoryInfo().available_bytes;
    }
    if (!before.available()) {
      out.torch = std::move(before);  // nothing of torch's to be inconsistent with
      return out;
    }
    AllocatorStats after = reader.TorchStats(device);
    if (after.available() && after.reserved_bytes == before.reserved_bytes) {
      out.torch = std::move(after);
      return out;
    }
    if (attempt >= kMaxConsistentReadAttempts || !after.available()) {
      // The allocator kept changing: keep the torch read that reserves more, so the non-torch
      // figure errs low for this one sample rather than inventing a spike (a segment mapped
      // during the device read is in the device figure and in this one).
      out.torch = after.available() && after.reserved_bytes >= before.reserved_bytes ? std::move(after)
                                                                                      : std::move(before);
      return out;
    }
    before = std::move(after);
  }
}

int64_t CudaMemoryBytes(int64_t free_bytes, int64_t total_bytes) {
  return CheckedSub(total_bytes, free_bytes, "cuda_memory");
}

int64_t NonTorchMemoryBytes(int64_t cuda_memory_bytes, int64_t torch_reserved_bytes) {
  return CheckedSub(cuda_memory_bytes, torch_reserved_bytes, "non_torch_memory");
}

double WallClockSeconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

MemorySnapshotRecord MeasureSnapshot(DeviceReader& reader, int device) {
  reader.CheckDevice(device);
  MemorySnapshotRecord out;
  out.device = device;
  out.integrated = reader.IsIntegrated(device);
  const DeviceSample sample = ReadDeviceSample(reader, device, out.integrated);
  out.torch_peak = sample.torch.allocated_peak_bytes;
  out.torch_allocated = sample.torch.allocated_bytes;
  out.torch_memory = sample.torch.reserved_bytes;
  out.torch_status = sample.torch.status;
  out.free_memory = sample.free_memory;
  out.cuda_free_memory = sample.cuda_free_memory;
  out.total_memory = sample.total_memory;
  out.cuda_memory = CudaMemoryBytes(out.free_memory, out.total_memory);
  out.non_torch_memory = NonTorchMemoryBytes(out.cuda_memory, out.torch_memory);
  out.timestamp = WallClockSeconds();
  return out;
}

std::string DifferentDevicesMessage(int a_device, int b_device) {
  return "The two snapshots should be from the same device! Found: cuda:" +
         std::to_string(a_device) + " vs. cuda:" + std::to_string(b_device);
}

MemorySnapshotRecord SubtractSnapshots(const MemorySnapshotRecord& a,
                                       const MemorySnapshotRecord& b) {
  if (a.device != b.device) {
    throw InvalidArgument("device", DifferentDevicesMessage(a.device, b.device));
  }
  MemorySnapshotRecord out;
  out.device = a.device;
  out.torch_peak = CheckedSub(a.torch_peak, b.torch_peak, "torch_peak");
  out.free_memory = CheckedSub(a.free_memory, b.free_memory, "free_memory");
  out.total_memory = CheckedSub(a.total_memory, b.total_memory, "total_memory");
  out.cuda_memory = CheckedSub(a.cuda_memory, b.cuda_memory, "cuda_memory");
  out.torch_memory = CheckedSub(a.torch_memory, b.torch_memory, "torch_memory");
  out.non_torch_memory = CheckedSub(a.non_torch_memory, b.non_torch_memory, "non_torch_memory");
  out.timestamp = a.timestamp - b.timestamp;
  out.torch_allocated = CheckedSub(a.torch_allocated, b.torch_allocated, "torch_allocated");
  out.integrated = a.integrated;
  out.cuda_free_memory = CheckedSub(a.cuda_free_memory, b.cuda_free_memory, "cuda_free_memory");
  // A difference is only as trustworthy as the worse of its two operands.
  out.torch_status = a.torch_status != AllocatorStatus::kAvailable ? a.torch_status : b.torch_status;
  return out;
}

std::optional<int> ParseCudaDevice(const std::string& text) {
  const std::string prefix = "cuda";
  if (text.compare(0, prefix.size(), prefix) != 0) {
    throw InvalidArgument("device", "expected a CUDA device ('cuda' or 'cuda:N'), got " + EchoValue(text));
  }
  if (text.size() == prefix.size()) return std::nullopt;
  if (text[prefix.size()] != ':' || text.size() == prefix.size() + 1) {
    throw InvalidArgument("device", "expected a CUDA device ('cuda' or 'cuda:N'), got " + EchoValue(text));
  }
  int index = -1;
  const char* first = text.data() + prefix.size() + 1;
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, index);
  if (ec != std::errc() || ptr != last || index < 0) {
    throw InvalidArgument("device", "expected a CUDA device ('cuda' or 'cuda:N'), got " + EchoValue(text));
  }
  return index;
}

}  // namespace vllm_mem
