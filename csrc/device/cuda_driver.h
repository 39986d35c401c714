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
#include <vector>

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
 *  keeps it). InvalidArgument naming "device" for an index out of range, DeviceError on driver
 *  failure. */
DeviceMemInfo MemGetInfo(int device);
/*! \brief cuDeviceGetAttribute (needs no context). */
int DeviceAttribute(int device, int attribute);
/*! \brief cuCtxSynchronize in the primary context. Needs a context: it retains (creates on
 *  first use) the device's primary context, as torch.cuda.synchronize does. */
void Synchronize(int device);
/*! \brief "0000:3B:00.0"-style PCI bus id, for mapping to NVML (whose indices ignore
 *  CUDA_VISIBLE_DEVICES). */
std::string PciBusId(int device);
/*! \brief The driver version as an int (12040 = 12.4), 0 without a driver. */
int DriverVersion();

/*! \brief What a visible device is, as far as it needs no context. */
struct DeviceFacts {
  std::string pci_bus_id;                //!< cuDeviceGetPCIBusId's form, "0000:3B:00.0"
  bool integrated = false;               //!< CU_DEVICE_ATTRIBUTE_INTEGRATED
  int max_shared_memory_per_block = 0;   //!< ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, bytes
};

/*! \brief The driver as a tool query sees it, read without initialising CUDA in this process. */
struct DriverFacts {
  bool ok = false;           //!< the driver loaded and cuInit succeeded (in whichever process)
  std::string why;           //!< the reason when !ok
  int device_count = 0;      //!< visible devices (CUDA_VISIBLE_DEVICES applied)
  int driver_version = 0;    //!< 12040 = 12.4; read without cuInit, so set even when !ok
  bool from_child = false;   //!< read by a forked child (this process has not initialised CUDA)
  std::vector<DeviceFacts> devices;
};

/*! \brief Device count, driver version, PCI bus ids and attributes *without calling cuInit in
 *  this process*, so that the caller can still fork CUDA workers afterwards (vLLM picks
 *  'fork' when CUDA is uninitialised; a child of an initialised parent cannot use CUDA).
 *
 *  When this process has already initialised the driver (torch, or a vllm_mem measurement),
 *  the facts are read directly. Otherwise a forked child calls cuInit, reads them and reports
 *  through a pipe (bounded by a timeout); the answer is cached per CUDA_VISIBLE_DEVICES and
 *  CUDA_DEVICE_ORDER. Never throws: failures are in \c why. */
DriverFacts QueryDriverFacts();

/*! \brief True once this process (this pid) has a successfully initialised driver: ours or
 *  anyone's cuInit (probed with cuDeviceGetCount, which reports "not initialised" without
 *  initialising anything). Never initialises the driver itself. */
bool DriverInitialisedHere();

}  // namespace vllm_mem::cuda

#endif  // VLLM_MEM_DEVICE_CUDA_DRIVER_H_
