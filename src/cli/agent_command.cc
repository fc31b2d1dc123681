// `recur agent`: the parent of the agent's verbs (cli/agent.h). It only collects the verbs that
// registered themselves and requires one of them.
#include "cli/agent.h"

namespace recur::cli {

VerbGroup& agent_verbs() {
  static VerbGroup verbs;
  return verbs;
}

namespace {

void register_agent(CLI::App& app, Invocation& inv) {
  agent_verbs().register_on(app, "agent", "The infra agent: its runs, from the journal (docs/agent.md)", inv);
}

}  // namespace

RECUR_CLI_COMMAND(agent, register_agent);

}  // namespace recur::cli
