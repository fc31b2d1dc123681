// OpenAI-style API errors: the HTTP status and the body {"error": {"message", "type", "param",
// "code"}} that OpenAI's clients parse. Every rejection the server makes is one of these.
#pragma once

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace recur::serve {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault; empty = null
  std::string code;   // machine-readable reason; empty = null

  nlohmann::json to_json() const;
  std::string body() const;  // to_json() as text (invalid UTF-8 replaced)
};

// A field is present but unusable (out of range, unsupported value): 400.
template <typename... Args>
ApiError bad_request(std::string param, std::string code, fmt::format_string<Args...> f, Args&&... args) {
  return {400, fmt::format(f, std::forward<Args>(args)...), "invalid_request_error", std::move(param), std::move(code)};
}

// A field is missing or has the wrong JSON type (the schema is violated): 422.
template <typename... Args>
ApiError schema_error(std::string param, fmt::format_string<Args...> f, Args&&... args) {
  return {422, fmt::format(f, std::forward<Args>(args)...), "invalid_request_error", std::move(param), "invalid_type"};
}

}  // namespace recur::serve
