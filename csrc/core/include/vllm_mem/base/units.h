/*!
 * \file vllm_mem/base/units.h
 * \brief Byte units and vLLM's printing of them (format_gib and friends).
 */
#ifndef VLLM_MEM_BASE_UNITS_H_
#define VLLM_MEM_BASE_UNITS_H_

#include <cstdint>
#include <string>

namespace vllm_mem {

inline constexpr int64_t kKiB = int64_t{1} << 10;
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;
inline constexpr int64_t kGB = 1'000'000'000;

/*! \brief Python's str(round(x, ndigits)) for finite doubles of ordinary magnitude: the value
 *  rounded on its exact binary expansion, printed with trailing zeros removed but one kept
 *  ("15.0", "14.99", "0.1"). */
std::string FormatRounded(double value, int ndigits);

/*! \brief vLLM's format_gib: str(round(bytes / 2**30, 2)). */
std::string FormatGib(int64_t bytes);
/*! \brief vLLM's format_mib: str(round(bytes / 2**20, 2)). */
std::string FormatMib(int64_t bytes);
/*! \brief printf("%.<digits>f") of a double, as vLLM's "%.2f" log arguments print. */
std::string FormatFixed(double value, int digits);
/*! \brief Python's f"{n:,}": thousands separated by commas. */
std::string FormatThousands(int64_t value);

}  // namespace vllm_mem

#endif  // VLLM_MEM_BASE_UNITS_H_
