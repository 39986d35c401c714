/*!
 * \file vllm_mem/base/error.h
 * \brief The exception types of the core. The bindings map each to one Python exception, so a
 *        bad input always surfaces as a clear Python error naming the field, never a crash.
 */
#ifndef VLLM_MEM_BASE_ERROR_H_
#define VLLM_MEM_BASE_ERROR_H_

#include <stdexcept>
#include <string>
#include <string_view>

namespace vllm_mem {

/*! \brief A caller-supplied value is malformed or out of range (Python: ValueError).
 *  The message names the field and the allowed values. */
class InvalidArgument : public std::invalid_argument {
 public:
  InvalidArgument(const std::string& field, const std::string& what)
      : std::invalid_argument(field + ": " + what), field_(field) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

/*! \brief Not enough memory for what was asked, with vLLM's own wording where vLLM has one
 *  (Python: ValueError, as vLLM raises). */
class InsufficientMemory : public std::runtime_error {
 public:
  explicit InsufficientMemory(const std::string& what) : std::runtime_error(what) {}
};

/*! \brief A layout vLLM itself cannot build (Python: NotImplementedError, as vLLM raises). */
class Unsupported : public std::logic_error {
 public:
  explicit Unsupported(const std::string& what) : std::logic_error(what) {}
};

/*! \brief The device or driver failed or is absent (Python: RuntimeError). */
class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string& what) : std::runtime_error(what) {}
};

/*! \brief A user's string as an error message echoes it: quoted, control characters and
 *  bytes that are not UTF-8 shown as \xNN, and cut after kMaxEchoedChars characters with the
 *  length in bytes said, so a multi-MB value never comes back in a message and the message is
 *  always valid text (issue 10): "'abc'", "'aaaa'... (5000 bytes)". */
std::string EchoValue(std::string_view text);

}  // namespace vllm_mem

#endif  // VLLM_MEM_BASE_ERROR_H_
