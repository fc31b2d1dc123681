// bench and check: a kernel variant timed (against a baseline) or checked against its float64
// reference, as `recur bench` / `recur check` children; bench_cmd times allowed programs.
#include <algorithm>

#include <fmt/format.h>

#include "mcp/tools/builtin_tools.h"

namespace recur::mcp {

using nlohmann::json;

namespace {

json kernel_properties() {
  auto text = [](const char* what) { return json{{"type", "string"}, {"maxLength", 200}, {"description", what}}; };
  return {{"kernel", text("kernel name (recur kernels lists them), e.g. rmsnorm")},
          {"variant", text("variant (default: the kernel.<name>.variant knob; auto = the best)")},
          {"vs", text("baseline variant to compare against")},
          {"shape", text("shape, e.g. M16,N4096 (default: the kernel's)")},
          {"set", set_schema()}};
}

// The child's argv: global --set flags, the verb, the options, then the kernel after "--".
Result<std::vector<std::string>> kernel_argv(const char* verb, const json& args) {
  RECUR_RETURN_IF_ERROR(check_word(args["kernel"].get<std::string>(), "arguments.kernel"));
  std::vector<std::string> argv = set_flags(args);
  argv.push_back(verb);
  add_option(argv, args, "variant", "--variant");
  add_option(argv, args, "vs", "--vs");
  add_option(argv, args, "shape", "--shape");
  return argv;
}

ToolResult finish_kernel_call(const ToolEnv& env, std::vector<std::string> argv, const json& args,
                              const CallBudget& budget) {
  argv.push_back("--json");
  argv.push_back(args["kernel"].get<std::string>());
  return run_probe(env, argv, budget);
}

}  // namespace

Tool make_bench_tool(const ToolEnv& env) {
  Tool t;
  t.name = "bench";
  t.title = "Kernel benchmark";
  t.description = "Time a kernel variant, alone or against a baseline (vs), in interleaved rounds with noise "
                  "calibration (recur bench; tier 2). Returns the Feedback record: median ratio with a 95% CI, "
                  "faster/slower/same, roofline fractions, next steps.";
  json props = kernel_properties();
  props["budget_s"] = {{"type", "number"}, {"minimum", 0.05}, {"maximum", 120}, {"description", "measurement seconds (default 8)"}};
  props["hypothesis"] = {{"enum", {"faster", "slower", "same"}}};
  props["callgrind"] = {{"type", "boolean"}, {"description", "count instructions per region instead of timing (tier 0)"}};
  t.input_schema = object_schema(std::move(props), {"kernel"});
  t.output_schema = feedback_schema();
  t.call = [env](const json& args, const CallBudget& budget) {
    auto argv = kernel_argv("bench", args);
    if (!argv) return tool_error(argv.error().message());
    add_option(*argv, args, "budget_s", "--budget-s");
    add_option(*argv, args, "hypothesis", "--hypothesis");
    if (args.value("callgrind", false)) argv->push_back("--callgrind");
    return finish_kernel_call(env, std::move(*argv), args, budget);
  };
  return t;
}

Tool make_check_tool(const ToolEnv& env) {
  Tool t;
  t.name = "check";
  t.title = "Kernel check";
  t.description = "Check a kernel variant against its float64 reference (and vs another variant, and split into "
                  "partitions) over seeds and input distributions (recur check; tier 1). Returns the Feedback "
                  "record with the worst element localized.";
  json props = kernel_properties();
  auto list = [](const char* what) { return json{{"type", "string"}, {"maxLength", 200}, {"description", what}}; };
  props["seeds"] = list("input seeds, e.g. \"1,2,3\" (default)");
  props["partitions"] = list("shard counts compared with the unpartitioned result, e.g. \"1,2,4\"");
  props["distributions"] = list("uniform,normal,wide_range,cancellation (default all)");
  t.input_schema = object_schema(std::move(props), {"kernel"});
  t.output_schema = feedback_schema();
  t.call = [env](const json& args, const CallBudget& budget) {
    auto argv = kernel_argv("check", args);
    if (!argv) return tool_error(argv.error().message());
    add_option(*argv, args, "seeds", "--seeds");
    add_option(*argv, args, "partitions", "--partitions");
    add_option(*argv, args, "distributions", "--distributions");
    return finish_kernel_call(env, std::move(*argv), args, budget);
  };
  return t;
}

Tool make_bench_cmd_tool(const ToolEnv& env) {
  Tool t;
  t.name = "bench_cmd";
  t.title = "Program benchmark";
  t.description = fmt::format(
      "Time whole programs, wall time from spawn to exit, against vs_command or against itself (recur bench cmd). "
      "No shell: command is argv. Only these programs may run (the server's --allow-exec): {}.",
      fmt::join(env.allow_exec, ", "));
  json argv_schema = {{"type", "array"}, {"items", {{"type", "string"}, {"maxLength", 1024}}}, {"minItems", 1}, {"maxItems", 64}};
  t.input_schema = object_schema({{"command", argv_schema},
                                  {"vs_command", argv_schema},
                                  {"budget_s", {{"type", "number"}, {"minimum", 0.05}, {"maximum", 120}}},
                                  {"hypothesis", {{"enum", {"faster", "slower", "same"}}}}},
                                 {"command"});
  t.output_schema = feedback_schema();
  t.call = [env](const json& args, const CallBudget& budget) {
    auto allowed = [&](const json& argv) {
      const std::string prog = argv[0].get<std::string>();
      return std::find(env.allow_exec.begin(), env.allow_exec.end(), prog) != env.allow_exec.end();
    };
    for (const char* key : {"command", "vs_command"}) {
      if (!args.contains(key)) continue;
      if (!allowed(args[key]))
        return tool_error(fmt::format("arguments.{}[0]: '{}' is not an allowed program; the server allows: {}", key,
                                      args[key][0].get<std::string>(), fmt::join(env.allow_exec, ", ")));
    }
    std::vector<std::string> argv = {"bench", "cmd", "--json"};
    add_option(argv, args, "budget_s", "--budget-s");
    add_option(argv, args, "hypothesis", "--hypothesis");
    if (args.contains("vs_command")) {
      // recur splits --vs-cmd on spaces, so its words may not hold any.
      std::vector<std::string> words;
      for (const json& w : args["vs_command"]) {
        if (w.get<std::string>().find_first_of(" \t") != std::string::npos || w.get<std::string>().empty())
          return tool_error("arguments.vs_command: words may not be empty or hold spaces");
        words.push_back(w.get<std::string>());
      }
      argv.push_back(fmt::format("--vs-cmd={}", fmt::join(words, " ")));
    }
    argv.push_back("--");
    for (const json& w : args["command"]) argv.push_back(w.get<std::string>());
    return run_probe(env, argv, budget);
  };
  return t;
}

}  // namespace recur::mcp
