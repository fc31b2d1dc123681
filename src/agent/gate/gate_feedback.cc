// evaluate_gate(): conditions on measured values -> verdict -> the gate's Feedback record.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gate/gate.h"

namespace recur::gate {

Verdict verdict_for_outcome(Outcome o) {
  switch (o) {
    case Outcome::kPass: return Verdict::kConfirmed;
    case Outcome::kFail: return Verdict::kRefuted;
    case Outcome::kInconclusive: return Verdict::kInconclusive;
  }
  return Verdict::kInconclusive;
}

namespace {

bool all_measured(const Expr& e, const MetricValues& values) {
  if (e.op == ExprOp::kCall) return values.count(request_for_call(e).key()) > 0;
  if (e.lhs && !all_measured(*e.lhs, values)) return false;
  if (e.rhs && !all_measured(*e.rhs, values)) return false;
  return true;
}

}  // namespace

GateResult evaluate_gate(const GateSpec& spec, MetricValues values, std::vector<Feedback> probes, double cost_s) {
  std::vector<ConditionResult> results;
  for (const Condition& c : spec.conditions) {
    ConditionResult r;
    r.text = c.text;
    r.outcome = Outcome::kInconclusive;
    if (!all_measured(c.expr, values)) {
      r.details.push_back("not evaluated: the run stopped before its metrics were measured");
    } else if (auto e = evaluate_condition(c.expr, c.text, values)) {
      r = std::move(*e);
    } else {
      r.details.push_back(e.error().message());
    }
    results.push_back(std::move(r));
  }
  GateResult out;
  out.verdict = decide_gate(std::move(results));
  out.values = std::move(values);
  out.probes = std::move(probes);

  Feedback& f = out.feedback;
  f.probe = "gate";
  f.tier = 0;
  for (const Feedback& p : out.probes) f.tier = std::max(f.tier, p.tier);
  f.cost_s = cost_s;
  std::vector<std::string> arms;
  for (const Arm& a : spec.arms) arms.push_back(a.name);
  f.subject = fmt::format("gate:{}{} arms={}", spec.name, spec.path.empty() ? "" : " spec=" + spec.path,
                          fmt::join(arms, ","));
  f.hypothesis = spec.description.empty() ? fmt::format("all {} conditions of {} hold", spec.conditions.size(), spec.name)
                                          : spec.description;
  f.verdict = verdict_for_outcome(out.verdict.outcome);
  for (const auto& [key, v] : out.values) {
    Metric& m = f.add_metric(key, v.value.value, v.unit);
    if (!v.value.is_point() && std::isfinite(v.value.lo) && std::isfinite(v.value.hi))
      m.ci95 = std::pair(v.value.lo, v.value.hi);
  }
  int counts[3] = {0, 0, 0};
  for (const ConditionResult& c : out.verdict.conditions) ++counts[int(c.outcome)];
  f.add_metric("conditions_pass", counts[int(Outcome::kPass)]);
  f.add_metric("conditions_fail", counts[int(Outcome::kFail)]);
  f.add_metric("conditions_inconclusive", counts[int(Outcome::kInconclusive)]);
  f.notes.push_back(fmt::format("gate {}: {}", outcome_name(out.verdict.outcome), out.verdict.reason));
  for (size_t i = 0; i < out.verdict.conditions.size(); ++i) {
    const ConditionResult& c = out.verdict.conditions[i];
    f.notes.push_back(fmt::format("condition {} {}: `{}`{}{}", i + 1, outcome_name(c.outcome), c.text,
                                  c.details.empty() ? "" : ": ", fmt::join(c.details, "; ")));
  }
  if (out.verdict.outcome == Outcome::kInconclusive)
    f.next.push_back(fmt::format("rerun with more runs ([workload.{}] runs) or a longer kernel budget_s to narrow the "
                                 "CIs",
                                 spec.program ? "program" : "engine"));
  for (const Feedback& p : out.probes) {
    if (p.verdict == Verdict::kFailed) f.notes.push_back(fmt::format("probe {} failed: {}", p.probe, p.subject));
  }
  if (spec.path.size()) f.artifacts["spec"] = spec.path;
  // The probes' artifacts (traces) travel with the gate's record: it is the one the journal keeps.
  for (const Feedback& p : out.probes) {
    for (const auto& [key, path] : p.artifacts) {
      std::string k = key == "trace" ? "trace" : p.probe + "." + key;
      for (int n = 2; f.artifacts.count(k); ++n) k = fmt::format("{}.{}", key == "trace" ? "trace" : p.probe + "." + key, n);
      f.artifacts[k] = path;
    }
  }
  return out;
}

}  // namespace recur::gate
