// Interval arithmetic and three-valued comparisons: how a gate turns metrics with confidence
// intervals into pass, fail or inconclusive (docs/agent.md, "Verdicts").
//
// A measured metric is a point estimate with a 95% CI [lo, hi]; a deterministic one (token
// equality, a check's max error, a constant) is the point interval [v, v]. Arithmetic carries the
// intervals through (the result holds every value the operands' intervals allow), so a
// comparison can ask: does it hold even at the pessimistic ends of the CIs (pass), is it violated
// even at the optimistic ends (fail), or neither (inconclusive)?
//
//   prefill_tok_s(c) >= 0.95 * prefill_tok_s(b)
//   pass          when lo(c) >= 0.95 * hi(b)
//   fail          when hi(c) <  0.95 * lo(b)
//   inconclusive  otherwise
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "gate/expr.h"

namespace recur::gate {

enum class Outcome { kPass, kFail, kInconclusive };
std::string_view outcome_name(Outcome o);  // "pass", "fail", "inconclusive"

struct Interval {
  double value = 0;  // point estimate (median)
  double lo = 0, hi = 0;
  static Interval point(double v) { return {v, v, v}; }
  bool is_point() const { return lo == hi; }
};

Interval operator+(const Interval& a, const Interval& b);
Interval operator-(const Interval& a, const Interval& b);
Interval operator*(const Interval& a, const Interval& b);
// A divisor whose interval contains 0 gives (-inf, +inf).
Interval operator/(const Interval& a, const Interval& b);
Interval operator-(const Interval& a);

// "1234 [1200, 1250]" or "0.5" for points.
std::string format_interval(const Interval& v);

struct Comparison {
  Outcome outcome = Outcome::kInconclusive;
  // Signed margin at the pessimistic ends, relative to the larger |value| of the two sides:
  // > 0 holds with room to spare, < 0 does not hold at the pessimistic ends. Ranks passing
  // conditions (the tightest one is reported as deciding).
  double slack = 0;
};

// `op` must satisfy is_comparison().
Comparison compare(ExprOp op, const Interval& lhs, const Interval& rhs);

// Kleene's three-valued logic: fail dominates and, pass dominates or.
Outcome outcome_and(Outcome a, Outcome b);
Outcome outcome_or(Outcome a, Outcome b);
Outcome outcome_not(Outcome a);

}  // namespace recur::gate
