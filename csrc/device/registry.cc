/*!
 * \file device/registry.cc
 * \brief The stack of installed readers over the lazily created real device.
 */
#include "device/registry.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "device/cuda_device.h"

namespace vllm_mem {
namespace {

std::mutex g_mutex;
std::vector<std::shared_ptr<DeviceReader>>& Stack() {
  static auto* stack = new std::vector<std::shared_ptr<DeviceReader>>();  // never destroyed
  return *stack;
}

}  // namespace

std::shared_ptr<DeviceReader> ActiveDeviceReader() {
  // The real device holds no state of its own (the driver loads on its first call), so one
  // shared instance suffices.
  static const std::shared_ptr<DeviceReader>* real = new std::shared_ptr<DeviceReader>(
      std::make_shared<CudaDevice>());
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& stack = Stack();
  return stack.empty() ? *real : stack.back();
}

void InstallDeviceReader(std::shared_ptr<DeviceReader> reader) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Stack().push_back(std::move(reader));
}

bool RemoveDeviceReader(const DeviceReader* reader) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& stack = Stack();
  auto it = std::find_if(stack.rbegin(), stack.rend(),
                         [&](const auto& r) { return r.get() == reader; });
  if (it == stack.rend()) return false;
  stack.erase(std::next(it).base());
  return true;
}

}  // namespace vllm_mem
