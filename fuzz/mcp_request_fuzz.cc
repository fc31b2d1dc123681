// Feeds arbitrary bytes, split into lines, to the MCP server's request handler (mcp/server.h)
// with two stub tools (no probes run): every line must get a well-formed reply or none, never a
// crash, a hang or an exception.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mcp/server.h"

namespace {

using nlohmann::json;
using namespace recur::mcp;

Server make_server() {
  ToolRegistry tools;
  Tool echo;
  echo.name = "echo";
  echo.description = "returns its arguments";
  echo.input_schema = {{"type", "object"},
                       {"properties", {{"text", {{"type", "string"}, {"maxLength", 64}}},
                                       {"n", {{"type", "integer"}, {"minimum", 0}, {"maximum", 9}}},
                                       {"list", {{"type", "array"}, {"items", {{"type", "string"}}}, {"maxItems", 4}}}}},
                       {"additionalProperties", false}};
  echo.output_schema = {{"type", "object"}};
  echo.call = [](const json& args, const CallBudget&) {
    ToolResult r;
    r.structured = args;
    r.text = "echo";
    return r;
  };
  (void)tools.add(echo);
  Tool fail = echo;
  fail.name = "fail";
  fail.call = [](const json&, const CallBudget&) { return tool_error("stub failure"); };
  (void)tools.add(fail);
  Limits limits;
  limits.max_line_bytes = 1 << 16;
  limits.max_depth = 32;
  limits.max_batch = 16;
  return Server(std::move(tools), limits, {.version = "fuzz"});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Server server = make_server();  // fresh: a session version must not leak between inputs
  std::string_view input(reinterpret_cast<const char*>(data), size);
  while (!input.empty()) {
    size_t nl = input.find('\n');
    std::string_view line = input.substr(0, nl);
    input.remove_prefix(nl == std::string_view::npos ? input.size() : nl + 1);
    auto reply = server.handle_line(line);
    if (!reply) continue;
    // Every reply is one line of valid JSON-RPC.
    json j = json::parse(*reply, nullptr, false);
    if (j.is_discarded() || reply->find('\n') != std::string::npos) std::abort();
    if (!j.is_array() && (!j.is_object() || j.value("jsonrpc", "") != "2.0")) std::abort();
  }
  return 0;
}
