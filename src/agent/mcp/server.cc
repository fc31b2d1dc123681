#include "mcp/server.h"

#include <chrono>

#include "core/log.h"
#include "mcp/bounded_json.h"
#include "mcp/protocol_version.h"
#include "mcp/schema_check.h"

namespace recur::mcp {

using nlohmann::json;

namespace {

json capabilities() { return {{"tools", {{"listChanged", false}}}}; }

// Results of the stateless revision say whether they are complete (SEP-2575).
json finish(json result, bool stateless) {
  if (stateless) result["resultType"] = "complete";
  return result;
}

bool is_notification_method(std::string_view m) { return m.starts_with("notifications/"); }

}  // namespace

Server::Server(ToolRegistry tools, Limits limits, ServerInfo info)
    : tools_(std::move(tools)), limits_(std::move(limits)), info_(std::move(info)) {}

std::optional<std::string> Server::handle_line(std::string_view line) {
  auto message = parse_bounded(line, limits_);
  if (!message) {
    const bool parse = message.error().code() == ErrorCode::kParse;
    return to_line(rpc_error(nullptr, parse ? rpc::kParseError : rpc::kInvalidRequest, message.error().message()));
  }
  auto reply = handle_message(*message);
  if (!reply) return std::nullopt;
  return to_line(*reply);
}

std::optional<json> Server::handle_message(const json& message) {
  if (!message.is_array()) return handle_one(message, false);
  if (message.empty()) return rpc_error(nullptr, rpc::kInvalidRequest, "invalid request: empty batch");
  if (message.size() > limits_.max_batch)
    return rpc_error(nullptr, rpc::kInvalidRequest,
                     fmt::format("invalid request: a batch of {} messages is over the limit of {}", message.size(),
                                 limits_.max_batch));
  json replies = json::array();
  for (const json& m : message)
    if (auto r = handle_one(m, true)) replies.push_back(std::move(*r));
  if (replies.empty()) return std::nullopt;
  return replies;
}

std::optional<json> Server::handle_one(const json& message, bool in_batch) {
  ReadRequest read = read_request(message);
  if (!read.request) return read.error_response;
  const Request& r = *read.request;
  auto meta = read_request_meta(r.params);
  if (!meta) {
    if (!r.has_id) return std::nullopt;
    if (meta.error().code() == ErrorCode::kUnsupported)
      return rpc_error(r.id, rpc::kUnsupportedProtocolVersion, meta.error().message(),
                       {{"supported", supported_versions()}});
    return rpc_error(r.id, rpc::kInvalidParams, meta.error().message());
  }
  const bool stateless = *meta && (*meta)->protocol_version == kStatelessVersion;
  std::string version = *meta ? (*meta)->protocol_version
                              : (session_version_.empty() ? std::string(kLatestSessionVersion) : session_version_);
  if (!r.has_id) {
    // Notifications get no reply, whatever they hold.
    if (r.method == "notifications/initialized") LOG_DEBUG("mcp: client initialized");
    return std::nullopt;
  }
  if (in_batch && r.method == "initialize")
    return rpc_error(r.id, rpc::kInvalidRequest, "invalid request: initialize must not be part of a batch");
  return dispatch(r, version, stateless);
}

json Server::dispatch(const Request& r, std::string_view version, bool stateless) {
  if (r.method == "initialize") return initialize(r, stateless);
  if (r.method == "server/discover") return discover(r);
  if (r.method == "tools/list") return list_tools(r, version);
  if (r.method == "tools/call") return call_tool(r, version);
  if (r.method == "ping" && !stateless) return rpc_result(r.id, json::object());
  if (stateless && r.method == "ping")
    return rpc_error(r.id, rpc::kMethodNotFound, fmt::format("method 'ping' is not part of protocol {}", kStatelessVersion));
  if (is_notification_method(r.method))
    return rpc_error(r.id, rpc::kInvalidRequest, fmt::format("invalid request: {} is a notification and takes no id", r.method));
  return rpc_error(r.id, rpc::kMethodNotFound, fmt::format("method not found: '{}'", r.method));
}

json Server::initialize(const Request& r, bool stateless) {
  if (stateless)
    return rpc_error(r.id, rpc::kMethodNotFound,
                     fmt::format("method 'initialize' is not part of protocol {}; use server/discover", kStatelessVersion));
  auto v = r.params.find("protocolVersion");
  if (!r.params.is_object() || v == r.params.end() || !v->is_string())
    return rpc_error(r.id, rpc::kInvalidParams, "initialize: params.protocolVersion: expected a string");
  session_version_ = negotiate_session_version(v->get<std::string>());
  LOG_INFO("mcp: initialize: client asked for {}, session speaks {}", v->get<std::string>(), session_version_);
  json result = {{"protocolVersion", session_version_},
                 {"capabilities", capabilities()},
                 {"serverInfo", {{"name", info_.name}, {"title", info_.title}, {"version", info_.version}}}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return rpc_result(r.id, std::move(result));
}

json Server::discover(const Request& r) const {
  json result = {{"supportedVersions", supported_versions()},
                 {"capabilities", capabilities()},
                 {"serverInfo", {{"name", info_.name}, {"title", info_.title}, {"version", info_.version}}}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return rpc_result(r.id, finish(std::move(result), true));
}

json Server::list_tools(const Request& r, std::string_view version) const {
  if (r.params.is_object())
    if (auto c = r.params.find("cursor"); c != r.params.end() && !c->is_string())
      return rpc_error(r.id, rpc::kInvalidParams, "tools/list: params.cursor: expected a string");
  json tools = json::array();
  for (const Tool& t : tools_.all()) {
    json j = {{"name", t.name}, {"description", t.description}, {"inputSchema", t.input_schema}};
    if (!t.title.empty()) j["title"] = t.title;
    if (has_structured_content(version)) j["outputSchema"] = t.output_schema;
    tools.push_back(std::move(j));
  }
  return rpc_result(r.id, finish({{"tools", std::move(tools)}}, version == kStatelessVersion));
}

json Server::call_tool(const Request& r, std::string_view version) const {
  if (!r.params.is_object()) return rpc_error(r.id, rpc::kInvalidParams, "tools/call: params: expected an object");
  auto name = r.params.find("name");
  if (name == r.params.end() || !name->is_string())
    return rpc_error(r.id, rpc::kInvalidParams, "tools/call: params.name: expected a string");
  const Tool* tool = tools_.find(name->get<std::string>());
  if (tool == nullptr)
    return rpc_error(r.id, rpc::kInvalidParams, fmt::format("tools/call: unknown tool '{}'", name->get<std::string>()));
  json arguments = json::object();
  if (auto a = r.params.find("arguments"); a != r.params.end() && !a->is_null()) {
    if (!a->is_object()) return rpc_error(r.id, rpc::kInvalidParams, "tools/call: params.arguments: expected an object");
    arguments = *a;
  }
  // Wrong arguments are the model's to fix: a tool error it can read, not a protocol error.
  ToolResult out;
  const auto start = std::chrono::steady_clock::now();
  if (auto s = check_against_schema(arguments, tool->input_schema); !s) {
    out = tool_error(fmt::format("{}: {}", tool->name, s.error().message()));
  } else {
    out = tool->call(arguments, {.timeout_s = limits_.call_timeout_s, .max_output_bytes = limits_.max_output_bytes});
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  LOG_INFO("mcp: tools/call {} -> {} ({:.2f} s)", tool->name, out.is_error ? "error" : "ok", seconds);
  // Clients before 2025-06-18 know no structuredContent: they get the JSON as the text. An error is
  // its reason as text, without structuredContent (it would not match the tool's outputSchema).
  const bool structured = has_structured_content(version) && !out.is_error;
  std::string text = structured || out.is_error ? out.text : to_line(out.structured);
  json result = {{"content", json::array({{{"type", "text"}, {"text", std::move(text)}}})}, {"isError", out.is_error}};
  if (structured) result["structuredContent"] = std::move(out.structured);
  return rpc_result(r.id, finish(std::move(result), version == kStatelessVersion));
}

}  // namespace recur::mcp
