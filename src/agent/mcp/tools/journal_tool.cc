// journal_query: the agent's journal, its runs or one run's experiments with their Feedback, as
// `recur journal show` (read-only).
#include <fmt/format.h>

#include "loop/loop.h"
#include "mcp/tools/builtin_tools.h"

namespace recur::mcp {

using nlohmann::json;

Tool make_journal_query_tool(const ToolEnv& env) {
  Tool t;
  t.name = "journal_query";
  t.title = "Journal";
  t.description = "Read the agent's journal (recur journal show): without `run`, every run (name, episode, state, "
                  "outcome); with `run` (name or id), its experiments in step order with hypothesis, probe, config "
                  "diff, decision and Feedback record, and what a resume would redo.";
  t.input_schema = object_schema({{"journal", {{"type", "string"}, {"maxLength", 4096},
                                               {"description", fmt::format("journal file (default {})", agent::kDefaultJournal)}}},
                                  {"run", {{"type", "string"}, {"maxLength", 200}}}});
  t.output_schema = object_schema({{"runs", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                                   {"run", {{"type", "object"}}},
                                   {"experiments", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                                   {"resume", {{"type", "object"}}},
                                   {"journal", {{"type", "string"}}}});
  t.output_schema["additionalProperties"] = true;
  t.call = [env](const json& args, const CallBudget& budget) {
    auto ja = journal_arguments(env, args);
    if (!ja) return tool_error(ja.error().message());
    const std::string& run = ja->run;
    const std::string* journal = &ja->journal;
    std::vector<std::string> argv = {"journal", "show", "--json", "--db=" + *journal};
    argv.push_back(run.empty() ? "--list" : run);
    auto j = run_recur_json(env, argv, budget);
    if (!j) return tool_error(fmt::format("recur journal show: {}", j.error().message()));
    ToolResult r;
    if (j->is_array()) {
      r.text = fmt::format("{} runs in {}", j->size(), *journal);
      r.structured = {{"runs", std::move(*j)}};
    } else {
      r.text = fmt::format("run {}: {}, {} experiments", (*j)["run"].value("name", run), (*j)["run"].value("state", "?"),
                           (*j)["experiments"].size());
      r.structured = std::move(*j);
    }
    return r;
  };
  return t;
}

}  // namespace recur::mcp
