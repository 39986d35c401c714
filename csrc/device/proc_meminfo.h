/*!
 * \file device/proc_meminfo.h
 * \brief Host memory from /proc/meminfo: what vLLM reads through psutil for get_cpu_memory()
 *        and, on integrated (unified-memory) GPUs, for free device memory.
 */
#ifndef VLLM_MEM_DEVICE_PROC_MEMINFO_H_
#define VLLM_MEM_DEVICE_PROC_MEMINFO_H_

#include <cstdint>
#include <string>

#include "vllm_mem/memory/device_reader.h"  // HostMemory: the device interface reports host memory too

namespace vllm_mem {

/*! \brief Parses the text of /proc/meminfo (kB units). DeviceError when a field is missing. */
HostMemory ParseProcMeminfo(const std::string& text);

/*! \brief Reads /proc/meminfo (or \p path). DeviceError when it cannot be read. */
HostMemory ReadHostMemory(const char* path = "/proc/meminfo");

}  // namespace vllm_mem

#endif  // VLLM_MEM_DEVICE_PROC_MEMINFO_H_
