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
  for (int code = 0; code <= static_cast<int>(AllocatorStatus::kError); ++code) {
    const auto status = static_cast<AllocatorStatus>(code);
    EXPECT_EQ(ParseAllocatorStatus(AllocatorStatusName(status)), status);
  }
  EXPECT_THROW(ParseAllocatorStatus("fine"), InvalidArgument);
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
