#include "gate/evaluate.h"

#include <cmath>
#include <limits>
#include <variant>

#include <fmt/format.h>

#include "gate/metrics.h"

namespace recur::gate {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Truth {
  Outcome outcome;
  double slack;
};
using Value = std::variant<Interval, Truth>;

struct Evaluator {
  const MetricValues& values;
  std::vector<std::string>& details;

  Result<Value> call(const Expr& e) {
    const std::string key = request_for_call(e).key();
    auto it = values.find(key);
    if (it == values.end()) return not_found("no measurement of {}", key);
    const MetricValue& m = it->second;
    if (!m.boolean) return Value(m.value);
    const bool holds = m.value.value != 0;
    details.push_back(fmt::format("{} = {}", key, holds ? "true" : "false"));
    return Value(Truth{holds ? Outcome::kPass : Outcome::kFail, holds ? kInf : -kInf});
  }

  Result<Interval> number(const Expr& e) {
    RECUR_ASSIGN_OR_RETURN(Value v, visit(e));
    if (auto* i = std::get_if<Interval>(&v)) return *i;
    return invalid_argument("expected a number at offset {}", e.offset);
  }

  Result<Truth> truth(const Expr& e) {
    RECUR_ASSIGN_OR_RETURN(Value v, visit(e));
    if (auto* t = std::get_if<Truth>(&v)) return *t;
    return invalid_argument("expected a truth value at offset {}", e.offset);
  }

  Result<Value> visit(const Expr& e) {
    switch (e.op) {
      case ExprOp::kNumber: return Value(Interval::point(e.number));
      case ExprOp::kCall: return call(e);
      case ExprOp::kNeg: {
        RECUR_ASSIGN_OR_RETURN(Interval a, number(*e.lhs));
        return Value(-a);
      }
      case ExprOp::kNot: {
        RECUR_ASSIGN_OR_RETURN(Truth a, truth(*e.lhs));
        return Value(Truth{outcome_not(a.outcome), -a.slack});
      }
      case ExprOp::kAnd:
      case ExprOp::kOr: {
        RECUR_ASSIGN_OR_RETURN(Truth a, truth(*e.lhs));
        RECUR_ASSIGN_OR_RETURN(Truth b, truth(*e.rhs));
        if (e.op == ExprOp::kAnd) return Value(Truth{outcome_and(a.outcome, b.outcome), std::min(a.slack, b.slack)});
        return Value(Truth{outcome_or(a.outcome, b.outcome), std::max(a.slack, b.slack)});
      }
      default: break;
    }
    RECUR_ASSIGN_OR_RETURN(Interval a, number(*e.lhs));
    RECUR_ASSIGN_OR_RETURN(Interval b, number(*e.rhs));
    switch (e.op) {
      case ExprOp::kAdd: return Value(a + b);
      case ExprOp::kSub: return Value(a - b);
      case ExprOp::kMul: return Value(a * b);
      case ExprOp::kDiv: return Value(a / b);
      default: break;
    }
    Comparison c = compare(e.op, a, b);
    details.push_back(fmt::format("{} {} {} {}: {} (slack {:+.3g})", expr_to_string(*e.lhs), format_interval(a),
                                  expr_op_symbol(e.op), format_interval(b), outcome_name(c.outcome), c.slack));
    return Value(Truth{c.outcome, c.slack});
  }
};

}  // namespace

Result<ConditionResult> evaluate_condition(const Expr& e, std::string_view text, const MetricValues& values) {
  ConditionResult r;
  r.text = std::string(text);
  Evaluator ev{values, r.details};
  RECUR_ASSIGN_OR_RETURN(Truth t, ev.truth(e));
  r.outcome = t.outcome;
  r.slack = t.slack;
  return r;
}

GateVerdict decide_gate(std::vector<ConditionResult> conditions) {
  GateVerdict v;
  v.conditions = std::move(conditions);
  const auto& cs = v.conditions;
  if (cs.empty()) {
    v.reason = "no conditions: nothing to decide";
    return v;
  }
  auto first = [&](Outcome o) {
    for (size_t i = 0; i < cs.size(); ++i)
      if (cs[i].outcome == o) return int(i);
    return -1;
  };
  auto describe = [&](int i) {
    std::string s = fmt::format("condition {} `{}`", i + 1, cs[size_t(i)].text);
    if (!cs[size_t(i)].details.empty()) s += ": " + cs[size_t(i)].details.front();
    for (size_t d = 1; d < cs[size_t(i)].details.size(); ++d) s += "; " + cs[size_t(i)].details[d];
    return s;
  };
  if (int i = first(Outcome::kFail); i >= 0) {
    v.outcome = Outcome::kFail;
    v.deciding = i;
    v.reason = fmt::format("failed by {}", describe(i));
  } else if (int j = first(Outcome::kInconclusive); j >= 0) {
    v.outcome = Outcome::kInconclusive;
    v.deciding = j;
    v.reason = fmt::format("undecided by {} (the CIs straddle the bound; more runs would narrow them)", describe(j));
  } else {
    v.outcome = Outcome::kPass;
    int tight = 0;
    for (size_t k = 1; k < cs.size(); ++k)
      if (cs[k].slack < cs[size_t(tight)].slack) tight = int(k);
    v.deciding = tight;
    v.reason = fmt::format("all {} conditions pass; the tightest is {}", cs.size(), describe(tight));
  }
  return v;
}

}  // namespace recur::gate
