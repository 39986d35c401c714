/*!
 * \file core/base/error.cc
 * \brief How error messages echo user input.
 */
#include "vllm_mem/base/error.h"

#include <cstdint>

#include "vllm_mem/base/limits.h"

namespace vllm_mem {

std::string EchoValue(std::string_view text) {
  // Built by appending: GCC 12 at -O3 raises a false -Wrestrict on chained operator+ here.
  std::string out = "'";
  if (static_cast<int64_t>(text.size()) <= kMaxEchoedChars) {
    out.append(text);
    out.push_back('\'');
    return out;
  }
  // Cut on a UTF-8 character boundary: half a character would not decode as Python text.
  size_t cut = static_cast<size_t>(kMaxEchoedChars);
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  out.append(text.substr(0, cut));
  out.append("...' (");
  out.append(std::to_string(text.size()));
  out.append(" bytes)");
  return out;
}

}  // namespace vllm_mem
