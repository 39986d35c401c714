/*!
 * \file vllm_mem/memory/memory_snapshot.h
 * \brief vLLM's MemorySnapshot as a plain record, its measurement through a DeviceReader and its
 *        arithmetic: cuda_memory = total - free, non_torch_memory = cuda_memory - torch reserved,
 *        field-wise difference of two snapshots of one device.
 */
#ifndef VLLM_MEM_MEMORY_MEMORY_SNAPSHOT_H_
#define VLLM_MEM_MEMORY_MEMORY_SNAPSHOT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "vllm_mem/memory/device_reader.h"

namespace vllm_mem {

/*! \brief One reading of the device, all in bytes (timestamp in seconds since the epoch, as
 *  time.time()). Field names are vLLM's; the last four are ours. */
struct MemorySnapshotRecord {
  int device = 0;                  //!< CUDA ordinal
  int64_t torch_peak = 0;          //!< allocated_bytes.all.peak
  int64_t free_memory = 0;         //!< cudaMemGetInfo free, or MemAvailable on integrated GPUs
  int64_t total_memory = 0;        //!< cudaMemGetInfo total
  int64_t cuda_memory = 0;         //!< total - free: everything in use, all processes
  int64_t torch_memory = 0;        //!< reserved_bytes.all.current
  int64_t non_torch_memory = 0;    //!< cuda_memory - torch_memory
  double timestamp = 0.0;          //!< seconds since the epoch
  int64_t torch_allocated = 0;     //!< allocated_bytes.all.current (later vLLM)
  bool integrated = false;         //!< the device shares host memory (UMA)
  int64_t cuda_free_memory = 0;    //!< the raw CUDA free figure, kept beside MemAvailable on UMA
  AllocatorStatus torch_status = AllocatorStatus::kNoTorch;  //!< why torch figures may be 0
};

/*! \brief The figures of one instant that both snapshots and the sampler read. Keeping one
 *  reader means the sampler's non-torch figure is the snapshot's, sample for sample. */
struct DeviceSample {
  int64_t free_memory = 0;       //!< MemAvailable on integrated devices, else CUDA free
  int64_t cuda_free_memory = 0;  //!< the CUDA free figure
  int64_t total_memory = 0;
  AllocatorStats torch;
};

/*! \brief Reads free/total (with vLLM's UMA override when \p integrated) and the torch stats,
 *  the device read bracketed by two torch reads that must agree on torch's reserved bytes (up to
 *  four tries), so a segment torch maps between the reads is never counted as non-torch. */
DeviceSample ReadDeviceSample(DeviceReader& reader, int device, bool integrated);

/*! \brief Bytes in use on the device: total - free. */
int64_t CudaMemoryBytes(int64_t free_bytes, int64_t total_bytes);
/*! \brief Bytes in use that torch's allocator did not reserve: cuda_memory - torch reserved. */
int64_t NonTorchMemoryBytes(int64_t cuda_memory_bytes, int64_t torch_reserved_bytes);

/*! \brief Seconds since the epoch as a double, as Python's time.time(). */
double WallClockSeconds();

/*! \brief MemorySnapshot.measure(): validates \p device, then fills every field. */
MemorySnapshotRecord MeasureSnapshot(DeviceReader& reader, int device);

/*! \brief MemorySnapshot.__sub__: field-wise a - b. InvalidArgument (field "device") with vLLM's
 *  message when the devices differ. */
MemorySnapshotRecord SubtractSnapshots(const MemorySnapshotRecord& a,
                                       const MemorySnapshotRecord& b);

/*! \brief vLLM's message for subtracting snapshots of two devices ("cuda:0 vs. cuda:1"). */
std::string DifferentDevicesMessage(int a_device, int b_device);

/*! \brief "cuda", "cuda:N" → the ordinal (nullopt for bare "cuda": the current device);
 *  InvalidArgument for anything else ("cpu", "cuda:x", "xpu:0", "cuda:-1"). */
std::optional<int> ParseCudaDevice(const std::string& text);

}  // namespace vllm_mem

#endif  // VLLM_MEM_MEMORY_MEMORY_SNAPSHOT_H_
