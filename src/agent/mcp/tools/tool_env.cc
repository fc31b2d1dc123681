#include "mcp/tools/tool_env.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loop/loop.h"
#include "journal/run_name.h"
#include "core/child_process.h"
#include "gate/program_probe.h"
#include "mcp/path_guard.h"

namespace recur::mcp {

using nlohmann::json;

Result<json> run_recur_json(const ToolEnv& env, const std::vector<std::string>& args, const CallBudget& budget) {
  std::vector<std::string> argv = {env.recur_exe};
  argv.insert(argv.end(), args.begin(), args.end());
  // A gate's or episode's [workload.program] may run only what bench_cmd may (gate/program_probe.h).
  RECUR_ASSIGN_OR_RETURN(ChildResult r,
                         run_child(argv, {.timeout_s = budget.timeout_s,
                                          .max_stdout_bytes = budget.max_output_bytes,
                                          .env = {fmt::format("{}={}", gate::kProgramAllowEnv,
                                                              fmt::join(env.allow_exec, ","))}}));
  std::string err = r.err_tail;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  if (r.timed_out)
    return make_error(ErrorCode::kTimeout, "ran over the call's time budget of {:.0f} s and was stopped (server flag --call-timeout-s)",
                      budget.timeout_s);
  if (r.truncated)
    return make_error(ErrorCode::kFailedPrecondition,
                      "printed more than the call's output budget of {} bytes and was stopped (server flag --max-output-bytes)",
                      budget.max_output_bytes);
  json out = json::parse(r.out, nullptr, false);
  if (out.is_discarded() || (!out.is_object() && !out.is_array()))
    return make_error(ErrorCode::kFailedPrecondition, "exit code {}{}", r.exit_code,
                      err.empty() ? std::string() : fmt::format(": {}", err));
  return out;
}

ToolResult feedback_result(json feedback) {
  ToolResult r;
  r.text = fmt::format("{}: {} ({})", feedback.value("probe", "probe"), feedback.value("verdict", "?"),
                       feedback.value("subject", ""));
  r.structured = std::move(feedback);
  return r;
}

ToolResult run_probe(const ToolEnv& env, const std::vector<std::string>& args, const CallBudget& budget) {
  auto j = run_recur_json(env, args, budget);
  if (!j) return tool_error(fmt::format("recur {}: {}", args.empty() ? "" : args[0], j.error().message()));
  if (!j->is_object()) return tool_error("recur: expected a Feedback record (a JSON object)");
  return feedback_result(std::move(*j));
}

Result<std::string> path_argument(const ToolEnv& env, const json& args, std::string_view key, std::string_view fallback) {
  auto it = args.find(key);
  std::string value = it != args.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
  return confine_path(env.root, value, fmt::format("arguments.{}", key));
}

Result<JournalArgs> journal_arguments(const ToolEnv& env, const json& args) {
  JournalArgs out;
  RECUR_ASSIGN_OR_RETURN(out.journal, path_argument(env, args, "journal", agent::kDefaultJournal));
  out.run = args.value("run", "");
  // A run name becomes a folder beside the journal (agent/run_name.h); an id is digits, also a valid name.
  if (!out.run.empty()) RECUR_RETURN_IF_ERROR(agent::check_run_name(out.run, "arguments.run"));
  return out;
}

Status check_word(std::string_view value, std::string_view what) {
  if (value.empty()) return invalid_argument("{}: empty", what);
  if (value.front() == '-') return invalid_argument("{}: '{}' may not start with '-'", what, value);
  return ok_status();
}

std::vector<std::string> set_flags(const json& args) {
  std::vector<std::string> out;
  if (auto s = args.find("set"); s != args.end() && s->is_array())
    for (const json& a : *s)
      if (a.is_string()) out.push_back("--set=" + a.get<std::string>());
  return out;
}

void add_option(std::vector<std::string>& argv, const json& args, std::string_view key, std::string_view flag) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) return;
  argv.push_back(fmt::format("{}={}", flag, it->is_string() ? it->get<std::string>() : it->dump()));
}

json object_schema(json properties, std::vector<std::string> required) {
  json s = {{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required.empty()) s["required"] = std::move(required);
  return s;
}

json set_schema() {
  return {{"type", "array"},
          {"items", {{"type", "string"}, {"maxLength", 256}}},
          {"maxItems", 64},
          {"description", "knob assignments name=value (the `knobs` tool lists them), like recur --set"}};
}

json feedback_schema() {
  json metric = {{"type", "object"},
                 {"properties",
                  {{"name", {{"type", "string"}}},
                   {"value", {{"type", "number"}}},
                   {"ci95", {{"type", "array"}, {"items", {{"type", "number"}}}}},
                   {"unit", {{"type", "string"}}}}},
                 {"required", {"name", "value"}}};
  json attribution = {{"type", "object"},
                      {"properties",
                       {{"component", {{"type", "string"}}}, {"share", {{"type", "number"}}}, {"evidence", {{"type", "string"}}}}},
                      {"required", {"component", "share"}}};
  return {{"type", "object"},
          {"description", "a Feedback record (docs/probes.md): what was tested, the verdict, metrics, attribution, next steps"},
          {"properties",
           {{"probe", {{"type", "string"}}},
            {"tier", {{"type", "integer"}, {"minimum", 0}, {"maximum", 4}}},
            {"cost_s", {{"type", "number"}}},
            {"subject", {{"type", "string"}}},
            {"hypothesis", {{"type", "string"}}},
            {"verdict", {{"enum", {"confirmed", "refuted", "inconclusive", "failed"}}}},
            {"metrics", {{"type", "array"}, {"items", metric}}},
            {"attribution", {{"type", "array"}, {"items", attribution}}},
            {"notes", {{"type", "array"}, {"items", {{"type", "string"}}}}},
            {"next", {{"type", "array"}, {"items", {{"type", "string"}}}}},
            {"artifacts", {{"type", "object"}}},
            {"details", {{"type", "object"}}}}},
          {"required", {"probe", "tier", "verdict"}}};
}

}  // namespace recur::mcp
