// The recur command line: each verb lives in its own file and registers itself here.
//
// A verb parses its flags and calls one library function. Results go to stdout (a table for
// people, or JSON with --json); logs go to stderr. Exit codes: 0 success, 1 the command ran
// and failed, 2 bad usage (unknown flag, bad value).
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace recur::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Verbs set `run` to the action chosen on the command line; main() calls it after parsing.
struct Invocation {
  std::function<int()> run;
};

// Prints an error from a library call to stderr and returns kExitFailure (or kExitUsage
// for invalid arguments, which are the user's to fix).
int report_failure(const Error& error);

void register_version(CLI::App& app, Invocation& inv);
void register_sysinfo(CLI::App& app, Invocation& inv);

}  // namespace recur::cli
