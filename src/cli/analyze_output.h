// Shared by the `recur analyze` verbs in this folder: parse selector flags, time the work,
// check the Feedback record and print it as a table for people or as JSON (the Feedback
// record plus a "details" object with every figure), with the reader's recovery notes on both.
// Header-only: the CLI builds only
// *_command.cc files.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyze/selector.h"
#include "cli/cli.h"
#include "cli/trace_input.h"
#include "core/feedback.h"

namespace recur::cli {

class AnalysisClock {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The TRACE argument every verb takes, and the --json flag.
inline void add_trace_argument(CLI::App* cmd, std::string& path, const char* name = "TRACE",
                               const char* help = "trace file (Chrome JSON, .json.gz, Kineto, Perfetto) or a folder of rank traces") {
  cmd->add_option(name, path, help)->required();
}
inline void add_json_flag(CLI::App* cmd, bool& json, const char* details) {
  cmd->add_flag("--json", json, fmt::format("Print the Feedback record (JSON) with {} under \"details\"", details));
}

// A selector given on the command line; errors are usage errors that name the flag.
inline Result<analyze::Selector> parse_selector_flag(std::string_view flag, const std::string& text) {
  auto s = analyze::Selector::parse(text);
  if (!s) return unexpected(s.error().with_context(flag));
  return s;
}

// The notes of several loaded traces, in order (diff reads two).
inline std::vector<std::string> joined_notes(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// Prints `text`, or with --json the record and its details; exit 0, or 1 if the record does
// not validate (a bug in the analysis, reported rather than printed). `trace_notes` (the
// reader's recoveries, LoadedTrace::notes) go first in the record's notes and as "note: ..."
// lines above the text: figures built on guessed durations must say so.
inline int print_analysis(bool json, Feedback f, const AnalysisClock& clock, nlohmann::json details,
                          const std::string& text, const std::vector<std::string>& trace_notes) {
  f.cost_s = clock.seconds();
  f.notes.insert(f.notes.begin(), trace_notes.begin(), trace_notes.end());
  if (auto s = validate_feedback(f); !s) {
    std::fprintf(stderr, "recur: internal error: %s: %s\n", f.probe.c_str(), s.error().to_string().c_str());
    return kExitFailure;
  }
  if (json) {
    nlohmann::json j = feedback_to_json(f);
    j["details"] = std::move(details);
    print_json(j);
  } else {
    for (const std::string& note : trace_notes) fmt::print("note: {}\n", note);
    fmt::print("{}", text);
  }
  return kExitOk;
}

}  // namespace recur::cli
