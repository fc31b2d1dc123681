// `recur analyze`: the parent of every trace-analysis verb (cli/analyze.h). It only collects
// the verbs that registered themselves and requires one of them.
#include "cli/analyze.h"
#include "cli/verb_group.h"

namespace recur::cli {
namespace {

VerbGroup& analyze_verbs() {
  static VerbGroup verbs;
  return verbs;
}

void register_analyze(CLI::App& app, Invocation& inv) {
  analyze_verbs().register_on(
      app, "analyze", "Trace analyses: overlap, breakdown, diff, locks, critical path, HTA-compatible figures", inv);
}

}  // namespace

bool add_analyze_verb(const char* name, AnalyzeRegisterFn fn) { return analyze_verbs().add(name, fn); }

RECUR_CLI_COMMAND(analyze, register_analyze);

}  // namespace recur::cli
