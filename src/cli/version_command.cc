#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/cpu_features.h"
#include "core/version.h"

namespace recur::cli {
namespace {

void register_version(CLI::App& app, Invocation& inv) {
  auto* cmd = app.add_subcommand("version", "Print recur's version, build type and dispatch level");
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "Print a JSON object");
  cmd->callback([&inv, as_json] {
    inv.run = [as_json] {
      nlohmann::json j = {{"version", kRecurVersion},
                          {"build_type", kRecurBuildType},
                          {"compiler", kRecurCompiler},
                          {"isa", std::string(isa_name(active_isa()))}};
      if (*as_json) {
        print_json(j);
      } else {
        std::printf("recur %s (%s, %s, isa %s)\n", kRecurVersion, kRecurBuildType, kRecurCompiler,
                    std::string(isa_name(active_isa())).c_str());
      }
      return kExitOk;
    };
  });
}

}  // namespace

RECUR_CLI_COMMAND(version, register_version);

}  // namespace recur::cli
