#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli.h"

namespace recur::cli {
namespace {

std::vector<std::pair<std::string, RegisterFn>>& registry() {
  static std::vector<std::pair<std::string, RegisterFn>> commands;
  return commands;
}

}  // namespace

bool add_command(const char* name, RegisterFn fn) {
  registry().emplace_back(name, fn);
  return true;
}

void register_all_commands(CLI::App& app, Invocation& inv) {
  auto commands = registry();
  std::sort(commands.begin(), commands.end());
  for (auto& [name, fn] : commands) fn(app, inv);
}

Config& global_config() {
  static Config config;
  return config;
}

void print_json(const nlohmann::json& j) {
  std::puts(j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

int report_failure(const Error& error) {
  std::fprintf(stderr, "recur: %s\n", error.to_string().c_str());
  return error.code() == ErrorCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

}  // namespace recur::cli
