#include <cstdio>
#include <string>

#include "cli/cli.h"
#include "core/cpu_features.h"
#include "core/log.h"

int main(int argc, char** argv) {
  using namespace recur;
  CLI::App app{
      "recur: an LLM inference stack built to be optimized by an agent, and the agent loop that "
      "optimizes it.\nEvery verb answers with local, cheap feedback; add --json for machines."};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every verb");

  std::string log_level_name;
  app.add_option("--log-level", log_level_name, "stderr verbosity: error, warn, info, debug, trace")
      ->check(CLI::IsMember({"error", "warn", "info", "debug", "trace"}));
  std::string isa_name_flag;
  app.add_option("--isa", isa_name_flag,
                 "highest instruction set kernels may use: scalar, avx2, avx512 (default: best "
                 "the CPU has; also RECUR_ISA)")
      ->check(CLI::IsMember({"scalar", "avx2", "avx512"}));

  cli::Invocation inv;
  cli::register_all_commands(app, inv);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return cli::kExitUsage;
  }

  if (!log_level_name.empty()) set_log_level(*parse_log_level(log_level_name));
  if (!isa_name_flag.empty()) {
    if (auto s = set_isa_cap(*parse_isa(isa_name_flag)); !s) return cli::report_failure(s.error());
  }
  if (!inv.run) return cli::kExitUsage;
  return inv.run();
}
