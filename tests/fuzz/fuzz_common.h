/*!
 * \file tests/fuzz/fuzz_common.h
 * \brief What every libFuzzer harness shares: the core's documented exceptions are expected
 *        results of bad input; anything else escaping (another exception type, a sanitizer
 *        report, a timeout, running out of memory) is a finding.
 */
#ifndef VLLM_MEM_TESTS_FUZZ_FUZZ_COMMON_H_
#define VLLM_MEM_TESTS_FUZZ_FUZZ_COMMON_H_

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <exception>
#include <string>

#include "vllm_mem/base/error.h"

namespace vllm_mem::fuzz {

/*! \brief Messages are shown to users: the contract (issue 10) is <= 300 characters, which
 *  needs every echoed value truncated. A longer one is a finding, reported by aborting. */
inline constexpr size_t kMaxMessageChars = 300;

/*! \brief Whether \p text is valid UTF-8: the bindings turn messages into Python str, and an
 *  invalid byte sequence would surface as UnicodeDecodeError instead of the ValueError. */
inline bool IsValidUtf8(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    size_t len = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > text.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

inline void CheckMessage(const char* what, const char* kind) {
  std::string text(what);
  if (text.empty() || text.size() > kMaxMessageChars) {
    std::fprintf(stderr, "fuzz: %s message of %zu characters (allowed 1..%zu): %.400s\n", kind,
                 text.size(), kMaxMessageChars, text.c_str());
    std::abort();
  }
  if (!IsValidUtf8(text)) {
    std::fprintf(stderr, "fuzz: %s message is not valid UTF-8: %.400s\n", kind, text.c_str());
    std::abort();
  }
}

/*! \brief Runs \p body; the core's documented exceptions for bad input end it quietly (after
 *  checking the message), every other exception propagates and libFuzzer reports it.
 *  InsufficientMemory carries vLLM's own (sometimes long) wording, so only its presence is
 *  checked. */
template <typename F>
void Expect(F&& body) {
  try {
    body();
  } catch (const InvalidArgument& e) {
    CheckMessage(e.what(), "InvalidArgument");
  } catch (const Unsupported& e) {
    CheckMessage(e.what(), "Unsupported");
  } catch (const InsufficientMemory& e) {
    if (e.what()[0] == '\0') std::abort();
  }
}

}  // namespace vllm_mem::fuzz

#endif  // VLLM_MEM_TESTS_FUZZ_FUZZ_COMMON_H_
