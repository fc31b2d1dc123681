// `recur analyze VERB`: trace analyses (src/analyze). Each VERB lives in its own file,
// src/cli/analyze_<verb>_command.cc, and registers itself on the `analyze` subcommand with
// RECUR_ANALYZE_VERB, so verbs land without editing a shared list.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace recur::cli {

using AnalyzeRegisterFn = void (*)(CLI::App& analyze, Invocation& inv);

// Called by RECUR_ANALYZE_VERB at static-initialisation time.
bool add_analyze_verb(const char* name, AnalyzeRegisterFn fn);

}  // namespace recur::cli

// RECUR_ANALYZE_VERB(overlap, register_overlap) in the verb's own file.
#define RECUR_ANALYZE_VERB(name, fn) \
  static const bool recur_analyze_registered_##name = ::recur::cli::add_analyze_verb(#name, fn)
