// A realistic synthetic agent run for the report's tests (report_test.cc, and through
// agent_report_sample, tests/agent_report_cli_test.sh): three gate evaluations whose metrics
// carry CIs and thresholds, an attribution, kept and reverted changes, a knob the base did not
// set, trace artifacts (relative, absolute, missing), and text with <script>, & and quotes.
// Times are rewritten to a fixed, spread-out schedule so the timeline has something to show.
// Test support only.
#pragma once

#include <string>

#include "journal/journal.h"
#include "core/status.h"

namespace recur::agent {

inline constexpr const char* kSampleRunName = "kda-sample";
// Text planted in step 1's hypothesis: if the report did not escape it, a browser would run it
// and set this attribute on <body>.
inline constexpr const char* kSampleScript = "<script>document.body.setAttribute('data-pwned','1')</script>";
inline constexpr double kSampleStart = 1714568400;  // 2024-05-01 13:00:00 UTC

struct SampleRun {
  std::string journal_path;  // DIR/journal.db
  std::string absolute_trace;  // step 2's trace, an absolute path under DIR/abs/
};

// Writes DIR/journal.db with the run kda-sample (7 experiments: keep 2, revert 1, none 4;
// final config = base + steps 2 and 5) and the trace files DIR/traces/gate0.trace.json and
// DIR/abs/step2 trace.json (a space in the name). Step 5's "report" artifact does not exist.
Result<SampleRun> write_sample_run(const std::string& dir);

}  // namespace recur::agent
