#include "core/error.h"

namespace slapo {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kParse: return "parse error";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kOutOfRange: return "out of range";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kRuntime: return "run-time failure";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

bool is_user_error(ErrorCode code) {
  return code == ErrorCode::kInvalidArgument || code == ErrorCode::kParse ||
         code == ErrorCode::kNotFound;
}

namespace detail {
void throw_internal(const char* file, int line, const char* cond, const std::string& msg) {
  throw Error(ErrorCode::kInternal,
              concat("internal error at ", file, ":", line, ": ", cond, msg.empty() ? "" : ": ",
                     msg, " (this is a bug in slapo; please report it)"));
}
}  // namespace detail

}  // namespace slapo
