#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "core/cpu_features.h"
#include "core/log.h"
#include "core/spawn.h"
#include "kernels/gemm/gemm_amx.h"

// core.isa (core/cpu_features.cc) and kernel.gemm.amx's probe backend (kernels/gemm/gemm_amx.h) are
// applied here, once, after --set: process-wide settings.
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

  std::vector<std::string> assignments;
  app.add_option("--set", assignments, "Set a knob for this run: --set name=value (repeatable; recur knobs lists them)")
      ->type_name("NAME=VALUE");

  // --set, --isa and --log-level may also follow the verb (`recur generate --set k=v`): a verb
  // passes the options it does not know up to recur (set before the verbs, which inherit it).
  app.fallthrough();
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
  for (const std::string& a : assignments) {
    if (auto s = cli::global_config().set_assignment(a); !s) return cli::report_failure(s.error());
  }
  // --isa wins over --set core.isa; "auto" keeps the detected level (or RECUR_ISA).
  std::string isa = isa_name_flag.empty() ? *cli::global_config().get("core.isa") : isa_name_flag;
  if (isa != "auto") {
    if (auto s = set_isa_cap(*parse_isa(isa)); !s) return cli::report_failure(s.error());
  }
  // kernel.gemm.amx for the registry's AMX probes (RECUR_AMX wins where set); on is refused here,
  // naming the reason, where the hardware would not run. The engine reads the knob at load.
  if (auto s = gemm::apply_process_amx_mode(cli::global_config()); !s) return cli::report_failure(s.error());
  if (!inv.run) return cli::kExitUsage;
  // A killed recur takes the programs its probes started with it (core/spawn.h).
  kill_children_on_termination_signals();
  try {
    return inv.run();
  } catch (const std::exception& e) {
    // Library code reports errors as Status; this is the last line against a bug escaping.
    std::fprintf(stderr, "recur: internal error: %s\n", e.what());
    return cli::kExitFailure;
  }
}
