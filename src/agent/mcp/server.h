// The MCP server's request handler: one JSON-RPC line in, at most one line out (docs/mcp.md).
// It speaks both protocol eras (protocol_version.h): the initialize handshake with a session
// version, and the 2026-07-28 stateless requests with per-request _meta and server/discover.
// Methods: initialize, notifications/initialized, ping, server/discover, tools/list, tools/call;
// other notifications are ignored, other methods get -32601.
//
// Hostile input gets JSON-RPC errors, never a crash or an exception: a line over the size or
// nesting limits or a batch over its limit gets -32600, malformed JSON -32700 (id null).
// Not thread-safe (one session; stdio serves one client).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mcp/json_rpc.h"
#include "mcp/limits.h"
#include "mcp/tool_registry.h"

namespace recur::mcp {

struct ServerInfo {
  std::string name = "recur";
  std::string title = "recur: LLM inference stack probes";
  std::string version;
  std::string instructions;
};

class Server {
 public:
  Server(ToolRegistry tools, Limits limits, ServerInfo info);

  // The response line (no newline), or nullopt when nothing is sent (notifications, a batch of
  // notifications).
  std::optional<std::string> handle_line(std::string_view line);
  // The same for an already parsed message (a request, a notification or a batch).
  std::optional<nlohmann::json> handle_message(const nlohmann::json& message);

  // The version the initialize handshake agreed on; empty before it.
  const std::string& session_version() const { return session_version_; }
  const Limits& limits() const { return limits_; }

 private:
  std::optional<nlohmann::json> handle_one(const nlohmann::json& message, bool in_batch);
  nlohmann::json dispatch(const Request& r, std::string_view version, bool stateless);
  nlohmann::json initialize(const Request& r, bool stateless);
  nlohmann::json discover(const Request& r) const;
  nlohmann::json list_tools(const Request& r, std::string_view version) const;
  nlohmann::json call_tool(const Request& r, std::string_view version) const;

  ToolRegistry tools_;
  Limits limits_;
  ServerInfo info_;
  std::string session_version_;
};

}  // namespace recur::mcp
