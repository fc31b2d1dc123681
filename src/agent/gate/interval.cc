#include "gate/interval.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace recur::gate {

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "fail";
    case Outcome::kInconclusive: return "inconclusive";
  }
  return "?";
}

Interval operator+(const Interval& a, const Interval& b) { return {a.value + b.value, a.lo + b.lo, a.hi + b.hi}; }
Interval operator-(const Interval& a, const Interval& b) { return {a.value - b.value, a.lo - b.hi, a.hi - b.lo}; }
Interval operator-(const Interval& a) { return {-a.value, -a.hi, -a.lo}; }

Interval operator*(const Interval& a, const Interval& b) {
  // 0 * inf would be NaN; an infinite bound times zero contributes zero.
  auto mul = [](double x, double y) { return x == 0 || y == 0 ? 0.0 : x * y; };
  const double p[] = {mul(a.lo, b.lo), mul(a.lo, b.hi), mul(a.hi, b.lo), mul(a.hi, b.hi)};
  return {mul(a.value, b.value), *std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

Interval operator/(const Interval& a, const Interval& b) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (b.lo <= 0 && b.hi >= 0) return {b.value != 0 ? a.value / b.value : kInf, -kInf, kInf};
  const Interval inv{1 / b.value, 1 / b.hi, 1 / b.lo};
  Interval r = a * inv;
  r.value = a.value / b.value;
  return r;
}

std::string format_interval(const Interval& v) {
  if (v.is_point()) return fmt::format("{:.6g}", v.value);
  return fmt::format("{:.6g} [{:.6g}, {:.6g}]", v.value, v.lo, v.hi);
}

Comparison compare(ExprOp op, const Interval& lhs, const Interval& rhs) {
  // d = lhs - rhs over the intervals: d.lo is the pessimistic end for ">", d.hi for "<".
  const Interval d = lhs - rhs;
  const double scale = std::max({std::fabs(lhs.value), std::fabs(rhs.value), 1e-300});
  Comparison c;
  switch (op) {
    case ExprOp::kGe:
      c.outcome = d.lo >= 0 ? Outcome::kPass : d.hi < 0 ? Outcome::kFail : Outcome::kInconclusive;
      c.slack = d.lo / scale;
      break;
    case ExprOp::kGt:
      c.outcome = d.lo > 0 ? Outcome::kPass : d.hi <= 0 ? Outcome::kFail : Outcome::kInconclusive;
      c.slack = d.lo / scale;
      break;
    case ExprOp::kLe:
      c.outcome = d.hi <= 0 ? Outcome::kPass : d.lo > 0 ? Outcome::kFail : Outcome::kInconclusive;
      c.slack = -d.hi / scale;
      break;
    case ExprOp::kLt:
      c.outcome = d.hi < 0 ? Outcome::kPass : d.lo >= 0 ? Outcome::kFail : Outcome::kInconclusive;
      c.slack = -d.hi / scale;
      break;
    case ExprOp::kEq:
      c.outcome = d.lo == 0 && d.hi == 0 ? Outcome::kPass : (d.lo > 0 || d.hi < 0) ? Outcome::kFail
                                                                                     : Outcome::kInconclusive;
      c.slack = -std::max(std::fabs(d.lo), std::fabs(d.hi)) / scale;
      break;
    case ExprOp::kNe:
      c.outcome = (d.lo > 0 || d.hi < 0) ? Outcome::kPass : d.lo == 0 && d.hi == 0 ? Outcome::kFail
                                                                                     : Outcome::kInconclusive;
      c.slack = std::max(d.lo, -d.hi) / scale;
      break;
    default:
      c.outcome = Outcome::kInconclusive;
  }
  if (std::isnan(c.slack)) c.slack = 0;
  return c;
}

Outcome outcome_and(Outcome a, Outcome b) {
  if (a == Outcome::kFail || b == Outcome::kFail) return Outcome::kFail;
  if (a == Outcome::kPass && b == Outcome::kPass) return Outcome::kPass;
  return Outcome::kInconclusive;
}

Outcome outcome_or(Outcome a, Outcome b) {
  if (a == Outcome::kPass || b == Outcome::kPass) return Outcome::kPass;
  if (a == Outcome::kFail && b == Outcome::kFail) return Outcome::kFail;
  return Outcome::kInconclusive;
}

Outcome outcome_not(Outcome a) {
  return a == Outcome::kPass ? Outcome::kFail : a == Outcome::kFail ? Outcome::kPass : Outcome::kInconclusive;
}

}  // namespace recur::gate
