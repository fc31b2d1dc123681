// `recur agent VERB`: the infra agent (src/agent). Each VERB lives in its own file,
// src/cli/agent_<verb>_command.cc, and registers itself on the `agent` subcommand with
// RECUR_AGENT_VERB (cli/verb_group.h), so `run`, `resume` and `report` land without editing a
// shared list.
#pragma once

#include "cli/verb_group.h"

namespace recur::cli {

// The `agent` verb's sub-verbs (agent_command.cc).
VerbGroup& agent_verbs();

}  // namespace recur::cli

// RECUR_AGENT_VERB(report, register_report) in the verb's own file; register_report(CLI::App&
// agent, Invocation&) adds the sub-verb to `agent`.
#define RECUR_AGENT_VERB(name, fn) \
  static const bool recur_agent_registered_##name = ::recur::cli::agent_verbs().add(#name, fn)
