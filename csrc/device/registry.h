/*!
 * \file device/registry.h
 * \brief Which device the process reads: the real CUDA device, unless a simulated device has
 *        been installed (tests). Installs nest like a stack, so a test's simulated device is
 *        removed cleanly even when several are used in turn.
 */
#ifndef VLLM_MEM_DEVICE_REGISTRY_H_
#define VLLM_MEM_DEVICE_REGISTRY_H_

#include <memory>

#include "vllm_mem/memory/device_reader.h"

namespace vllm_mem {

/*! \brief The reader in use now. A shared_ptr, so a running sampler keeps its reader alive
 *  even when a test removes it meanwhile. Creating the real device touches no driver. */
std::shared_ptr<DeviceReader> ActiveDeviceReader();
/*! \brief Makes \p reader the active one until it is removed. */
void InstallDeviceReader(std::shared_ptr<DeviceReader> reader);
/*! \brief Removes \p reader wherever it is in the stack; false when it was not installed. */
bool RemoveDeviceReader(const DeviceReader* reader);

}  // namespace vllm_mem

#endif  // VLLM_MEM_DEVICE_REGISTRY_H_
