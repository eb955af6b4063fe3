#pragma once
// Errors that end an operation: misuse and bad input. A failed trial is never an Error; it is a
// TrialResult with a closed status (see core/trial.h).

#include <sstream>
#include <stdexcept>
#include <string>

namespace slapo {

// What kind of failure an Error reports. The CLI maps these to exit codes: bad input and usage
// (kInvalidArgument, kParse, kNotFound) exit with 2; the others with 1.
enum class ErrorCode {
  kInvalidArgument,  // a value, flag or configuration that is not acceptable
  kParse,            // a file or expression that does not parse or type-check
  kNotFound,         // a file, knob, parameter or path that does not exist
  kOutOfRange,       // a result that does not fit (e.g. a space larger than 2^64)
  kIo,               // the operating system refused (open, read, write)
  kRuntime,          // the run failed around us: a peer rank died or timed out
  kInternal,         // a bug in slapo
};

const char* error_code_name(ErrorCode code);

// True for codes that mean "the user's input is wrong" (exit code 2).
bool is_user_error(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
[[noreturn]] void throw_internal(const char* file, int line, const char* cond,
                                 const std::string& msg);
}  // namespace detail

}  // namespace slapo

// SLAPO_CHECK(cond, code, parts...): throws slapo::Error(code, concat(parts...)) when cond is
// false. For misuse and bad input; the message must name the file/line/knob/path at fault.
#define SLAPO_CHECK(cond, code, ...)                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      throw ::slapo::Error((code), ::slapo::detail::concat(__VA_ARGS__)); \
    }                                                                     \
  } while (false)

#define SLAPO_FAIL(code, ...) throw ::slapo::Error((code), ::slapo::detail::concat(__VA_ARGS__))

// SLAPO_INTERNAL_ASSERT(cond, parts...): a broken invariant, i.e. a bug in slapo. Needs a message.
#define SLAPO_INTERNAL_ASSERT(cond, ...)                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      ::slapo::detail::throw_internal(__FILE__, __LINE__, #cond,             \
                                      ::slapo::detail::concat(__VA_ARGS__)); \
    }                                                                        \
  } while (false)
