#include "mcp/json_rpc.h"

#include <fmt/format.h>

namespace recur::mcp {

using nlohmann::json;

ReadRequest read_request(const json& m) {
  ReadRequest out;
  if (!m.is_object()) {
    out.error_response = rpc_error(nullptr, rpc::kInvalidRequest, "invalid request: expected a JSON object");
    return out;
  }
  json id = nullptr;
  bool has_id = false;
  if (auto it = m.find("id"); it != m.end()) {
    if (!it->is_string() && !it->is_number() && !it->is_null()) {
      out.error_response = rpc_error(nullptr, rpc::kInvalidRequest, "invalid request: \"id\" must be a string or a number");
      return out;
    }
    id = *it;
    has_id = true;
  }
  auto fail = [&](std::string why) {
    out.error_response = rpc_error(id, rpc::kInvalidRequest, "invalid request: " + why);
    return out;
  };
  auto version = m.find("jsonrpc");
  if (version == m.end() || *version != "2.0") return fail("\"jsonrpc\" must be \"2.0\"");
  auto method = m.find("method");
  if (method == m.end() || !method->is_string()) {
    if (m.contains("result") || m.contains("error")) return fail("the server sends no requests, so it expects no responses");
    return fail("\"method\" must be a string");
  }
  Request r;
  r.id = id;
  r.has_id = has_id;
  r.method = method->get<std::string>();
  if (auto p = m.find("params"); p != m.end()) {
    if (!p->is_object() && !p->is_array()) return fail("\"params\" must be an object or an array");
    r.params = *p;
  }
  out.request = std::move(r);
  return out;
}

json rpc_result(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json rpc_error(const json& id, int code, std::string message, json data) {
  json e = {{"code", code}, {"message", std::move(message)}};
  if (!data.is_null()) e["data"] = std::move(data);
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(e)}};
}

std::string to_line(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace recur::mcp
