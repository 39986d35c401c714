/*!
 * \file core/memory/memory_sampler.cc
 * \brief The peak sampler's thread: absolute deadlines so the rate does not drift, a condition
 *        variable so Stop() wakes it at once, and one last sample at stop so a short block still
 *        yields a timeline.
 */
#include "vllm_mem/memory/memory_sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "vllm_mem/base/error.h"
#include "vllm_mem/memory/memory_snapshot.h"

namespace vllm_mem {

MemorySampler::MemorySampler(std::shared_ptr<DeviceReader> reader, int device, double interval_s,
                             int64_t max_samples)
    : reader_(std::move(reader)), device_(device), interval_s_(interval_s),
      max_samples_(max_samples) {
  if (!reader_) throw InvalidArgument("reader", "no device reader");
  if (!std::isfinite(interval_s) || interval_s <= 0.0) {
    throw InvalidArgument("sample_interval_s", "must be a positive number of seconds, got " +
                                                   std::to_string(interval_s));
  }
  if (interval_s < kMinIntervalS) {
    throw InvalidArgument("sample_interval_s",
                          "must be at least " + std::to_string(kMinIntervalS) +
                              " s (10 microseconds); got " + std::to_string(interval_s));
  }
  if (interval_s > kMaxIntervalS) {
    throw InvalidArgument("sample_interval_s", "must be at most " +
                                                   std::to_string(kMaxIntervalS) + " s; got " +
                                                   std::to_string(interval_s));
  }
  if (max_samples <= 0) {
    throw InvalidArgument("max_samples", "must be positive, got " + std::to_string(max_samples));
  }
}

MemorySampler::~MemorySampler() { Stop(); }

void MemorySampler::Start() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (started_) throw InvalidArgument("sampler", "already started (a sampler runs once)");
  }
  // Validate on the caller's thread so a bad device is an exception here, not a dead thread.
  reader_->CheckDevice(device_);
  const bool integrated = reader_->IsIntegrated(device_);
  std::lock_guard<std::mutex> lock(mutex_);
  integrated_ = integrated;
  started_ = true;
  running_ = true;
  timeline_.start_timestamp = WallClockSeconds();
  const size_t reserve = static_cast<size_t>(std::min<int64_t>(max_samples_, 1 << 16));
  timeline_.time_s.reserve(reserve);
  timeline_.free_memory.reserve(reserve);
  timeline_.cuda_memory.reserve(reserve);
  timeline_.torch_allocated.reserve(reserve);
  timeline_.torch_reserved.reserve(reserve);
  timeline_.non_torch_memory.reserve(reserve);
  std::lock_guard<std::mutex> join_lock(join_mutex_);
  thread_ = std::thread([this] { Run(); });
}

void MemorySampler::Stop() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  // One stopper joins; a concurrent one blocks here until that join is done, then sees nothing
  // left to join.
  std::lock_guard<std::mutex> join_lock(join_mutex_);
  if (thread_.joinable()) thread_.join();
}

bool MemorySampler::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

std::string MemorySampler::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

int64_t MemorySampler::dropped_samples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

SamplerPeaks MemorySampler::Peaks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peaks_;
}

MemoryTimeline MemorySampler::Timeline() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return timeline_;
}

void MemorySampler::TakeSample(double t_s) {
  // The device read happens outside the lock: it may block in the driver.
  const DeviceSample s = ReadDeviceSample(*reader_, device_, integrated_);
  const int64_t cuda = CudaMemoryBytes(s.free_memory, s.total_memory);
  const int64_t non_torch = NonTorchMemoryBytes(cuda, s.torch.reserved_bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (peaks_.num_samples == 0) {
    peaks_.peak_cuda_memory = cuda;
    peaks_.peak_non_torch_memory = non_torch;
    peaks_.peak_torch_allocated = s.torch.allocated_bytes;
    peaks_.peak_torch_reserved = s.torch.reserved_bytes;
  } else {
    peaks_.peak_cuda_memory = std::max(peaks_.peak_cuda_memory, cuda);
    peaks_.peak_non_torch_memory = std::max(peaks_.peak_non_torch_memory, non_torch);
    peaks_.peak_torch_allocated = std::max(peaks_.peak_torch_allocated, s.torch.allocated_bytes);
    peaks_.peak_torch_reserved = std::max(peaks_.peak_torch_reserved, s.torch.reserved_bytes);
  }
  ++peaks_.num_samples;
  if (static_cast<int64_t>(timeline_.time_s.size()) >= max_samples_) {
    ++dropped_;
    return;
  }
  timeline_.time_s.push_back(t_s);
  timeline_.free_memory.push_back(s.free_memory);
  timeline_.cuda_memory.push_back(cuda);
  timeline_.torch_allocated.push_back(s.torch.allocated_bytes);
  timeline_.torch_reserved.push_back(s.torch.reserved_bytes);
  timeline_.non_torch_memory.push_back(non_torch);
}

void MemorySampler::Run() {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto interval = std::chrono::duration_cast<clock::duration>(
      std::chrono::duration<double>(interval_s_));
  auto deadline = start;
  try {
    while (true) {
      TakeSample(std::chrono::duration<double>(clock::now() - start).count());
      deadline += interval;
      const auto now = clock::now();
      // When a read took longer than an interval, skip the missed slots rather than bursting.
      if (deadline < now) deadline = now;
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_until(lock, deadline, [this] { return stop_requested_; })) break;
    }
    // The last sample: the state when the profiled block ended.
    TakeSample(std::chrono::duration<double>(clock::now() - start).count());
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = e.what();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  running_ = false;
}

}  // namespace vllm_mem
