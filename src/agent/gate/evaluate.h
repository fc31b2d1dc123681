// Evaluating gate conditions on measured metrics, and the overall verdict.
//
// Each condition evaluates to pass, fail or inconclusive (interval.h: comparisons at the
// pessimistic/optimistic ends of the CIs, Kleene logic for and/or/not). The gate is the
// conjunction of its conditions; the deciding condition is
//   fail          the first failing condition (in spec order),
//   inconclusive  the first inconclusive one (none failed),
//   pass          the passing condition with the least slack (the tightest).
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gate/expr.h"
#include "gate/interval.h"

namespace recur::gate {

struct MetricValue {
  Interval value;        // a point interval when there is no CI
  bool boolean = false;  // truth metric: value 1 holds, 0 does not
  std::string unit;
};
// By MetricRequest::key(): "prefill_tok_s(candidate)".
using MetricValues = std::map<std::string, MetricValue, std::less<>>;

struct ConditionResult {
  std::string text;  // the condition as written
  Outcome outcome = Outcome::kInconclusive;
  double slack = 0;  // Comparison::slack; +inf for a truth metric that holds, -inf for one that does not
  std::vector<std::string> details;  // one per comparison or truth metric: "lhs 1.2e3 [1.1e3, 1.3e3] >= rhs ..."
};

// Evaluates a checked condition. Fails (kNotFound) when a metric it calls is missing from `values`.
Result<ConditionResult> evaluate_condition(const Expr& e, std::string_view text, const MetricValues& values);

struct GateVerdict {
  Outcome outcome = Outcome::kInconclusive;
  int deciding = -1;   // index into conditions; -1 when there are none
  std::string reason;  // "condition 2 `...` failed: ..."
  std::vector<ConditionResult> conditions;
};

// The conjunction of the conditions and the one that decided it (see above). No conditions:
// inconclusive ("nothing to decide").
GateVerdict decide_gate(std::vector<ConditionResult> conditions);

}  // namespace recur::gate
