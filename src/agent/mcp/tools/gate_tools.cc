// gate and engine_bench: an acceptance gate evaluated, a model's throughput measured, as
// `recur gate` / `recur engine bench` children.
#include "mcp/tools/builtin_tools.h"

namespace recur::mcp {

using nlohmann::json;

Tool make_gate_tool(const ToolEnv& env) {
  Tool t;
  t.name = "gate";
  t.title = "Acceptance gate";
  t.description = "Evaluate an acceptance gate spec (recur gate; docs/agent.md): every condition on its arms' "
                  "metrics with CIs, and the verdict (confirmed = pass). spec: a .toml under the server's folder, "
                  "e.g. episodes/gates/rmsnorm-speed.toml. set: knobs for every arm (an arm's own assignment wins).";
  t.input_schema = object_schema({{"spec", {{"type", "string"}, {"maxLength", 4096}}}, {"set", set_schema()}}, {"spec"});
  t.output_schema = feedback_schema();
  t.call = [env](const json& args, const CallBudget& budget) {
    auto spec = path_argument(env, args, "spec");
    if (!spec) return tool_error(spec.error().message());
    std::vector<std::string> argv = set_flags(args);
    for (const char* a : {"gate", "--json", "--quiet"}) argv.push_back(a);
    argv.push_back(*spec);
    return run_probe(env, argv, budget);
  };
  return t;
}

Tool make_engine_bench_tool(const ToolEnv& env) {
  Tool t;
  t.name = "engine_bench";
  t.title = "Engine benchmark";
  t.description = "Prefill and decode tokens/s of a GGUF model over fresh sessions, medians over runs, with the "
                  "decode bandwidth roofline (recur engine bench; tier 3). model: a .gguf under the server's folder.";
  auto count = [](int lo, int hi) { return json{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}}; };
  t.input_schema = object_schema({{"model", {{"type", "string"}, {"maxLength", 4096}}},
                                  {"prefill", count(1, 1 << 16)},
                                  {"decode", count(1, 1 << 16)},
                                  {"runs", count(1, 1000)},
                                  {"warmup", count(0, 100)},
                                  {"threads", count(0, 1024)},
                                  {"set", set_schema()}},
                                 {"model"});
  t.output_schema = feedback_schema();
  t.call = [env](const json& args, const CallBudget& budget) {
    auto model = path_argument(env, args, "model");
    if (!model) return tool_error(model.error().message());
    std::vector<std::string> argv = set_flags(args);
    for (const char* a : {"engine", "bench", "--json"}) argv.push_back(a);
    argv.push_back("--model=" + *model);
    for (const char* k : {"prefill", "decode", "runs", "warmup", "threads"}) add_option(argv, args, k, std::string("--") + k);
    return run_probe(env, argv, budget);
  };
  return t;
}

}  // namespace recur::mcp
