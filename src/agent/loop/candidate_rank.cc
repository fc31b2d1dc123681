#include "loop/candidate_rank.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace recur::agent {

namespace {

bool measures_error(gate::MetricSource s) {
  return s == gate::MetricSource::kEnginePair || s == gate::MetricSource::kKernelCheck ||
         s == gate::MetricSource::kEngineOps;
}

// How a metric call moves with the candidate's error (or time): +1 it scales with it, -1 inversely
// (throughput, a speedup of the candidate), 0 it does not measure the candidate or is a truth value.
int direction_of(const gate::MetricRequest& r, std::string_view cand) {
  if (r.def->boolean || (r.arm != cand && r.vs != cand)) return 0;
  if (measures_error(r.def->source)) return 1;
  const bool first = r.arm == cand;
  switch (r.def->source) {
    case gate::MetricSource::kKernelTime: return 1;
    case gate::MetricSource::kKernelRatio: return (r.def->name == "speedup") == first ? -1 : 1;
    case gate::MetricSource::kEngineThroughput: return first ? -1 : 1;
    default: return 0;
  }
}

Aim aim_of(const gate::MetricRequest& r) { return measures_error(r.def->source) ? Aim::kError : Aim::kTime; }

std::string effect_words(const Prediction& p, Aim aim) {
  const char* what = aim == Aim::kError ? "error" : "time";
  if (std::abs(std::log(p.factor)) < 0.05) return fmt::format("should leave its {} unchanged", what);
  if (p.factor < 1)
    return aim == Aim::kError ? fmt::format("should cut its error ~{:.3g}x", 1 / p.factor)
                              : fmt::format("should make it {}~{:.3g}x faster", p.upper_bound ? "at most " : "",
                                            1 / p.factor);
  return aim == Aim::kError ? fmt::format("should make its error ~{:.3g}x larger", p.factor)
                            : fmt::format("should make it ~{:.3g}x slower", p.factor);
}

}  // namespace

ChangeOutlook outlook_of(const Candidate& c, const RankContext& ctx) {
  ChangeOutlook o;
  const gate::Condition* deciding = ctx.gate->deciding(*ctx.spec);
  if (deciding == nullptr) return o;
  // The deciding metric: the first call on the candidate arm that moves with it.
  for (const gate::MetricRequest& r : metric_calls(deciding->expr)) {
    const int d = direction_of(r, ctx.candidate_arm);
    if (d == 0) continue;
    o.aim = aim_of(r);
    o.metric = r.key();
    o.direction = d;
    o.now = value_of(*ctx.gate, r);
    break;
  }
  if (o.metric.empty()) {
    // A truth value alone (tokens_equal) is an error condition; its prediction is stated on the
    // gate's first error metric of the candidate (logits_max_rel_err of the same arms).
    for (const gate::MetricRequest& r : metric_calls(deciding->expr))
      if (measures_error(r.def->source)) o.aim = Aim::kError;
    for (const gate::Condition& cond : ctx.spec->conditions) {
      for (const gate::MetricRequest& r : metric_calls(cond.expr)) {
        if (direction_of(r, ctx.candidate_arm) == 0 || aim_of(r) != o.aim || !value_of(*ctx.gate, r)) continue;
        o.metric = r.key();
        o.direction = direction_of(r, ctx.candidate_arm);
        o.now = value_of(*ctx.gate, r);
        break;
      }
      if (!o.metric.empty()) break;
    }
  }
  for (const Attribution& a : ctx.evidence->components)
    if (a.component == c.component) o.share = std::clamp(a.share, 0.0, 1.0);
  o.prediction = predict_change(c.from, c.value, o.aim);
  if (!o.prediction) {
    o.expected_gain = o.share * kUnmodelledGain;
    return o;
  }
  o.overall_factor = 1 - o.share + o.share * o.prediction->factor;
  o.expected_gain = std::max(-1.0, 1 - o.overall_factor);
  if (o.now && o.direction != 0) o.predicted = *o.now * std::pow(o.overall_factor, o.direction);
  // Conditions that hold now and the change is predicted to break (its whole effect counted:
  // the attribution measured shares of the deciding condition only).
  for (size_t i = 0; i < ctx.spec->conditions.size() && o.risk.empty(); ++i) {
    if (i >= ctx.gate->verdict.conditions.size() || ctx.gate->verdict.conditions[i].outcome != gate::Outcome::kPass)
      continue;
    const std::vector<MetricBound> bounds = metric_bounds(ctx.spec->conditions[i].expr);
    for (const MetricBound& b : bounds) {
      const int d = direction_of(b.request, ctx.candidate_arm);
      const std::optional<double> v = value_of(*ctx.gate, b.request);
      const std::optional<Prediction> p = predict_change(c.from, c.value, aim_of(b.request));
      if (d == 0 || !v || !p) continue;
      const double f = aim_of(b.request) == o.aim ? o.overall_factor : p->factor;
      const double next = *v * std::pow(f, d);
      if (b.upper ? next > b.limit : next < b.limit) {
        o.risk = fmt::format("it would take `{}` from {:.3g} to ~{:.3g}, past {:.3g}", b.request.key(), *v, next, b.limit);
        break;
      }
    }
  }
  return o;
}

std::string ChangeOutlook::text(const Candidate& c) const {
  if (!prediction) return "";
  std::string s = fmt::format("{} -> {} ({}) {}", c.from, c.value, prediction->basis, effect_words(*prediction, aim));
  if (now && predicted) s += fmt::format(", taking `{}` from {:.3g} to ~{:.3g}", metric, *now, *predicted);
  if (!risk.empty()) s += "; but " + risk;
  return s;
}

void rank_changes(std::vector<Candidate>& changes, const RankContext& ctx) {
  for (Candidate& c : changes) {
    const ChangeOutlook o = outlook_of(c, ctx);
    c.expected_gain = o.expected_gain - (o.risk.empty() ? 0.0 : 2.0);
    c.prediction = o.text(c);
  }
  // Screenable changes first among equals (candidates_for put them there), then the registry.
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Candidate& a, const Candidate& b) { return a.expected_gain > b.expected_gain; });
}

std::string prediction_note(const ChangeOutlook& o, const GateState& after) {
  if (!o.prediction || !o.now || !o.predicted || o.direction == 0) return "";
  auto it = after.values.find(o.metric);
  if (it == after.values.end() || !(*o.now > 0) || !(it->second.value.value > 0)) return "";
  const double measured = it->second.value.value;
  const double factor = o.direction > 0 ? measured / *o.now : *o.now / measured;
  const PredictionHeld held = judge_prediction(o.overall_factor, factor, o.prediction->upper_bound);
  return fmt::format("prediction {}: `{}` predicted ~{:.3g} (from {:.3g}; {}), measured {:.3g}",
                     prediction_held_name(held), o.metric, *o.predicted, *o.now, o.prediction->basis, measured);
}

}  // namespace recur::agent
