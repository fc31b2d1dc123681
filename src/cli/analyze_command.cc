// `recur analyze`: the parent of every trace-analysis verb (cli/analyze.h). It only collects
// the verbs that registered themselves and requires one of them.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cli/analyze.h"

namespace recur::cli {
namespace {

std::vector<std::pair<std::string, AnalyzeRegisterFn>>& analyze_verbs() {
  static std::vector<std::pair<std::string, AnalyzeRegisterFn>> verbs;
  return verbs;
}

void register_analyze(CLI::App& app, Invocation& inv) {
  CLI::App* analyze = app.add_subcommand(
      "analyze",
      "Trace analyses: overlap, breakdown, diff, locks, critical path, HTA-compatible figures");
  analyze->require_subcommand(1);
  auto verbs = analyze_verbs();
  std::sort(verbs.begin(), verbs.end());
  for (auto& [name, fn] : verbs) fn(*analyze, inv);
}

}  // namespace

bool add_analyze_verb(const char* name, AnalyzeRegisterFn fn) {
  analyze_verbs().emplace_back(name, fn);
  return true;
}

RECUR_CLI_COMMAND(analyze, register_analyze);

}  // namespace recur::cli
