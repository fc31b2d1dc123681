// Replays recorded MCP exchanges (tests/mcp/*.jsonl, written by tests/mcp_client.py record
// against a real `recur mcp`) through a Server with the real tools, and compares every response
// structurally: the same keys, array lengths and values, except timings and the version; the
// server's folder is written ${ROOT} in the recordings.
// Each line: {"request": <message>, "response": <the reply, or null for none>}.
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "mcp/server.h"
#include "mcp/tools/builtin_tools.h"

namespace recur::mcp {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::set<std::string> kIgnored = {"cost_s", "seconds", "spent_s", "created_at", "ended_at", "version"};

void compare(const json& want, const json& got, const std::string& path) {
  ASSERT_EQ(want.type_name(), std::string(got.type_name())) << path << ": want " << want.dump() << ", got " << got.dump();
  if (want.is_object()) {
    for (auto it = want.begin(); it != want.end(); ++it) {
      if (kIgnored.contains(it.key())) continue;
      ASSERT_TRUE(got.contains(it.key())) << path << "." << it.key() << " missing";
      compare(it.value(), got[it.key()], path + "." + it.key());
    }
    for (auto it = got.begin(); it != got.end(); ++it)
      ASSERT_TRUE(want.contains(it.key())) << path << "." << it.key() << " not in the recording";
  } else if (want.is_array()) {
    ASSERT_EQ(want.size(), got.size()) << path;
    for (size_t i = 0; i < want.size(); ++i) compare(want[i], got[i], path + "[" + std::to_string(i) + "]");
  } else if (want.is_string()) {
    // Recordings name the server's folder ${ROOT}: it differs between checkouts.
    std::string g = got.get<std::string>();
    const std::string root = fs::weakly_canonical(RECUR_SOURCE_DIR).string();
    for (size_t at = g.find(root); at != std::string::npos; at = g.find(root, at + 7)) g.replace(at, root.size(), "${ROOT}");
    ASSERT_EQ(want.get<std::string>(), g) << path;
  } else {
    ASSERT_EQ(want, got) << path;
  }
}

void replay(const fs::path& file) {
  ToolRegistry tools;
  ASSERT_TRUE(register_builtin_tools(tools, {.recur_exe = "/nonexistent/recur", .root = RECUR_SOURCE_DIR}));
  Server server(std::move(tools), {}, recur_server_info());
  std::ifstream in(file);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json step = json::parse(line);
    auto reply = server.handle_line(step["request"].dump());
    SCOPED_TRACE(file.filename().string() + " line " + std::to_string(++n));
    if (step["response"].is_null()) {
      EXPECT_FALSE(reply) << *reply;
      continue;
    }
    ASSERT_TRUE(reply);
    compare(step["response"], json::parse(*reply), "response");
  }
  EXPECT_GT(n, 3) << file;
}

TEST(McpReplay, InitializeEra) { replay(fs::path(RECUR_SOURCE_DIR) / "tests/mcp/initialize_era.jsonl"); }
TEST(McpReplay, StatelessEra) { replay(fs::path(RECUR_SOURCE_DIR) / "tests/mcp/stateless_era.jsonl"); }

}  // namespace
}  // namespace recur::mcp
