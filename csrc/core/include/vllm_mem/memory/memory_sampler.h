/*!
 * \file vllm_mem/memory/memory_sampler.h
 * \brief A background thread that reads the device at a fixed interval into a timeline, so
 *        that memory allocated and freed between two snapshots (cuBLAS/NCCL workspaces,
 *        attention-backend buffers) is seen. vLLM reads non-torch memory at two instants only.
 */
#ifndef VLLM_MEM_MEMORY_MEMORY_SAMPLER_H_
#define VLLM_MEM_MEMORY_MEMORY_SAMPLER_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "vllm_mem/memory/device_reader.h"

namespace vllm_mem {

/*! \brief Maxima over every sample taken, including those past the timeline's capacity. */
struct SamplerPeaks {
  int64_t num_samples = 0;             //!< samples taken (>= samples kept in the timeline)
  int64_t peak_cuda_memory = 0;        //!< max(total - free)
  int64_t peak_non_torch_memory = 0;   //!< max(total - free - torch reserved)
  int64_t peak_torch_allocated = 0;    //!< max(allocated_bytes.all.current)
  int64_t peak_torch_reserved = 0;     //!< max(reserved_bytes.all.current)
};

/*! \brief The samples as columns (one entry per sample), ready for NumPy. */
struct MemoryTimeline {
  double start_timestamp = 0.0;         //!< time.time() when sampling started
  std::vector<double> time_s;           //!< seconds since start_timestamp (monotonic clock)
  std::vector<int64_t> free_memory;
  std::vector<int64_t> cuda_memory;
  std::vector<int64_t> torch_allocated;
  std::vector<int64_t> torch_reserved;
  std::vector<int64_t> non_torch_memory;
};

/*! \brief Samples one device on its own thread until Stop(). The destructor always stops and
 *  joins, so an exception in the profiled code never leaves the thread running. */
class MemorySampler {
 public:
  /*! Intervals below this are rejected: the thread would only spin, and a sample on a real
   *  device costs about a microsecond, so faster sampling measures itself. */
  static constexpr double kMinIntervalS = 1e-5;
  /*! Intervals above this are surely a unit mistake (ms given as s). */
  static constexpr double kMaxIntervalS = 60.0;
  /*! Default timeline capacity: ~48 bytes a sample, so 2^21 samples is ~100 MiB at most
   *  (17 minutes at 2 kHz). Peaks keep updating past it. */
  static constexpr int64_t kDefaultMaxSamples = int64_t{1} << 21;

  /*! \brief Validates the arguments (InvalidArgument) but starts nothing. */
  MemorySampler(std::shared_ptr<DeviceReader> reader, int device, double interval_s,
                int64_t max_samples = kDefaultMaxSamples);
  ~MemorySampler();
  MemorySampler(const MemorySampler&) = delete;
  MemorySampler& operator=(const MemorySampler&) = delete;

  /*! \brief Checks the device, takes no sample itself, starts the thread. Once only. */
  void Start();
  /*! \brief Stops and joins; the thread takes one last sample first. Idempotent, no-throw, and
   *  safe to call from several threads at once (one joins, the others wait for it). */
  void Stop() noexcept;

  bool running() const;
  int device() const { return device_; }
  double interval_s() const { return interval_s_; }
  /*! \brief Empty unless the thread stopped early because a device read failed. */
  std::string error() const;
  /*! \brief Samples taken but not stored (timeline full). */
  int64_t dropped_samples() const;
  SamplerPeaks Peaks() const;
  /*! \brief A copy of the timeline (consistent even while running). */
  MemoryTimeline Timeline() const;

 private:
  void Run();
  void TakeSample(double t_s);

  std::shared_ptr<DeviceReader> reader_;
  const int device_;
  const double interval_s_;
  const int64_t max_samples_;
  bool integrated_ = false;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  bool started_ = false;
  bool stop_requested_ = false;
  bool running_ = false;
  std::string error_;
  int64_t dropped_ = 0;
  SamplerPeaks peaks_;
  MemoryTimeline timeline_;
  // Guards thread_ (its assignment and its join): std::thread::join from two threads at once is
  // undefined, and the loser's std::system_error would std::terminate inside noexcept Stop().
  std::mutex join_mutex_;
  std::thread thread_;
};

}  // namespace vllm_mem

#endif  // VLLM_MEM_MEMORY_MEMORY_SAMPLER_H_
