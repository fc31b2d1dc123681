// episode_list and episode_run_step: the episodes under episodes/ (read in process), and one
// step of the agent loop on one (`recur agent run|resume --steps 1` as a child, then the new
// experiment's Feedback from the journal).
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "loop/episode.h"
#include "loop/loop.h"
#include "mcp/tools/builtin_tools.h"

namespace recur::mcp {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string relative_to_root(const ToolEnv& env, const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::relative(p, env.root, ec);
  return ec ? p.string() : r.string();
}

json episode_json(const ToolEnv& env, const fs::path& file) {
  json j = {{"path", relative_to_root(env, file)}};
  auto e = agent::load_episode(file.string());
  if (!e) {
    j["valid"] = false;
    j["error"] = e.error().message();
    return j;
  }
  j.update({{"valid", true},
            {"name", e->name},
            {"description", e->description},
            {"gate", relative_to_root(env, e->gate_path)},
            {"candidate", e->candidate},
            {"start", e->start},
            {"budget_s", e->budget_s},
            {"max_experiments", e->max_experiments}});
  return j;
}

// The last finished experiment of `run` in the journal, or null.
json last_experiment(const ToolEnv& env, const std::string& journal, const std::string& run, const CallBudget& budget) {
  auto j = run_recur_json(env, {"journal", "show", "--json", "--db=" + journal, run}, budget);
  if (!j || !j->is_object() || !(*j)["experiments"].is_array()) return nullptr;
  json last = nullptr;
  for (const json& e : (*j)["experiments"])
    if (e.value("state", "") == "done") last = e;
  return last;
}

}  // namespace

Tool make_episode_list_tool(const ToolEnv& env) {
  Tool t;
  t.name = "episode_list";
  t.title = "Episodes";
  t.description = "List the episodes (*.toml in `dir`, default episodes/): name, description, gate, the candidate "
                  "arm and its starting knobs, budget. An episode that does not load is listed with its error.";
  t.input_schema = object_schema({{"dir", {{"type", "string"}, {"maxLength", 4096}}}});
  json episode = {{"type", "object"},
                  {"properties",
                   {{"path", {{"type", "string"}}},
                    {"valid", {{"type", "boolean"}}},
                    {"name", {{"type", "string"}}},
                    {"description", {{"type", "string"}}},
                    {"gate", {{"type", "string"}}},
                    {"error", {{"type", "string"}}}}},
                  {"required", {"path", "valid"}}};
  t.output_schema = object_schema({{"episodes", {{"type", "array"}, {"items", episode}}}}, {"episodes"});
  t.call = [env](const json& args, const CallBudget&) {
    auto dir = path_argument(env, args, "dir", "episodes");
    if (!dir) return tool_error(dir.error().message());
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(*dir, ec))
      if (entry.path().extension() == ".toml" && entry.is_regular_file()) files.push_back(entry.path());
    if (ec) return tool_error(fmt::format("arguments.dir: {}: {}", *dir, ec.message()));
    std::sort(files.begin(), files.end());
    json list = json::array();
    for (const fs::path& f : files) list.push_back(episode_json(env, f));
    ToolResult r;
    r.text = fmt::format("{} episodes in {}", list.size(), relative_to_root(env, *dir));
    r.structured = {{"episodes", std::move(list)}};
    return r;
  };
  return t;
}

Tool make_episode_run_step_tool(const ToolEnv& env) {
  Tool t;
  t.name = "episode_run_step";
  t.title = "Agent step";
  t.description =
      "Run one new experiment of the agent loop on an episode (recur agent run/resume --steps 1): give `episode` "
      "to start a run (or continue the run named `run` of it), or only `run` to continue one. Returns the "
      "experiment's Feedback record, whether the gate passed, whether the run is paused (call again to continue) "
      "and the run summary. Experiments are journaled, so a step stopped by the time budget re-runs on the next call.";
  t.input_schema = object_schema({{"episode", {{"type", "string"}, {"maxLength", 4096}}},
                                  {"run", {{"type", "string"}, {"maxLength", 200}}},
                                  {"journal", {{"type", "string"}, {"maxLength", 4096}}},
                                  {"budget_s", {{"type", "number"}, {"minimum", 0.1}, {"maximum", 36000},
                                                {"description", "probe seconds for the whole run (default: the episode's)"}}}});
  t.output_schema = object_schema({{"run", {{"type", "string"}}},
                                   {"passed", {{"type", "boolean"}}},
                                   {"paused", {{"type", "boolean"}}},
                                   {"finished", {{"type", "boolean"}}},
                                   {"outcome", {{"type", "string"}}},
                                   {"experiment", {{"type", {"object", "null"}}}},
                                   {"feedback", {{"type", {"object", "null"}}}},
                                   {"summary", {{"type", "object"}}}},
                                  {"run", "passed", "paused", "finished", "summary"});
  t.call = [env](const json& args, const CallBudget& budget) {
    auto ja = journal_arguments(env, args);
    if (!ja) return tool_error(ja.error().message());
    const std::string& run = ja->run;
    const std::string* journal = &ja->journal;
    std::vector<std::string> argv;
    if (args.contains("episode")) {
      auto episode = path_argument(env, args, "episode");
      if (!episode) return tool_error(episode.error().message());
      argv = {"agent", "run", "--episode=" + *episode};
      if (!run.empty()) argv.push_back("--run=" + run);
    } else if (!run.empty()) {
      argv = {"agent", "resume", run};
    } else {
      return tool_error("episode_run_step: give `episode` (to start a run) or `run` (to continue one)");
    }
    for (std::string a : {"--steps=1", "--json", "--quiet"}) argv.push_back(a);
    argv.push_back("--journal=" + *journal);
    add_option(argv, args, "budget_s", "--budget-s");
    auto summary = run_recur_json(env, argv, budget);
    if (!summary || !summary->is_object())
      return tool_error(fmt::format("recur agent: {}", summary ? "expected a JSON summary" : summary.error().message()));
    const std::string name = summary->value("run", run);
    json last = last_experiment(env, *journal, name, budget);
    json feedback = last.is_object() && last.contains("feedback") ? last["feedback"] : json(nullptr);
    if (last.is_object()) last.erase("feedback");
    const bool passed = summary->value("passed", false), paused = summary->value("paused", false);
    ToolResult r;
    r.text = fmt::format("run {}: step {}: {} -> {}; {}", name, last.is_object() ? last.value("step", json(-1)).dump() : "-",
                         last.is_object() ? last.value("probe", "?") : "-",
                         feedback.is_object() ? feedback.value("verdict", "?") : "-",
                         passed ? "the gate passes" : paused ? "paused (call again to continue)" : summary->value("outcome", "ended"));
    r.structured = {{"run", name},
                    {"passed", passed},
                    {"paused", paused},
                    {"finished", !paused},
                    {"outcome", summary->value("outcome", "")},
                    {"experiment", std::move(last)},
                    {"feedback", std::move(feedback)},
                    {"summary", std::move(*summary)}};
    return r;
  };
  return t;
}

}  // namespace recur::mcp
