/*!
 * \file tests/fuzz/fuzz_options.h
 * \brief Serving options derived from fuzz bytes. Each knob is usually a realistic value (so
 *        the harness reaches deep code with a real-looking config) and sometimes a raw 64-bit
 *        integer or raw double bits (NaN, infinities, 2^62): the core must refuse those with
 *        InvalidArgument before doing work proportional to them.
 */
#ifndef VLLM_MEM_TESTS_FUZZ_FUZZ_OPTIONS_H_
#define VLLM_MEM_TESTS_FUZZ_FUZZ_OPTIONS_H_

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace vllm_mem::fuzz {

/*! \brief Bytes at the front of an input that encode the options; the rest is the document.
 *  Seeds carry this many bytes before their JSON (tests/fuzz/make_corpus.py). */
inline constexpr size_t kOptionBytes = 64;

/*! \brief One of \p usual (3 in 4), else any int64 (raw). */
inline int64_t PickCount(FuzzedDataProvider& fdp, std::initializer_list<int64_t> usual) {
  uint8_t selector = fdp.ConsumeIntegral<uint8_t>();
  if (selector < 192) {
    return *(usual.begin() + selector % usual.size());
  }
  return fdp.ConsumeIntegral<int64_t>();
}

/*! \brief One of \p usual (3 in 4), else any double bit pattern (NaN and infinities included). */
inline double PickFraction(FuzzedDataProvider& fdp, std::initializer_list<double> usual) {
  uint8_t selector = fdp.ConsumeIntegral<uint8_t>();
  if (selector < 192) {
    return *(usual.begin() + selector % usual.size());
  }
  uint64_t bits = fdp.ConsumeIntegral<uint64_t>();
  double out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

inline constexpr int64_t kGiB = int64_t{1} << 30;

}  // namespace vllm_mem::fuzz

#endif  // VLLM_MEM_TESTS_FUZZ_FUZZ_OPTIONS_H_
