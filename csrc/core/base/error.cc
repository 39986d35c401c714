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
  // At most kMaxEchoedChars bytes of quoted text are shown (escapes count as the four they
  // take: 80 escaped bytes made a 316-character message, fuzz_gpu_name), never half a character.
  std::string out = "'";
  size_t i = 0;
  while (i < text.size()) {
    const size_t len = Utf8CharLength(text, i);
    const auto byte = static_cast<unsigned char>(text[i]);
    std::string piece;
    size_t consumed = len;
    if (len == 0 || (len == 1 && (byte < 0x20 || byte == 0x7f))) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      piece = escaped;
      consumed = 1;
    } else {
      piece.assign(text.substr(i, len));
    }
    if (out.size() - 1 + piece.size() > static_cast<size_t>(kMaxEchoedChars)) break;
    out.append(piece);
    i += consumed;
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
