#include "mcp/server.h"

#include <string>

#include <gtest/gtest.h>

#include "mcp/protocol_version.h"

namespace recur::mcp {
namespace {

using nlohmann::json;

// A server with two stub tools: `echo` returns its text, `fail` always fails.
Server make_server(Limits limits = {}) {
  ToolRegistry tools;
  Tool echo;
  echo.name = "echo";
  echo.description = "echoes";
  echo.input_schema = {{"type", "object"},
                       {"properties", {{"text", {{"type", "string"}}}}},
                       {"required", {"text"}},
                       {"additionalProperties", false}};
  echo.output_schema = {{"type", "object"}, {"properties", {{"text", {{"type", "string"}}}}}};
  echo.call = [](const json& args, const CallBudget&) {
    ToolResult r;
    r.structured = {{"text", args["text"]}};
    r.text = args["text"].get<std::string>();
    return r;
  };
  EXPECT_TRUE(tools.add(echo));
  Tool fail = echo;
  fail.name = "fail";
  fail.call = [](const json&, const CallBudget&) { return tool_error("it broke"); };
  EXPECT_TRUE(tools.add(fail));
  EXPECT_FALSE(tools.add(fail)) << "duplicate names are refused";
  return Server(std::move(tools), limits, {.version = "test"});
}

json call(Server& s, const std::string& line) {
  auto r = s.handle_line(line);
  return r ? json::parse(*r) : json(nullptr);
}

json meta_2026() {
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}, {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}

TEST(McpServer, InitializeNegotiatesTheVersion) {
  for (auto [asked, agreed] : {std::pair{"2025-06-18", "2025-06-18"}, {"2024-11-05", "2024-11-05"},
                               {"1999-01-01", "2025-11-25"}, {"2026-07-28", "2025-11-25"}}) {
    Server s = make_server();
    json r = call(s, json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
                          {"params", {{"protocolVersion", asked}, {"capabilities", json::object()}}}}.dump());
    EXPECT_EQ(r["result"]["protocolVersion"], agreed) << asked;
    EXPECT_EQ(r["result"]["serverInfo"]["name"], "recur");
    EXPECT_TRUE(r["result"]["capabilities"].contains("tools"));
    EXPECT_EQ(s.session_version(), agreed);
  }
}

TEST(McpServer, NotificationsGetNoReply) {
  Server s = make_server();
  EXPECT_FALSE(s.handle_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  EXPECT_FALSE(s.handle_line(R"({"jsonrpc":"2.0","method":"no/such/method"})"));
  EXPECT_FALSE(s.handle_line(R"([{"jsonrpc":"2.0","method":"notifications/cancelled"}])"));
}

TEST(McpServer, JsonRpcErrors) {
  Server s = make_server();
  json r = call(s, "{not json");
  EXPECT_EQ(r["error"]["code"], -32700);
  EXPECT_TRUE(r["id"].is_null());
  EXPECT_EQ(call(s, R"({"jsonrpc":"2.0","id":7,"method":"nope"})")["error"]["code"], -32601);
  EXPECT_EQ(call(s, R"({"jsonrpc":"2.0","id":7,"method":"nope"})")["id"], 7);
  EXPECT_EQ(call(s, R"({"jsonrpc":"1.0","id":"a","method":"ping"})")["error"]["code"], -32600);
  EXPECT_EQ(call(s, R"({"jsonrpc":"1.0","id":"a","method":"ping"})")["id"], "a");
  EXPECT_EQ(call(s, R"({"jsonrpc":"2.0","id":{"x":1},"method":"ping"})")["error"]["code"], -32600);
  EXPECT_EQ(call(s, R"({"jsonrpc":"2.0","id":1,"method":"ping","params":3})")["error"]["code"], -32600);
  EXPECT_EQ(call(s, R"(42)")["error"]["code"], -32600);
  EXPECT_EQ(call(s, R"([])")["error"]["code"], -32600);
  EXPECT_EQ(call(s, R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})")["error"]["code"], -32602);
  EXPECT_EQ(call(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}})")["error"]["code"], -32602);
  EXPECT_EQ(call(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}})")["error"]["code"],
            -32602);
  EXPECT_EQ(call(s, R"({"jsonrpc":"2.0","id":1,"method":"ping"})")["result"], json::object());
}

TEST(McpServer, BatchesAnswerEachRequestInOrder) {
  Server s = make_server();
  json r = call(s, R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},
                       {"jsonrpc":"2.0","id":2,"method":"nope"},5,
                       {"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}])");
  ASSERT_TRUE(r.is_array());
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0]["id"], 1);
  EXPECT_EQ(r[1]["error"]["code"], -32601);
  EXPECT_EQ(r[2]["error"]["code"], -32600);
  EXPECT_EQ(r[3]["error"]["code"], -32600) << "initialize is not allowed in a batch";
  Limits small;
  small.max_batch = 2;
  Server t = make_server(small);
  EXPECT_EQ(call(t, R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}])")["error"]["code"],
            -32600);
}

TEST(McpServer, ToolCallsReturnStructuredContentAndToolErrors) {
  Server s = make_server();
  call(s, R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})");
  json list = call(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})")["result"]["tools"];
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["name"], "echo");
  EXPECT_TRUE(list[0].contains("outputSchema"));
  json ok = call(s, R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})")["result"];
  EXPECT_EQ(ok["isError"], false);
  EXPECT_EQ(ok["structuredContent"]["text"], "hi");
  EXPECT_EQ(ok["content"][0]["type"], "text");
  EXPECT_EQ(ok["content"][0]["text"], "hi");
  // Wrong arguments and a failing tool are tool errors the model can read, not protocol errors.
  json bad = call(s, R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":3}}})")["result"];
  EXPECT_EQ(bad["isError"], true);
  EXPECT_EQ(bad["content"][0]["text"], "echo: arguments.text: expected a string, got 3");
  json failed = call(s, R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fail","arguments":{"text":"x"}}})")["result"];
  EXPECT_EQ(failed["isError"], true);
  // An error is text only: a structuredContent would have to match the tool's outputSchema.
  EXPECT_EQ(failed["content"][0]["text"], "it broke");
  EXPECT_FALSE(failed.contains("structuredContent")) << failed.dump();
  EXPECT_FALSE(bad.contains("structuredContent")) << bad.dump();
}

TEST(McpServer, OldSessionsGetJsonAsTextAndNoOutputSchema) {
  Server s = make_server();
  call(s, R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}})");
  json list = call(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})")["result"]["tools"];
  EXPECT_FALSE(list[0].contains("outputSchema"));
  json ok = call(s, R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})")["result"];
  EXPECT_FALSE(ok.contains("structuredContent"));
  EXPECT_EQ(json::parse(ok["content"][0]["text"].get<std::string>())["text"], "hi");
  json failed = call(s, R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail","arguments":{"text":"x"}}})")["result"];
  EXPECT_EQ(failed["isError"], true);
  EXPECT_EQ(failed["content"][0]["text"], "it broke");
}

TEST(McpServer, StatelessRequestsCarryTheirVersion) {
  Server s = make_server();
  json d = call(s, json{{"jsonrpc", "2.0"}, {"id", "d"}, {"method", "server/discover"}, {"params", {{"_meta", meta_2026()}}}}.dump());
  EXPECT_EQ(d["result"]["resultType"], "complete");
  EXPECT_EQ(d["result"]["supportedVersions"], json(supported_versions()));
  EXPECT_EQ(d["result"]["serverInfo"]["version"], "test");
  json list = call(s, json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}, {"params", {{"_meta", meta_2026()}}}}.dump());
  EXPECT_EQ(list["result"]["resultType"], "complete");
  EXPECT_TRUE(list["result"]["tools"][0].contains("outputSchema"));
  json c = call(s, json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"},
                        {"params", {{"name", "echo"}, {"arguments", {{"text", "x"}}}, {"_meta", meta_2026()}}}}.dump());
  EXPECT_EQ(c["result"]["resultType"], "complete");
  EXPECT_EQ(c["result"]["structuredContent"]["text"], "x");
  EXPECT_TRUE(s.session_version().empty()) << "stateless requests open no session";
  // The handshake and ping are not part of the stateless revision.
  json init = call(s, json{{"jsonrpc", "2.0"}, {"id", 3}, {"method", "initialize"},
                           {"params", {{"protocolVersion", "2026-07-28"}, {"_meta", meta_2026()}}}}.dump());
  EXPECT_EQ(init["error"]["code"], -32601);
  // Unsupported version: -32022 with the supported list; missing capabilities: -32602.
  json old = call(s, R"({"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"protocolVersion":"2030-01-01","clientCapabilities":{}}}})");
  EXPECT_EQ(old["error"]["code"], -32022);
  EXPECT_EQ(old["error"]["data"]["supported"], json(supported_versions()));
  json nocaps = call(s, R"({"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
  EXPECT_EQ(nocaps["error"]["code"], -32602);
}

TEST(McpServer, HostileLinesGetErrorsNotCrashes) {
  Limits limits;
  limits.max_line_bytes = 4096;
  limits.max_depth = 16;
  Server s = make_server(limits);
  EXPECT_EQ(call(s, std::string(10000, ' '))["error"]["code"], -32600);
  EXPECT_EQ(call(s, std::string(100, '[') + std::string(100, ']'))["error"]["code"], -32600);
  EXPECT_EQ(call(s, "\"\\ud800\"")["error"]["code"], -32700);
  EXPECT_EQ(call(s, std::string("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}"))["error"]["code"], -32700);
  // Invalid UTF-8 inside a valid string is echoed back with replacements, never thrown.
  json r = call(s, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\u00e9"}}})");
  EXPECT_EQ(r["result"]["structuredContent"]["text"], "\xc3\xa9");
}

}  // namespace
}  // namespace recur::mcp
