#include "serve/bearer_auth.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <httplib.h>

#include "serve/api_error.h"

namespace recur::serve {

bool same_secret(std::string_view a, std::string_view b) {
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < a.size(); ++i) diff |= unsigned(uint8_t(a[i]) ^ uint8_t(i < b.size() ? b[i] : 0));
  return diff == 0;
}

void require_bearer_key(httplib::Server& server, std::string key, bool metrics_open) {
  if (key.empty()) return;
  server.set_pre_routing_handler([bearer = "Bearer " + key, metrics_open](const httplib::Request& req,
                                                                          httplib::Response& res) {
    if (req.path == "/health" || (metrics_open && req.path == "/metrics") ||
        same_secret(req.get_header_value("Authorization"), bearer))
      return httplib::Server::HandlerResponse::Unhandled;
    const ApiError e{401, "missing or incorrect API key: send the header 'Authorization: Bearer <key>'",
                     "invalid_request_error", "", "invalid_api_key"};
    res.status = e.http_status;
    res.set_content(e.body(), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
}

Result<std::string> load_secret(const std::string& file, const char* env, std::string fallback) {
  if (file.empty()) {
    const char* value = std::getenv(env);
    return value != nullptr && *value != '\0' ? std::string(value) : fallback;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return io_error("key file '{}': cannot be read", file);
  std::ostringstream text;
  text << in.rdbuf();
  std::string key = text.str();
  if (key.ends_with('\n')) key.pop_back();
  if (key.ends_with('\r')) key.pop_back();
  if (key.empty()) return invalid_argument("key file '{}': empty; expected the key on one line", file);
  if (key.find_first_of("\r\n") != std::string::npos)
    return invalid_argument("key file '{}': more than one line; expected the key on one line", file);
  return key;
}

}  // namespace recur::serve
