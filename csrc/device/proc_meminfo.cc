/*!
 * \file device/proc_meminfo.cc
 * \brief /proc/meminfo reader. psutil's virtual_memory().available is MemAvailable on Linux
 *        kernels >= 3.14, and total is MemTotal, so these match vLLM's figures.
 */
#include "device/proc_meminfo.h"

#include <fstream>
#include <sstream>

#include "vllm_mem/base/error.h"

namespace vllm_mem {

HostMemory ParseProcMeminfo(const std::string& text) {
  HostMemory out;
  bool have_total = false, have_available = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    long long kib = 0;
    fields >> key >> kib;
    if (key == "MemTotal:") {
      out.total_bytes = static_cast<int64_t>(kib) * 1024;
      have_total = true;
    } else if (key == "MemAvailable:") {
      out.available_bytes = static_cast<int64_t>(kib) * 1024;
      have_available = true;
    }
  }
  if (!have_total || !have_available) {
    throw DeviceError("/proc/meminfo: MemTotal or MemAvailable missing");
  }
  return out;
}

HostMemory ReadHostMemory(const char* path) {
  std::ifstream file(path);
  if (!file) throw DeviceError(std::string("cannot read ") + path);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return ParseProcMeminfo(buffer.str());
}

}  // namespace vllm_mem
