#include "loop/gate_state.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gate/gate.h"

namespace recur::agent {

const gate::Condition* GateState::deciding(const gate::GateSpec& spec) const {
  if (passed() || verdict.deciding < 0 || size_t(verdict.deciding) >= spec.conditions.size()) return nullptr;
  return &spec.conditions[size_t(verdict.deciding)];
}

namespace {

void collect_bounds(const gate::Expr& e, std::vector<MetricBound>& out) {
  if (e.op == gate::ExprOp::kAnd) {
    if (e.lhs) collect_bounds(*e.lhs, out);
    if (e.rhs) collect_bounds(*e.rhs, out);
    return;
  }
  if (!gate::is_comparison(e.op) || !e.lhs || !e.rhs) return;
  const bool call_left = e.lhs->op == gate::ExprOp::kCall && e.rhs->op == gate::ExprOp::kNumber;
  const bool call_right = e.rhs->op == gate::ExprOp::kCall && e.lhs->op == gate::ExprOp::kNumber;
  if (!call_left && !call_right) return;
  const bool less = e.op == gate::ExprOp::kLt || e.op == gate::ExprOp::kLe;
  const bool greater = e.op == gate::ExprOp::kGt || e.op == gate::ExprOp::kGe;
  if (!less && !greater) return;
  out.push_back({gate::request_for_call(call_left ? *e.lhs : *e.rhs), call_left ? less : greater,
                 call_left ? e.rhs->number : e.lhs->number});
}

}  // namespace

std::vector<MetricBound> metric_bounds(const gate::Expr& condition) {
  std::vector<MetricBound> out;
  collect_bounds(condition, out);
  return out;
}

std::optional<double> value_of(const GateState& g, const gate::MetricRequest& r) {
  auto it = g.values.find(r.key());
  if (it == g.values.end()) return std::nullopt;
  return it->second.value.value;
}

std::string distance_to_pass(const gate::GateSpec& spec, const GateState& g) {
  const gate::Condition* c = g.deciding(spec);
  if (c == nullptr) return "";
  for (const MetricBound& b : metric_bounds(c->expr)) {
    const std::optional<double> v = value_of(g, b.request);
    if (!v || (b.upper ? *v <= b.limit : *v >= b.limit)) continue;  // this bound holds
    return fmt::format("best reached {:.3g} on `{}`, the gate needs {} {:.3g}", *v, b.request.key(), b.upper ? "<=" : ">=",
                       b.limit);
  }
  return "";
}

std::optional<std::set<std::string>> knobs_read_from(const Feedback& f) {
  std::optional<std::set<std::string>> live;
  for (const std::string& n : f.notes) {
    if (!n.starts_with(kKnobsReadNote)) continue;
    live.emplace();
    std::string_view rest = std::string_view(n).substr(kKnobsReadNote.size());
    while (!rest.empty()) {
      const size_t comma = rest.find(", ");
      live->emplace(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
    }
  }
  return live;
}

GateState gate_state_from_feedback(const gate::GateSpec& spec, const Feedback& f) {
  gate::MetricValues values;
  for (const gate::MetricRequest& r : spec.requests) {
    const Metric* m = f.find_metric(r.key());
    if (m == nullptr) continue;
    gate::MetricValue v{.value = gate::Interval::point(m->value), .boolean = r.def->boolean, .unit = m->unit};
    if (m->ci95) v.value = {m->value, m->ci95->first, m->ci95->second};
    values[r.key()] = v;
  }
  gate::GateResult r = gate::evaluate_gate(spec, values, {}, f.cost_s);
  GateState state{std::move(r.verdict), std::move(r.values), knobs_read_from(f)};
  return state;
}

std::string knobs_read_note(const std::vector<std::string>& knobs) {
  std::string s(kKnobsReadNote);
  for (size_t i = 0; i < knobs.size(); ++i) s += (i ? ", " : "") + knobs[i];
  return s;
}

GateScore gate_score(const gate::GateVerdict& v) {
  GateScore s;
  for (const gate::ConditionResult& c : v.conditions) {
    if (c.outcome == gate::Outcome::kFail) ++s.failing;
    if (c.outcome == gate::Outcome::kInconclusive) ++s.inconclusive;
    // slack = (rhs - lhs) / max(|lhs|, |rhs|) for lhs <= rhs, so -log(1 + slack) = log(lhs / rhs):
    // a factor of 2 counts the same far from the threshold as near it.
    if (c.outcome != gate::Outcome::kPass && std::isfinite(c.slack) && c.slack < 0)
      s.violation += -std::log(std::max(1e-12, 1.0 + c.slack));
  }
  return s;
}

bool closer_to_pass(const GateScore& a, const GateScore& b) {
  if (a.failing != b.failing) return a.failing < b.failing;
  if (a.inconclusive != b.inconclusive) return a.inconclusive < b.inconclusive;
  // Relative slacks of a few percent are within the noise of one measurement: demand a margin.
  return a.violation < b.violation * 0.9 - 1e-12;
}

std::string GateScore::to_string() const {
  return fmt::format("{} failing, {} inconclusive, violation {:.3g}", failing, inconclusive, violation);
}

}  // namespace recur::agent
