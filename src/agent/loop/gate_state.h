// The agent's view of one gate evaluation, rebuilt from the gate's Feedback record alone (so a
// replayed run sees exactly what the original saw), and a score that orders configurations by
// how far they are from passing.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/feedback.h"
#include "gate/evaluate.h"
#include "gate/spec.h"

namespace recur::agent {

// The note a gate's Feedback carries with the knobs its workload read under the candidate arm
// ("knobs read under cand: a, b"); the loop writes it, gate_state_from_feedback reads it back.
inline constexpr std::string_view kKnobsReadNote = "knobs read under the candidate arm: ";
std::string knobs_read_note(const std::vector<std::string>& knobs);
// The knobs a gate record's note names; nullopt when it has none (program workloads).
std::optional<std::set<std::string>> knobs_read_from(const Feedback& f);

struct GateState {
  gate::GateVerdict verdict;
  gate::MetricValues values;
  // The knobs the gate's workload read under the candidate's configuration: a change to any
  // other knob cannot change what the gate measures. Absent when unknown (program workloads).
  std::optional<std::set<std::string>> live_knobs;
  bool passed() const { return verdict.outcome == gate::Outcome::kPass; }
  // The deciding condition (failing first, then inconclusive); null when the gate passed or
  // has none.
  const gate::Condition* deciding(const gate::GateSpec& spec) const;
};

// Metric values from the Feedback's metrics (value and ci95), the verdict re-evaluated from them.
GateState gate_state_from_feedback(const gate::GateSpec& spec, const Feedback& f);

// A comparison `metric(...) OP number` (either side) in a condition, also inside its `and`s.
struct MetricBound {
  gate::MetricRequest request;
  bool upper = false;  // the metric must stay at or below `limit` (else at or above)
  double limit = 0;
};
std::vector<MetricBound> metric_bounds(const gate::Expr& condition);

// The measured value of a metric call in this state, if measured.
std::optional<double> value_of(const GateState& g, const gate::MetricRequest& r);

// How far the deciding condition is from holding, for an honest ending: "best reached 0.54 on
// `speedup(cand vs dot)`, the gate needs >= 2.5"; "" when it bounds no measured metric.
std::string distance_to_pass(const gate::GateSpec& spec, const GateState& g);

// Lexicographic: fewer failing conditions, then fewer inconclusive ones, then less violation
// (over the comparisons that do not hold, the sum of log(lhs / rhs): how many e-folds each is
// from its threshold).
struct GateScore {
  int failing = 0;
  int inconclusive = 0;
  double violation = 0;
  std::string to_string() const;
};
GateScore gate_score(const gate::GateVerdict& v);
// a is strictly closer to passing than b.
bool closer_to_pass(const GateScore& a, const GateScore& b);

}  // namespace recur::agent
