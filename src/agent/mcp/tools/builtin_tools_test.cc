#include "mcp/tools/builtin_tools.h"

#include <gtest/gtest.h>

#include "mcp/schema_check.h"

namespace recur::mcp {
namespace {

using nlohmann::json;

// recur_exe does not exist: a tool that got as far as starting a probe fails with "cannot run",
// so a rejection before that shows the check ran first.
ToolEnv test_env(std::vector<std::string> allow = {}) {
  return {.recur_exe = "/nonexistent/recur", .root = RECUR_SOURCE_DIR, .allow_exec = std::move(allow)};
}

ToolResult call(const ToolRegistry& r, const std::string& name, const json& args) {
  const Tool* t = r.find(name);
  EXPECT_NE(t, nullptr) << name;
  if (auto s = check_against_schema(args, t->input_schema); !s) return tool_error(s.error().message());
  return t->call(args, {.timeout_s = 10, .max_output_bytes = 1 << 20});
}

TEST(McpTools, RegistersEveryToolWithSchemas) {
  ToolRegistry r;
  ASSERT_TRUE(register_builtin_tools(r, test_env()));
  std::vector<std::string> names;
  for (const Tool& t : r.all()) {
    names.push_back(t.name);
    EXPECT_EQ(t.input_schema["type"], "object") << t.name;
    EXPECT_EQ(t.output_schema["type"], "object") << t.name;
    EXPECT_FALSE(t.description.empty()) << t.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"knobs", "trace_analyze", "bench", "check", "gate", "engine_bench",
                                             "journal_query", "episode_list", "episode_run_step"}));
  ToolRegistry with_exec;
  ASSERT_TRUE(register_builtin_tools(with_exec, test_env({"/bin/true"})));
  EXPECT_NE(with_exec.find("bench_cmd"), nullptr) << "bench_cmd exists only with --allow-exec";
}

TEST(McpTools, PathsOutsideTheRootAreRefusedBeforeAnythingRuns) {
  ToolRegistry r;
  ASSERT_TRUE(register_builtin_tools(r, test_env()));
  for (auto [tool, args] : {std::pair<std::string, json>{"gate", {{"spec", "../x.toml"}}},
                            {"trace_analyze", {{"verb", "locks"}, {"traces", {"/etc/passwd"}}}},
                            {"engine_bench", {{"model", "/tmp/../etc/m.gguf"}}},
                            {"journal_query", {{"journal", "../../j.db"}}},
                            {"episode_list", {{"dir", "/"}}},
                            {"episode_run_step", {{"episode", "../e.toml"}}}}) {
    ToolResult out = call(r, tool, args);
    EXPECT_TRUE(out.is_error) << tool;
    EXPECT_NE(out.text.find("outside the server's folder"), std::string::npos) << tool << ": " << out.text;
  }
}

TEST(McpTools, OptionLikeWordsAndMissingArgumentsAreRefused) {
  ToolRegistry r;
  ASSERT_TRUE(register_builtin_tools(r, test_env()));
  EXPECT_NE(call(r, "bench", {{"kernel", "--help"}}).text.find("may not start with '-'"), std::string::npos);
  EXPECT_NE(call(r, "episode_run_step", json::object()).text.find("give `episode`"), std::string::npos);
  EXPECT_NE(call(r, "journal_query", {{"run", "-x"}}).text.find("may not start with '-'"), std::string::npos);
  // Valid arguments reach the child, which cannot start here.
  EXPECT_NE(call(r, "check", {{"kernel", "rmsnorm"}}).text.find("cannot run '/nonexistent/recur'"), std::string::npos);
}

TEST(McpTools, BenchCmdRunsOnlyAllowedPrograms) {
  ToolRegistry r;
  ASSERT_TRUE(register_builtin_tools(r, test_env({"/bin/true"})));
  ToolResult out = call(r, "bench_cmd", {{"command", {"/bin/sh", "-c", "rm -rf /"}}});
  EXPECT_TRUE(out.is_error);
  EXPECT_NE(out.text.find("'/bin/sh' is not an allowed program"), std::string::npos) << out.text;
  out = call(r, "bench_cmd", {{"command", {"/bin/true"}}, {"vs_command", {"sh"}}});
  EXPECT_NE(out.text.find("arguments.vs_command[0]: 'sh' is not an allowed program"), std::string::npos) << out.text;
}

TEST(McpTools, EpisodeListReadsTheEpisodes) {
  ToolRegistry r;
  ASSERT_TRUE(register_builtin_tools(r, test_env()));
  ToolResult out = call(r, "episode_list", json::object());
  ASSERT_FALSE(out.is_error) << out.text;
  bool found = false;
  for (const json& e : out.structured["episodes"])
    if (e["path"] == "episodes/kda-replayssm.toml") {
      found = true;
      // This test binary links no kernels, so the episode's knobs may not resolve here; the
      // CLI test lists it valid. Either way the entry says which.
      if (e["valid"] == true) {
        EXPECT_EQ(e["name"], "kda-replayssm");
        EXPECT_EQ(e["gate"], "episodes/gates/kda-replayssm.toml");
      } else {
        EXPECT_FALSE(e["error"].get<std::string>().empty());
      }
    }
  EXPECT_TRUE(found) << out.structured.dump();
  // The episodes' [expect] tables are for the scorer only (agent/expect.h), never for an agent.
  for (const char* secret : {"root_cause", "decoys", "\"expect\"", "removes the repeat"})
    EXPECT_EQ(out.structured.dump().find(secret), std::string::npos) << secret;
  EXPECT_EQ(out.text.find("root_cause"), std::string::npos);
}

TEST(McpTools, KnobsFilter) {
  ToolRegistry r;
  ASSERT_TRUE(register_builtin_tools(r, test_env()));
  ToolResult out = call(r, "knobs", {{"filter", "no-such-knob-anywhere"}});
  ASSERT_FALSE(out.is_error);
  EXPECT_EQ(out.structured["knobs"].size(), 0u);
  EXPECT_EQ(out.text, "0 knobs matching 'no-such-knob-anywhere'");
}

}  // namespace
}  // namespace recur::mcp
