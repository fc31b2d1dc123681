// recur's MCP tools (docs/mcp.md, "Tools"): knobs, trace_analyze, bench, check, gate,
// engine_bench, journal_query, episode_list, episode_run_step, bench_cmd when the server
// was started with --allow-exec, and candidate_build with --allow-candidates. Each make_*_tool lives in its own file in this folder.
#pragma once

#include "core/status.h"
#include "mcp/server.h"
#include "mcp/tool_registry.h"
#include "mcp/tools/tool_env.h"

namespace recur::mcp {

Tool make_knobs_tool(const ToolEnv& env);
Tool make_trace_analyze_tool(const ToolEnv& env);
Tool make_bench_tool(const ToolEnv& env);
Tool make_check_tool(const ToolEnv& env);
Tool make_bench_cmd_tool(const ToolEnv& env);
Tool make_gate_tool(const ToolEnv& env);
Tool make_engine_bench_tool(const ToolEnv& env);
Tool make_journal_query_tool(const ToolEnv& env);
Tool make_episode_list_tool(const ToolEnv& env);
Tool make_episode_run_step_tool(const ToolEnv& env);
Tool make_candidate_build_tool(const ToolEnv& env);

Status register_builtin_tools(ToolRegistry& registry, const ToolEnv& env);

// recur's name, title and instructions for clients (the version is the caller's).
ServerInfo recur_server_info();

}  // namespace recur::mcp
