/*!
 * \file device/torch_allocator.h
 * \brief PyTorch's caching-allocator statistics as _C sees them: through the optional torch
 *        provider (_torch_provider.so next to _C), opened only when torch is already loaded in
 *        the process, so importing vllm_mem never imports or initialises torch.
 */
#ifndef VLLM_MEM_DEVICE_TORCH_ALLOCATOR_H_
#define VLLM_MEM_DEVICE_TORCH_ALLOCATOR_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vllm_mem/memory/device_reader.h"

namespace vllm_mem::torch_allocator {

/*! \brief The four aggregate figures, or a status: kNoTorch when torch is not loaded, kNoProvider
 *  when it is but the provider is missing or refused (detail says which). Never throws. */
AllocatorStats Stats(int device);
/*! \brief Every aggregate statistic by torch.cuda.memory_stats() key, sorted; empty when
 *  unavailable (\p status says why). */
std::vector<std::pair<std::string, int64_t>> AllStats(int device, AllocatorStats* status);
/*! \brief resetPeakStats(device); nothing when unavailable (torch's no-op), DeviceError when
 *  torch raises. */
void ResetPeak(int device);
/*! \brief emptyCache(); nothing when unavailable, DeviceError when torch raises. */
void EmptyCache();
/*! \brief Where the provider is looked for (next to the library holding this code, or
 *  $VLLM_MEM_TORCH_PROVIDER), and whether it is loaded; for diagnostics. */
std::string ProviderPath();
bool ProviderLoaded();
/*! \brief Why the provider was refused or could not be opened ("" when it was not, or has not
 *  been tried because torch is not loaded yet). */
std::string ProviderRefusal();

}  // namespace vllm_mem::torch_allocator

#endif  // VLLM_MEM_DEVICE_TORCH_ALLOCATOR_H_
