/*!
 * \file tests/cpp/test_memory_snapshot.cc
 * \brief MemorySnapshot arithmetic (cuda = total - free, non_torch = cuda - reserved), the UMA
 *        override, subtraction and device parsing, against a fake reader.
 */
#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/memory/memory_snapshot.h"
#include "fake_device_reader.h"

namespace vllm_mem {
namespace {

using testing::FakeReader;

TEST(MemorySnapshot, DerivesCudaAndNonTorchMemory) {
  FakeReader r;
  r.free_bytes = 60;
  r.total_bytes = 100;
  r.torch = {AllocatorStatus::kAvailable, "", 25, 31, 30, 40};
  const MemorySnapshotRecord s = MeasureSnapshot(r, 1);
  EXPECT_EQ(s.device, 1);
  EXPECT_EQ(s.free_memory, 60);
  EXPECT_EQ(s.total_memory, 100);
  EXPECT_EQ(s.cuda_memory, 40);
  EXPECT_EQ(s.torch_memory, 30);       // reserved, not allocated
  EXPECT_EQ(s.non_torch_memory, 10);
  EXPECT_EQ(s.torch_peak, 31);         // allocated peak, not reserved peak
  EXPECT_EQ(s.torch_allocated, 25);
  EXPECT_EQ(s.torch_status, AllocatorStatus::kAvailable);
  EXPECT_GT(s.timestamp, 1.0e9);
}

TEST(MemorySnapshot, IntegratedUsesHostAvailableAndKeepsCudaFigure) {
  FakeReader r;
  r.integrated = true;
  r.free_bytes = 40;
  r.total_bytes = 120;
  r.host = {200, 100};
  const MemorySnapshotRecord s = MeasureSnapshot(r, 0);
  EXPECT_TRUE(s.integrated);
  EXPECT_EQ(s.free_memory, 100);
  EXPECT_EQ(s.total_memory, 120);
  EXPECT_EQ(s.cuda_free_memory, 40);
  EXPECT_EQ(s.cuda_memory, 20);
}

TEST(MemorySnapshot, UnavailableTorchIsFlaggedNotInvented) {
  FakeReader r;
  r.torch = {AllocatorStatus::kNotInitialized, "not yet", 0, 0, 0, 0};
  const MemorySnapshotRecord s = MeasureSnapshot(r, 0);
  EXPECT_EQ(s.torch_status, AllocatorStatus::kNotInitialized);
  EXPECT_STREQ(AllocatorStatusName(s.torch_status), "not_initialized");
  EXPECT_EQ(s.non_torch_memory, s.cuda_memory);
}

TEST(AllocatorStatus, NamesRoundTrip) {
  EXPECT_STREQ(AllocatorStatusName(AllocatorStatus::kNoProvider), "no_provider");
  for (int code = 0; code <= static_cast<int>(AllocatorStatus::kNoProvider); ++code) {
    const auto status = static_cast<AllocatorStatus>(code);
    EXPECT_EQ(ParseAllocatorStatus(AllocatorStatusName(status)), status);
  }
  EXPECT_THROW(ParseAllocatorStatus("fine"), InvalidArgument);
}

/*! A reader where torch maps a segment between a snapshot's torch read and its device read
 *  (the next \p segments_left MemInfo calls each add one segment of \p segment_bytes). */
class SegmentBetweenReads : public FakeReader {
 public:
  DeviceMemInfo MemInfo(int device) override {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (segments_left > 0) {
        --segments_left;
        free_bytes -= segment_bytes;
        torch.reserved_bytes += segment_bytes;
        torch.allocated_bytes += segment_bytes;
      }
    }
    return FakeReader::MemInfo(device);
  }
  int segments_left = 0;
  int64_t segment_bytes = 8;
};

// Regression (issue 19): torch read first, then the device: the new segment was in free memory
// but not in reserved, i.e. 8 bytes of invented non-torch memory.
TEST(MemorySnapshot, SegmentMappedBetweenReadsIsNotNonTorch) {
  SegmentBetweenReads r;
  r.free_bytes = 70;
  r.total_bytes = 100;
  r.torch = {AllocatorStatus::kAvailable, "", 20, 20, 20, 20};  // non-torch 10
  r.segments_left = 1;
  const MemorySnapshotRecord s = MeasureSnapshot(r, 0);
  EXPECT_EQ(s.free_memory, 62);
  EXPECT_EQ(s.torch_memory, 28);
  EXPECT_EQ(s.non_torch_memory, 10);
  EXPECT_EQ(r.mem_info_calls, 2);  // the inconsistent pair was read again
}

TEST(MemorySnapshot, AllocatorThatNeverSettlesErrsLowNotHigh) {
  SegmentBetweenReads r;
  r.free_bytes = 70;
  r.total_bytes = 100;
  r.torch = {AllocatorStatus::kAvailable, "", 20, 20, 20, 20};
  r.segments_left = 100;  // a segment before every device read
  const MemorySnapshotRecord s = MeasureSnapshot(r, 0);
  EXPECT_EQ(r.mem_info_calls, 4);  // bounded retries
  EXPECT_LE(s.non_torch_memory, 10);
  EXPECT_EQ(s.non_torch_memory, 10);  // the read after the device read matches it here
}

TEST(MemorySnapshot, UnavailableTorchIsReadOnce) {
  SegmentBetweenReads r;
  r.torch = {AllocatorStatus::kNoProvider, "no provider", 0, 0, 0, 0};
  r.segments_left = 1;
  const MemorySnapshotRecord s = MeasureSnapshot(r, 0);
  EXPECT_EQ(s.torch_status, AllocatorStatus::kNoProvider);
  EXPECT_EQ(r.mem_info_calls, 1);
}

TEST(MemorySnapshot, UnknownDeviceIsInvalidArgument) {
  FakeReader r;
  EXPECT_THROW(MeasureSnapshot(r, 2), InvalidArgument);
  EXPECT_THROW(MeasureSnapshot(r, -1), InvalidArgument);
}

TEST(MemorySnapshot, DriverFailureIsDeviceError) {
  FakeReader r;
  r.fail_reads = true;
  EXPECT_THROW(MeasureSnapshot(r, 0), DeviceError);
}

TEST(MemorySnapshot, SubtractIsFieldWise) {
  MemorySnapshotRecord a, b;
  a.torch_peak = 10; b.torch_peak = 4;
  a.free_memory = 5; b.free_memory = 9;
  a.non_torch_memory = 7; b.non_torch_memory = 2;
  a.timestamp = 3.5; b.timestamp = 1.25;
  const MemorySnapshotRecord d = SubtractSnapshots(a, b);
  EXPECT_EQ(d.torch_peak, 6);
  EXPECT_EQ(d.free_memory, -4);
  EXPECT_EQ(d.non_torch_memory, 5);
  EXPECT_DOUBLE_EQ(d.timestamp, 2.25);
}

TEST(MemorySnapshot, SubtractDifferentDevicesUsesVllmMessage) {
  MemorySnapshotRecord a, b;
  a.device = 0;
  b.device = 1;
  try {
    SubtractSnapshots(a, b);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "The two snapshots should be from the same device! Found: cuda:0 vs. cuda:1"),
              std::string::npos);
  }
}

TEST(MemorySnapshot, SubtractOverflowThrows) {
  MemorySnapshotRecord a, b;
  a.free_memory = INT64_MIN;
  b.free_memory = 1;
  EXPECT_THROW(SubtractSnapshots(a, b), InvalidArgument);
}

TEST(ParseCudaDevice, AcceptsCudaForms) {
  EXPECT_EQ(ParseCudaDevice("cuda"), std::nullopt);
  EXPECT_EQ(ParseCudaDevice("cuda:0"), 0);
  EXPECT_EQ(ParseCudaDevice("cuda:13"), 13);
}

TEST(ParseCudaDevice, RejectsOthers) {
  for (const char* bad : {"cpu", "xpu:0", "cuda:", "cuda:x", "cuda:-1", "cuda0", "cuda:1x", ""}) {
    EXPECT_THROW(ParseCudaDevice(bad), InvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace vllm_mem
