/*!
 * \file vllm_mem/memory/device_reader.h
 * \brief The abstract device the memory core reads: free/total memory, the "integrated" flag,
 *        PyTorch's caching-allocator statistics, empty-cache / reset-peak and host memory.
 *        The real CUDA device (driver + torch provider) and the simulated device used by the
 *        CPU tests both implement it, so snapshots, profiling and the sampler run the same code
 *        whichever device is underneath.
 */
#ifndef VLLM_MEM_MEMORY_DEVICE_READER_H_
#define VLLM_MEM_MEMORY_DEVICE_READER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vllm_mem {

/*! \brief cudaMemGetInfo's pair: device-wide free bytes and the bytes the context can see. */
struct DeviceMemInfo {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};

/*! \brief MemTotal and MemAvailable of the host, in bytes (what psutil reports on Linux). */
struct HostMemory {
  int64_t total_bytes = 0;
  int64_t available_bytes = 0;
};

/*! \brief Why allocator statistics are or are not available. vLLM silently uses 0 when the
 *  allocator is not initialised; we keep 0 in the figures (the drop-in needs them) but say why. */
enum class AllocatorStatus : int {
  kAvailable = 0,        //!< figures are real
  kNoTorch = 1,          //!< torch is not imported in this process (or no provider was built)
  kNoCudaAllocator = 2,  //!< torch has no CUDA allocator (CPU wheel)
  kNotInitialized = 3,   //!< CUDA allocator exists but torch has not initialised CUDA yet
  kNoStats = 4,          //!< an allocator without statistics (pluggable allocator)
  kError = 5,            //!< the provider raised; see AllocatorStats::detail
  /*! torch is imported but vllm_mem has no usable provider (built without one, or refused: built
   *  against another torch). The figures are unknown, not zero: Python reads torch.cuda's own
   *  statistics instead (mem_utils.py), or says it could not. */
  kNoProvider = 6,
};

/*! \brief Short stable name of a status ("available", "no_torch", ...), for Python and JSON. */
const char* AllocatorStatusName(AllocatorStatus status);
/*! \brief The status named \p name (AllocatorStatusName's inverse); InvalidArgument if none. */
AllocatorStatus ParseAllocatorStatus(const std::string& name);

/*! \brief The aggregate ("all") figures of PyTorch's caching allocator that the core uses. The
 *  full key/value set (torch.cuda.memory_stats naming) is read through DeviceReader::
 *  AllocatorStatsDetailed by those who want it. */
struct AllocatorStats {
  AllocatorStatus status = AllocatorStatus::kNoTorch;
  std::string detail;                  //!< human-readable reason when not available
  int64_t allocated_bytes = 0;         //!< allocated_bytes.all.current
  int64_t allocated_peak_bytes = 0;    //!< allocated_bytes.all.peak
  int64_t reserved_bytes = 0;          //!< reserved_bytes.all.current
  int64_t reserved_peak_bytes = 0;     //!< reserved_bytes.all.peak
  bool available() const { return status == AllocatorStatus::kAvailable; }
};

/*! \brief One device backend. Every method may block (driver calls), so bindings release the GIL
 *  around them; every method is safe to call from the sampler thread concurrently with the
 *  caller's thread. Device indices are CUDA ordinals as CUDA_VISIBLE_DEVICES presents them. */
class DeviceReader {
 public:
  virtual ~DeviceReader() = default;

  /*! \brief A short name for messages ("cuda", "simulated"). */
  virtual std::string Name() const = 0;
  /*! \brief Number of visible devices; 0 when there is no driver or no GPU. */
  virtual int DeviceCount() = 0;
  /*! \brief The device current on the calling thread (0 when none is current). */
  virtual int CurrentDevice() = 0;
  /*! \brief Free/total bytes on \p device (cudaMemGetInfo in the primary context). */
  virtual DeviceMemInfo MemInfo(int device) = 0;
  /*! \brief The device attribute "integrated": CPU and GPU share physical memory (UMA). */
  virtual bool IsIntegrated(int device) = 0;
  /*! \brief Max opt-in shared memory per block, as vLLM's custom op reads it. */
  virtual int64_t MaxSharedMemoryPerBlock(int device) = 0;
  /*! \brief PyTorch caching-allocator figures for \p device, or a status saying why not. */
  virtual AllocatorStats TorchStats(int device) = 0;
  /*! \brief All aggregate allocator statistics under torch.cuda.memory_stats() key names
   *  ("allocated_bytes.all.current", ...), sorted by key; empty when unavailable. The default
   *  gives the four keys TorchStats carries; the real device gives torch's full set. */
  virtual std::vector<std::pair<std::string, int64_t>> TorchStatsAll(int device);
  /*! \brief torch.accelerator.empty_cache(); a no-op where the allocator is unavailable. */
  virtual void EmptyCache() = 0;
  /*! \brief torch.accelerator.reset_peak_memory_stats(device); a no-op where unavailable. */
  virtual void ResetPeak(int device) = 0;
  /*! \brief Waits for the device's outstanding work (torch.accelerator.synchronize). */
  virtual void Synchronize(int device) = 0;
  /*! \brief Host memory: /proc/meminfo on real machines. */
  virtual HostMemory HostMemoryInfo() = 0;

  /*! \brief Throws InvalidArgument unless 0 <= device < DeviceCount(); a device that cannot
   *  be read at all (no driver) may throw DeviceError instead. */
  virtual void CheckDevice(int device);
};

}  // namespace vllm_mem

#endif  // VLLM_MEM_MEMORY_DEVICE_READER_H_
