/*!
 * \file tests/cpp/test_memory_sampler.cc
 * \brief The sampler thread: argument checks, a transient non-torch spike between start and
 *        stop is caught, stop always joins (also from the destructor and after a read fails).
 *        No timing assertions: only "at least one sample while the spike was up", which the
 *        test waits for by polling the sample count, never by sleeping a fixed time.
 */
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "vllm_mem/base/error.h"
#include "vllm_mem/memory/memory_sampler.h"
#include "vllm_mem/base/units.h"
#include "fake_device_reader.h"

namespace vllm_mem {
namespace {

using testing::FakeReader;

void WaitForSamples(const MemorySampler& s, int64_t at_least) {
  while (s.Peaks().num_samples < at_least && s.running()) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

TEST(MemorySampler, RejectsBadIntervals) {
  auto r = std::make_shared<FakeReader>();
  EXPECT_THROW(MemorySampler(r, 0, 0.0), InvalidArgument);
  EXPECT_THROW(MemorySampler(r, 0, -1.0), InvalidArgument);
  EXPECT_THROW(MemorySampler(r, 0, 1e-9), InvalidArgument);
  EXPECT_THROW(MemorySampler(r, 0, std::nan("")), InvalidArgument);
  EXPECT_THROW(MemorySampler(r, 0, 1e6), InvalidArgument);
  EXPECT_THROW(MemorySampler(r, 0, 1e-3, 0), InvalidArgument);
  EXPECT_THROW(MemorySampler(nullptr, 0, 1e-3), InvalidArgument);
}

TEST(MemorySampler, UnknownDeviceFailsAtStart) {
  auto r = std::make_shared<FakeReader>();
  MemorySampler s(r, 5, 1e-3);
  EXPECT_THROW(s.Start(), InvalidArgument);
  EXPECT_FALSE(s.running());
}

TEST(MemorySampler, CatchesTransientNonTorchSpike) {
  auto r = std::make_shared<FakeReader>();
  r->total_bytes = 80 * kGiB;
  r->Set(79 * kGiB, 0);  // 1 GiB non-torch
  MemorySampler s(r, 0, 1e-4);
  s.Start();
  WaitForSamples(s, 1);
  r->Set(76 * kGiB, 0);  // a 3 GiB workspace appears...
  const int64_t seen = s.Peaks().num_samples;
  WaitForSamples(s, seen + 2);
  r->Set(79 * kGiB, 0);  // ...and is freed before the block ends
  s.Stop();
  EXPECT_FALSE(s.running());
  EXPECT_TRUE(s.error().empty());
  const SamplerPeaks p = s.Peaks();
  EXPECT_EQ(p.peak_non_torch_memory, 4 * kGiB);
  EXPECT_EQ(p.peak_cuda_memory, 4 * kGiB);
  const MemoryTimeline t = s.Timeline();
  ASSERT_EQ(static_cast<int64_t>(t.time_s.size()), p.num_samples);
  EXPECT_EQ(t.non_torch_memory.back(), 1 * kGiB);  // the final sample is taken at stop
  for (size_t i = 1; i < t.time_s.size(); ++i) EXPECT_GE(t.time_s[i], t.time_s[i - 1]);
  for (size_t i = 0; i < t.time_s.size(); ++i) {
    EXPECT_EQ(t.cuda_memory[i], 80 * kGiB - t.free_memory[i]);
    EXPECT_EQ(t.non_torch_memory[i], t.cuda_memory[i] - t.torch_reserved[i]);
  }
}

// Regression (issue 19): a segment torch maps between the sampler's torch read and its device
// read showed as a segment-sized non-torch spike in peak_non_torch_memory.
TEST(MemorySampler, SegmentMappedBetweenReadsIsNoSpike) {
  class SegmentBetweenReads : public FakeReader {
   public:
    DeviceMemInfo MemInfo(int device) override {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (armed) {
          armed = false;
          free_bytes -= 3 * kGiB;
          torch.reserved_bytes += 3 * kGiB;
          torch.allocated_bytes += 3 * kGiB;
        }
      }
      return FakeReader::MemInfo(device);
    }
    bool armed = false;
  };
  auto r = std::make_shared<SegmentBetweenReads>();
  r->total_bytes = 80 * kGiB;
  r->Set(70 * kGiB, 9 * kGiB);  // 1 GiB non-torch
  MemorySampler s(r, 0, 1e-4);
  s.Start();
  WaitForSamples(s, 1);
  {
    std::lock_guard<std::mutex> lock(r->mutex);
    r->armed = true;
  }
  while (true) {  // until the sampler's device read has consumed the injection
    {
      std::lock_guard<std::mutex> lock(r->mutex);
      if (!r->armed) break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  const int64_t seen = s.Peaks().num_samples;
  WaitForSamples(s, seen + 2);
  s.Stop();
  EXPECT_TRUE(s.error().empty());
  EXPECT_EQ(s.Peaks().peak_non_torch_memory, 1 * kGiB);
  EXPECT_EQ(s.Peaks().peak_torch_reserved, 12 * kGiB);
  for (int64_t v : s.Timeline().non_torch_memory) EXPECT_EQ(v, 1 * kGiB);
}

// Regression (issue 19): two threads stopping one sampler both joined its thread; the loser's
// std::system_error escaped the noexcept Stop() and called std::terminate.
TEST(MemorySampler, ConcurrentStopsJoinOnce) {
  // Before the fix the stoppers could also deadlock in two concurrent joins: the watchdog turns
  // that hang into a failure (abort) instead of a CTest timeout.
  std::atomic<bool> done{false};
  std::thread watchdog([&done] {
    for (int i = 0; i < 600 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!done.load()) {
      std::fprintf(stderr, "MemorySampler.ConcurrentStopsJoinOnce: stoppers hung in join\n");
      std::abort();
    }
  });
  auto r = std::make_shared<FakeReader>();
  for (int round = 0; round < 200; ++round) {
    MemorySampler s(r, 0, 1e-4);
    s.Start();
    std::atomic<int> ready{0};
    std::vector<std::thread> stoppers;
    for (int i = 0; i < 4; ++i) {
      stoppers.emplace_back([&] {
        ready.fetch_add(1);
        while (ready.load() < 4) std::this_thread::yield();
        s.Stop();
      });
    }
    for (auto& t : stoppers) t.join();
    EXPECT_FALSE(s.running());
  }
  done.store(true);
  watchdog.join();
}

TEST(MemorySampler, StopIsIdempotentAndStartIsOnce) {
  auto r = std::make_shared<FakeReader>();
  MemorySampler s(r, 0, 1e-3);
  s.Stop();  // before start: harmless
  s.Start();
  EXPECT_THROW(s.Start(), InvalidArgument);
  s.Stop();
  s.Stop();
  EXPECT_GE(s.Peaks().num_samples, 1);
}

TEST(MemorySampler, DestructorJoins) {
  auto r = std::make_shared<FakeReader>();
  {
    MemorySampler s(r, 0, 1e-4);
    s.Start();
    WaitForSamples(s, 3);
  }  // must not hang or std::terminate
  const int calls = r->mem_info_calls;
  EXPECT_GE(calls, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(r->mem_info_calls, calls);  // no thread is left reading
}

TEST(MemorySampler, ReadFailureStopsWithError) {
  auto r = std::make_shared<FakeReader>();
  MemorySampler s(r, 0, 1e-4);
  s.Start();
  WaitForSamples(s, 1);
  {
    std::lock_guard<std::mutex> lock(r->mutex);
    r->fail_reads = true;
  }
  while (s.running()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  s.Stop();
  EXPECT_NE(s.error().find("fake driver gone"), std::string::npos);
}

TEST(MemorySampler, CapacityKeepsPeaksBeyondTimeline) {
  auto r = std::make_shared<FakeReader>();
  r->total_bytes = 100;
  r->Set(90, 0);
  MemorySampler s(r, 0, 1e-4, 2);
  s.Start();
  WaitForSamples(s, 3);
  r->Set(10, 0);  // the peak arrives after the timeline is full
  const int64_t seen = s.Peaks().num_samples;
  WaitForSamples(s, seen + 1);
  s.Stop();
  EXPECT_EQ(s.Timeline().time_s.size(), 2u);
  EXPECT_GT(s.dropped_samples(), 0);
  EXPECT_EQ(s.Peaks().peak_cuda_memory, 90);
}

}  // namespace
}  // namespace vllm_mem
