/*!
 * \file core/base/error.cc
 * \brief How error messages echo user input.
 */
#include "vllm_mem/base/error.h"

#include <cstdint>
#include <cstdio>

#include "vllm_mem/base/limits.h"

namespace vllm_mem {
namespace {

/*! Length of the valid UTF-8 character starting at text[i], or 0 when the bytes there are not
 *  one (overlong forms and surrogates are let through: Python decodes what we need it to). */
size_t Utf8CharLength(std::string_view text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t len = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 0;
  }
  return len;
}

}  // namespace

std::string EchoValue(std::string_view text) {
  // Quoted like Python's repr would show it: control characters and bytes that are not UTF-8
  // become \xNN, so the message is one line of valid text (the bindings make it a Python str;
  // invalid UTF-8 there raised UnicodeDecodeError instead of the ValueError - fuzzing found it).
  // At most kMaxEchoedChars characters of the value are shown, never half a character.
  std::string out = "'";
  size_t shown = 0;
  size_t i = 0;
  while (i < text.size() && shown < static_cast<size_t>(kMaxEchoedChars)) {
    const size_t len = Utf8CharLength(text, i);
    const auto byte = static_cast<unsigned char>(text[i]);
    if (len == 0 || (len == 1 && (byte < 0x20 || byte == 0x7f))) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out.append(escaped);
      i += 1;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
    ++shown;
  }
  out.push_back('\'');
  if (i < text.size()) {
    out.append("... (");
    out.append(std::to_string(text.size()));
    out.append(" bytes)");
  }
  return out;
}

}  // namespace vllm_mem
