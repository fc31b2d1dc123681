#include "serve/api_error.h"

namespace recur::serve {

nlohmann::json ApiError::to_json() const {
  auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"error", {{"message", message}, {"type", type}, {"param", or_null(param)}, {"code", or_null(code)}}}};
}

std::string ApiError::body() const { return to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace recur::serve
