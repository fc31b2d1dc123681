#include "core/status.h"

namespace recur {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kParse: return "parse error";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kFailedPrecondition: return "failed precondition";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

std::string Error::to_string() const {
  return fmt::format("{}: {}", error_code_name(code_), message_);
}

Error Error::with_context(std::string_view context) const {
  return Error(code_, fmt::format("{}: {}", context, message_));
}

}  // namespace recur
