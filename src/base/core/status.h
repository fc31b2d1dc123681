// Status and Result<T>: how errors cross module boundaries in recur.
//
// A Result<T> holds either a value or an Error; Status is Result<void>. Messages name the
// input, the position and what was expected ("trace.json: byte 1834: expected ',' or '}'").
// Exceptions never cross a module boundary; functions that can fail return one of these.
// Spell the underlying types recur::expected / recur::unexpected, never std:: (expected.h).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core/expected.h"

namespace recur {

enum class ErrorCode {
  kInvalidArgument,     // the caller passed something malformed or out of range
  kParse,               // an input file or message could not be parsed
  kNotFound,            // a named thing (file, knob, kernel, variant) does not exist
  kIo,                  // the OS refused (open, read, write, mmap)
  kUnsupported,         // valid, but this build or machine cannot do it
  kFailedPrecondition,  // the system is not in a state where the call can succeed
  kTimeout,             // a time budget ran out
  kInternal,            // a bug in recur
};

std::string_view error_code_name(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "parse: trace.json: byte 12: expected '{'"
  std::string to_string() const;

  // Prefixes context, e.g. the file name, onto the message: "model.gguf: <message>".
  Error with_context(std::string_view context) const;

 private:
  ErrorCode code_;
  std::string message_;
};

template <typename T>
using Result = expected<T, Error>;
using Status = expected<void, Error>;

inline Status ok_status() { return {}; }

template <typename... Args>
unexpected<Error> make_error(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  return unexpected<Error>(Error(code, fmt::format(f, std::forward<Args>(args)...)));
}

template <typename... Args>
unexpected<Error> invalid_argument(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(ErrorCode::kInvalidArgument, f, std::forward<Args>(args)...);
}
template <typename... Args>
unexpected<Error> parse_error(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(ErrorCode::kParse, f, std::forward<Args>(args)...);
}
template <typename... Args>
unexpected<Error> not_found(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(ErrorCode::kNotFound, f, std::forward<Args>(args)...);
}
template <typename... Args>
unexpected<Error> io_error(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(ErrorCode::kIo, f, std::forward<Args>(args)...);
}
template <typename... Args>
unexpected<Error> unsupported(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(ErrorCode::kUnsupported, f, std::forward<Args>(args)...);
}
template <typename... Args>
unexpected<Error> internal_error(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(ErrorCode::kInternal, f, std::forward<Args>(args)...);
}

}  // namespace recur

// RECUR_RETURN_IF_ERROR(status_expr): propagate a failed Status or Result out of a function.
#define RECUR_RETURN_IF_ERROR(expr)                              \
  do {                                                           \
    if (auto recur_status_ = (expr); !recur_status_)             \
      return ::recur::unexpected(std::move(recur_status_).error());  \
  } while (0)

#define RECUR_CONCAT_INNER_(a, b) a##b
#define RECUR_CONCAT_(a, b) RECUR_CONCAT_INNER_(a, b)
// RECUR_ASSIGN_OR_RETURN(auto x, result_expr): bind the value or propagate the error.
#define RECUR_ASSIGN_OR_RETURN(lhs, expr) \
  RECUR_ASSIGN_OR_RETURN_IMPL_(RECUR_CONCAT_(recur_result_, __LINE__), lhs, expr)
#define RECUR_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)   \
  auto tmp = (expr);                                   \
  if (!tmp) return ::recur::unexpected(std::move(tmp).error()); \
  lhs = std::move(*tmp)
