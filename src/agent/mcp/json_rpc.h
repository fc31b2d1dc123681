// JSON-RPC 2.0 pieces the MCP server needs (https://www.jsonrpc.org/specification): error codes,
// response builders, and reading one message into a Request. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace recur::mcp {

namespace rpc {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// MCP 2026-07-28 (SEP-2575, numbers from spec PR #2907): a request's _meta names a protocol
// version the server does not speak; data.supported lists those it does.
inline constexpr int kUnsupportedProtocolVersion = -32022;
}  // namespace rpc

struct Request {
  nlohmann::json id;  // string or number; null for a notification (has_id false)
  bool has_id = false;
  std::string method;
  nlohmann::json params = nlohmann::json::object();  // object (or array), {} when absent
};

// A single message (not a batch) as a Request, or the error response to send instead
// (-32600 with the id when one could be read, else null).
struct ReadRequest {
  std::optional<Request> request;
  nlohmann::json error_response;
};
ReadRequest read_request(const nlohmann::json& message);

nlohmann::json rpc_result(const nlohmann::json& id, nlohmann::json result);
nlohmann::json rpc_error(const nlohmann::json& id, int code, std::string message,
                         nlohmann::json data = nullptr);

// A message's text for the wire: one line, invalid UTF-8 replaced (never throws).
std::string to_line(const nlohmann::json& message);

}  // namespace recur::mcp
