// trace_analyze: any verb of `recur analyze` on traces under the server's folder.
#include <fmt/format.h>

#include "mcp/path_guard.h"
#include "mcp/tools/builtin_tools.h"

namespace recur::mcp {

using nlohmann::json;

Tool make_trace_analyze_tool(const ToolEnv& env) {
  Tool t;
  t.name = "trace_analyze";
  t.title = "Trace analysis";
  t.description =
      "Run a trace analysis (recur analyze VERB; docs/analyses.md) and return its Feedback record with every figure "
      "under details. verb: overlap (args: the A and B selectors), breakdown, diff (two traces: base, candidate), "
      "locks, critical-path, hta. traces: trace files or folders under the server's folder. args: the verb's other "
      "arguments and flags, e.g. [\"name~^nccl\", \"cat=kernel\", \"--by\", \"track\"].";
  t.input_schema = object_schema(
      {{"verb", {{"enum", {"overlap", "breakdown", "diff", "locks", "critical-path", "hta"}}}},
       {"traces", {{"type", "array"}, {"items", {{"type", "string"}, {"maxLength", 4096}}}, {"minItems", 1}, {"maxItems", 2}}},
       {"args", {{"type", "array"}, {"items", {{"type", "string"}, {"maxLength", 1024}}}, {"maxItems", 32}}}},
      {"verb", "traces"});
  t.output_schema = feedback_schema();
  t.call = [env](const json& args, const CallBudget& budget) {
    std::vector<std::string> argv = {"analyze", args["verb"].get<std::string>()};
    for (size_t i = 0; i < args["traces"].size(); ++i) {
      auto p = confine_path(env.root, args["traces"][i].get<std::string>(), fmt::format("arguments.traces[{}]", i));
      if (!p) return tool_error(p.error().message());
      argv.push_back(*p);
    }
    if (auto a = args.find("args"); a != args.end())
      for (const json& x : *a) argv.push_back(x.get<std::string>());
    argv.push_back("--json");
    return run_probe(env, argv, budget);
  };
  return t;
}

}  // namespace recur::mcp
