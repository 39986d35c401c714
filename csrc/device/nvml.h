/*!
 * \file device/nvml.h
 * \brief Per-process GPU memory from NVML (libnvidia-ml.so.1, dlopen'ed on first use): what
 *        nvidia-smi shows per PID. cudaMemGetInfo is device-wide; this says who holds what.
 */
#ifndef VLLM_MEM_DEVICE_NVML_H_
#define VLLM_MEM_DEVICE_NVML_H_

#include <cstdint>
#include <string>
#include <vector>

namespace vllm_mem::nvml {

struct ProcessMemory {
  uint32_t pid = 0;        //!< host PID (inside containers NVML reports host PIDs)
  int64_t used_bytes = -1; //!< -1 when NVML cannot tell (NVML_VALUE_NOT_AVAILABLE)
};

struct ProcessList {
  bool available = false;
  std::string detail;      //!< why not, when !available
  std::vector<ProcessMemory> processes;
};

/*! \brief A device's memory as NVML reports it: no CUDA context is involved. */
struct MemoryInfo {
  bool available = false;
  std::string detail;        //!< why not, when !available
  int64_t total_bytes = 0;   //!< NVML's total, which includes what the driver reserves
  int64_t reserved_bytes = 0;  //!< driver-reserved (nvmlDeviceGetMemoryInfo_v2; 0 from v1)
  int64_t free_bytes = 0;
  int64_t used_bytes = 0;    //!< excludes the reserved part when read through _v2
};

/*! \brief Memory of the GPU with this PCI bus id. Never throws. */
MemoryInfo DeviceMemory(const std::string& pci_bus_id);

/*! \brief Compute processes on the GPU with this PCI bus id (as cuDeviceGetPCIBusId gives it:
 *  the mapping NVML needs because its indices ignore CUDA_VISIBLE_DEVICES). Never throws. */
ProcessList ComputeProcesses(const std::string& pci_bus_id);

}  // namespace vllm_mem::nvml

#endif  // VLLM_MEM_DEVICE_NVML_H_
