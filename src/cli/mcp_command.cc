// `recur mcp [--allow-exec PROG,...] [--allow-candidates [--candidate-build-cmd CMD] [--candidate-runner P]] [--call-timeout-s N] [--max-output-bytes N]
// [--max-request-bytes N] [--max-depth N]`: an MCP server over stdio (docs/mcp.md). Protocol
// messages only on stdout, one per line; logs on stderr. Paths are confined to the working
// directory. Exits 0 when stdin ends.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/cli.h"
#include "core/version.h"
#include "mcp/stdio_transport.h"
#include "mcp/tools/builtin_tools.h"

namespace recur::cli {
namespace {

struct McpFlags {
  mcp::Limits limits;
  std::vector<std::string> allow_exec;
  bool allow_candidates = false;
  std::string candidate_build_cmd, candidate_runner;
};

int run_mcp(const McpFlags& f) {
  std::error_code ec;
  mcp::ToolEnv env;
  env.recur_exe = std::filesystem::canonical("/proc/self/exe", ec).string();
  if (ec) return report_failure(Error(ErrorCode::kIo, "mcp: cannot find the recur binary (/proc/self/exe): " + ec.message()));
  env.root = std::filesystem::canonical(std::filesystem::current_path(), ec).string();
  if (ec) return report_failure(Error(ErrorCode::kIo, "mcp: working directory: " + ec.message()));
  env.allow_exec = f.allow_exec;
  env.allow_candidates = f.allow_candidates;
  env.candidate_build_cmd = f.candidate_build_cmd;
  env.candidate_runner = f.candidate_runner;
  mcp::ToolRegistry tools;
  if (auto s = mcp::register_builtin_tools(tools, env); !s) return report_failure(s.error());
  mcp::Limits limits = f.limits;
  limits.allow_exec = f.allow_exec;
  mcp::ServerInfo info = mcp::recur_server_info();
  info.version = kRecurVersion;
  mcp::Server server(std::move(tools), limits, std::move(info));
  std::fprintf(stderr, "recur mcp: serving on stdio from %s (%zu programs allowed to run)\n", env.root.c_str(),
               f.allow_exec.size());
  return mcp::serve_stdio(server, stdin, stdout) == 0 ? kExitOk : kExitFailure;
}

void register_mcp(CLI::App& app, Invocation& inv) {
  auto f = std::make_shared<McpFlags>();
  auto* cmd = app.add_subcommand(
      "mcp", "Serve recur's probes (knobs, trace analyses, bench, check, gate, engine bench, journal, episodes, "
             "agent steps) as MCP tools over stdio: JSON-RPC, one message per line. Speaks the initialize handshake "
             "(protocol 2024-11-05 .. 2025-11-25) and the 2026-07-28 per-request _meta with server/discover. "
             "docs/mcp.md shows how to register it with an MCP client.");
  cmd->add_option("--allow-exec", f->allow_exec,
                  "programs the bench_cmd tool may run (comma-separated; default none, and no bench_cmd tool)")
      ->delimiter(',');
  cmd->add_flag("--allow-candidates", f->allow_candidates,
                "add the candidate_build tool: a client's patch is built (a compiler runs) and its code run in a "
                "git worktree of the served folder (docs/candidates.md); default off");
  cmd->add_option("--candidate-build-cmd", f->candidate_build_cmd, "candidate_build: the build command (sh -c in the "
                                                                  "worktree; default recur's runner target)");
  cmd->add_option("--candidate-runner", f->candidate_runner, "candidate_build: the built runner, relative to the worktree");
  cmd->add_option("--call-timeout-s", f->limits.call_timeout_s, "wall-time budget of one tool call, seconds")
      ->check(CLI::Range(1.0, 86400.0))->capture_default_str();
  cmd->add_option("--max-output-bytes", f->limits.max_output_bytes, "output budget of one tool call, bytes")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30))->capture_default_str();
  cmd->add_option("--max-request-bytes", f->limits.max_line_bytes, "largest accepted message (one line), bytes")
      ->check(CLI::Range(size_t{1024}, size_t{64} << 20))->capture_default_str();
  cmd->add_option("--max-depth", f->limits.max_depth, "deepest accepted JSON nesting")
      ->check(CLI::Range(4, 1000))->capture_default_str();
  cmd->callback([&inv, f] { inv.run = [f] { return run_mcp(*f); }; });
}

}  // namespace

RECUR_CLI_COMMAND(mcp, register_mcp);

}  // namespace recur::cli
