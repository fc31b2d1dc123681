// A verb whose sub-verbs live in their own files and register themselves at static-initialisation
// time (`recur analyze overlap`, `recur agent report`), so sub-verbs land without a shared list.
// The parent's file owns one VerbGroup (a function-local static, so registration order across
// files does not matter) and calls register_on from its RECUR_CLI_COMMAND function.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace recur::cli {

using SubVerbRegisterFn = void (*)(CLI::App& parent, Invocation& inv);

class VerbGroup {
 public:
  bool add(const char* name, SubVerbRegisterFn fn) {
    verbs_.emplace_back(name, fn);
    return true;
  }

  // Adds the parent verb to `app` and every registered sub-verb under it, in name order; the
  // command line must name one of them.
  void register_on(CLI::App& app, const char* name, const char* description, Invocation& inv) const {
    CLI::App* parent = app.add_subcommand(name, description);
    parent->require_subcommand(1);
    auto verbs = verbs_;
    std::sort(verbs.begin(), verbs.end());
    for (auto& [verb, fn] : verbs) fn(*parent, inv);
  }

 private:
  std::vector<std::pair<std::string, SubVerbRegisterFn>> verbs_;
};

}  // namespace recur::cli
