/*!
 * \file device/cuda_driver.h
 * \brief The CUDA driver API, opened with dlopen("libcuda.so.1") on first use: nothing links
 *        CUDA, so the module imports on machines with no GPU and opens nothing at import time.
 *        Memory queries run in the device's *primary* context, the one PyTorch's runtime uses,
 *        pushed and popped so the caller's current context is left as it was.
 */
#ifndef VLLM_MEM_DEVICE_CUDA_DRIVER_H_
#define VLLM_MEM_DEVICE_CUDA_DRIVER_H_

#include <cstdint>
#include <string>

#include "vllm_mem/memory/device_reader.h"

namespace vllm_mem::cuda {

/*! \brief Device attributes read here (cuda.h's CUdevice_attribute values). */
inline constexpr int kAttrIntegrated = 18;                        // CU_DEVICE_ATTRIBUTE_INTEGRATED
inline constexpr int kAttrMaxSharedMemoryPerBlockOptin = 97;      // ..._PER_BLOCK_OPTIN

/*! \brief True when libcuda.so.1 loaded and cuInit succeeded (it creates no context). Never
 *  throws; \p why (if given) receives the reason when false. */
bool DriverAvailable(std::string* why = nullptr);
/*! \brief Visible devices (CUDA_VISIBLE_DEVICES applies, as the driver applies it); 0 without
 *  a driver. */
int DeviceCount();
/*! \brief The device of the calling thread's current context; 0 when none is current or there
 *  is no driver. */
int CurrentDevice();
/*! \brief cuMemGetInfo in the device's primary context (retained once and kept, as the runtime
 *  keeps it). DeviceError on driver failure; the caller validates the index. */
DeviceMemInfo MemGetInfo(int device);
/*! \brief cuDeviceGetAttribute (needs no context). */
int DeviceAttribute(int device, int attribute);
/*! \brief cuCtxSynchronize in the primary context. */
void Synchronize(int device);
/*! \brief "0000:3B:00.0"-style PCI bus id, for mapping to NVML (whose indices ignore
 *  CUDA_VISIBLE_DEVICES). */
std::string PciBusId(int device);
/*! \brief The driver version as an int (12040 = 12.4), 0 without a driver. */
int DriverVersion();

}  // namespace vllm_mem::cuda

#endif  // VLLM_MEM_DEVICE_CUDA_DRIVER_H_
