// Feedback: the one record every probe returns (shared/DESIGN.md, "Probes and the Feedback record").
//
// A probe is one cheap experiment with a cost tier (0 static/deterministic, 1 kernel correctness,
// 2 microbenchmark, 3 engine benchmark, 4 serving end to end). Its Feedback says what was tested
// (subject, hypothesis), what came out (verdict, metrics), which components explain the effect
// (attribution), and what to try next. It is compact enough for one screen (render_feedback) and
// machine-readable (feedback_to_json / feedback_from_json), and it is what an agent reads.
//
// Probe-specific outcomes (bench's faster/slower/same/inconclusive, check's pass/fail counts) go in
// metrics and notes; `verdict` is always relative to the hypothesis.
// Plain values; no shared state, so every function here is thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace recur {

enum class Verdict {
  kConfirmed,     // the hypothesis held
  kRefuted,       // the experiment contradicts it
  kInconclusive,  // the experiment could not decide (more rounds, a quieter machine)
  kFailed,        // the experiment itself failed (a crash, wrong output, a missing tool)
};
std::string_view verdict_name(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view name);

struct Metric {
  std::string name;                                // "time_us", "bandwidth_frac"
  double value = 0;
  std::optional<std::pair<double, double>> ci95;   // [lo, hi]
  std::string unit;                                // "" when dimensionless
};

struct Attribution {
  std::string component;  // "kernel:kda_decode/prologue"; "unattributed" for the remainder
  double share = 0;       // fraction of the observed effect this component explains, in [0, 1]
  std::string evidence;   // one line: how the share was measured
};

inline constexpr std::string_view kUnattributed = "unattributed";

struct Feedback {
  std::string probe;   // "bench.kernel", "check.kernel", "bench.callgrind", "bench.cmd"
  int tier = 0;        // 0..4
  double cost_s = 0;   // wall time the probe took
  std::string subject;
  std::string hypothesis;
  Verdict verdict = Verdict::kInconclusive;
  std::vector<Metric> metrics;
  std::vector<Attribution> attribution;
  // True when `attribution` is a decomposition of the whole (an instruction split, a trace
  // diff): then its shares sum to 1 and the remainder is an explicit `unattributed` entry.
  bool attribution_is_decomposition = false;
  std::vector<std::string> notes;
  std::vector<std::string> next;
  std::map<std::string, std::string> artifacts;
  // The action the experiment carried out, a JSON object as text ("" = none): the agent's typed
  // proposal (agent/proposal.h). The record holds it as an object in its own member "action",
  // so a resumed run replays exactly what was proposed.
  std::string action;

  // Appends a metric and returns it for further edits.
  Metric& add_metric(std::string name, double value, std::string unit = "");
  // The metric of that name, or null.
  const Metric* find_metric(std::string_view name) const;
};

// Checks the record: a probe name, tier in 0..4, cost >= 0, finite metric values, ci95 with
// lo <= hi, shares in [0, 1], and for decompositions shares summing to 1 (within 1e-6) with an
// explicit `unattributed` entry. Errors name the offending field ("attribution[2].share: 1.3 is
// outside [0, 1]").
Status validate_feedback(const Feedback& f);

nlohmann::json feedback_to_json(const Feedback& f);
// Parses what feedback_to_json writes; errors name the field that is missing or mistyped.
Result<Feedback> feedback_from_json(const nlohmann::json& j);
Result<Feedback> feedback_from_json_text(std::string_view text);

// One screen for people:
//   bench.kernel (tier 2, 1.8 s)  kernel:rmsnorm variant=avx2 vs scalar shape=M64,N4096
//   hypothesis  avx2 is faster than scalar
//   verdict     confirmed
//   time_us     41.2 us  [40.8, 41.7]
//   ...
std::string render_feedback(const Feedback& f);

}  // namespace recur
