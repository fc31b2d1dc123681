#include "mcp/tools/builtin_tools.h"

namespace recur::mcp {

Status register_builtin_tools(ToolRegistry& registry, const ToolEnv& env) {
  for (auto make : {make_knobs_tool, make_trace_analyze_tool, make_bench_tool, make_check_tool, make_gate_tool,
                    make_engine_bench_tool, make_journal_query_tool, make_episode_list_tool, make_episode_run_step_tool})
    RECUR_RETURN_IF_ERROR(registry.add(make(env)));
  // Running arbitrary programs is opt-in, and then only the listed ones.
  if (!env.allow_exec.empty()) RECUR_RETURN_IF_ERROR(registry.add(make_bench_cmd_tool(env)));
  if (env.allow_candidates) RECUR_RETURN_IF_ERROR(registry.add(make_candidate_build_tool(env)));
  return ok_status();
}

ServerInfo recur_server_info() {
  ServerInfo info;
  info.instructions =
      "recur's probes for an LLM inference stack. Every probe returns a Feedback record (verdict, metrics with "
      "CIs, attribution to components, next steps). Start with episode_list and knobs; drive an episode with "
      "episode_run_step until the gate passes.";
  return info;
}

}  // namespace recur::mcp
