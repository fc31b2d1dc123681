// What recur's MCP tools share: where the `recur` binary is (probes run as child processes of
// it, so a call's time and output budgets can be enforced by killing it), the folder every path
// must stay in, and the programs `bench_cmd` may run. Helpers for the adapters in this folder.
// Thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "mcp/tool.h"

namespace recur::mcp {

struct ToolEnv {
  std::string recur_exe;                // absolute path of the recur binary
  std::string root;                     // resolved working directory; every path stays under it
  std::vector<std::string> allow_exec;  // programs bench_cmd may run (empty: no bench_cmd tool)
  // candidate_build (docs/candidates.md) runs a compiler and the candidate's code: only with
  // --allow-candidates, and with the server's build command and runner (never the client's).
  bool allow_candidates = false;
  std::string candidate_build_cmd;  // "" = recur candidate build's default
  std::string candidate_runner;     // "" = the default
};

// Runs `recur ARGS` as a child within the budget and parses its stdout as one JSON value.
// Errors: it could not start, ran over the time or output budget, or printed no JSON (the
// message ends with the tail of its stderr).
Result<nlohmann::json> run_recur_json(const ToolEnv& env, const std::vector<std::string>& args, const CallBudget& budget);

// A Feedback record (JSON) as a tool result: structured = the record, text = one line.
ToolResult feedback_result(nlohmann::json feedback);
// run_recur_json then feedback_result, or a tool error.
ToolResult run_probe(const ToolEnv& env, const std::vector<std::string>& args, const CallBudget& budget);

// The path argument `key` of `args` confined to env.root (absent: `fallback`, if any).
Result<std::string> path_argument(const ToolEnv& env, const nlohmann::json& args, std::string_view key,
                                  std::string_view fallback = "");
// The `journal` (confined; default runs/journal.db) and optional `run` (a name or id, no
// leading '-', no path: agent/run_name.h) arguments of the journal and agent tools.
struct JournalArgs {
  std::string journal;
  std::string run;  // "" when absent
};
Result<JournalArgs> journal_arguments(const ToolEnv& env, const nlohmann::json& args);

// A value that becomes a positional argument of a child: non-empty, no leading '-'.
Status check_word(std::string_view value, std::string_view what);
// "--set name=value" pairs for the child's global options, from the optional array `set`.
std::vector<std::string> set_flags(const nlohmann::json& args);
// "--name=value" when args[key] is present (strings as they are, numbers printed).
void add_option(std::vector<std::string>& argv, const nlohmann::json& args, std::string_view key, std::string_view flag);

// Schema pieces.
nlohmann::json feedback_schema();              // a Feedback record (core/feedback.h)
nlohmann::json set_schema();                   // the `set` array of "knob=value"
nlohmann::json object_schema(nlohmann::json properties, std::vector<std::string> required = {});

}  // namespace recur::mcp
