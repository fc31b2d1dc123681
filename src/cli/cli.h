// The recur command line: each verb lives in its own file, src/cli/<verb>_command.cc, and
// registers itself with RECUR_CLI_COMMAND; main() adds every registered verb, sorted by name.
//
// A verb parses its flags and calls one library function. Results go to stdout (a table for
// people, or JSON with --json); logs go to stderr. Exit codes: 0 success, 1 the command ran
// and failed, 2 bad usage (unknown flag, bad value, invalid argument).
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/knobs.h"
#include "core/status.h"

namespace recur::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Verbs set `run` to the action chosen on the command line; main() calls it after parsing,
// so nothing runs until every flag has been validated.
struct Invocation {
  std::function<int()> run;
};

using RegisterFn = void (*)(CLI::App& app, Invocation& inv);

// Called by RECUR_CLI_COMMAND at static-initialisation time.
bool add_command(const char* name, RegisterFn fn);
// Registers every verb on `app`, in name order.
void register_all_commands(CLI::App& app, Invocation& inv);

// Knob values from --set name=value (validated before any verb runs).
Config& global_config();

// Prints a JSON document on stdout. Strings from user data (model metadata, generated text) may
// hold invalid UTF-8; they are printed with U+FFFD replacements instead of throwing.
void print_json(const nlohmann::json& j);

// Prints an error from a library call to stderr and returns the exit code: kExitUsage for
// invalid arguments (the user's to fix), kExitFailure otherwise.
int report_failure(const Error& error);

}  // namespace recur::cli

// RECUR_CLI_COMMAND(sysinfo, register_sysinfo) in the verb's own file.
#define RECUR_CLI_COMMAND(name, fn) \
  static const bool recur_cli_registered_##name = ::recur::cli::add_command(#name, fn)
