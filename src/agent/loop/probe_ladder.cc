#include "loop/probe_ladder.h"

#include <fmt/format.h>

#include "loop/candidate_rank.h"
#include "gate/gate.h"
#include "gate/kernel_probe.h"

namespace recur::agent {

namespace {

bool condition_times_kernel(const gate::Condition& c, std::string_view candidate) {
  for (const gate::MetricRequest& r : metric_calls(c.expr)) {
    if (is_kernel_time(r.def->source) && (r.arm == candidate || r.vs == candidate)) return true;
  }
  return false;
}

bool condition_is_speed(const gate::Condition& c, std::string_view candidate) {
  for (const gate::MetricRequest& r : metric_calls(c.expr))
    if ((r.arm == candidate || r.vs == candidate) &&
        (r.def->source == gate::MetricSource::kEngineThroughput || is_kernel_time(r.def->source)))
      return true;
  return false;
}

bool condition_is_numeric(const gate::Condition& c) {
  for (const gate::MetricRequest& r : metric_calls(c.expr))
    if (r.def->source == gate::MetricSource::kEnginePair || r.def->source == gate::MetricSource::kKernelCheck) return true;
  return false;
}

Result<Config> to_config(const KnobMap& m) {
  Config c;
  for (const auto& [k, v] : m) RECUR_RETURN_IF_ERROR(c.set(k, v));
  return c;
}

std::string metric_text(const Feedback& f, std::string_view name) {
  const Metric* m = f.find_metric(name);
  if (m == nullptr) return "";
  if (m->ci95) return fmt::format("{:.3g} [{:.3g}, {:.3g}]", m->value, m->ci95->first, m->ci95->second);
  return fmt::format("{:.3g}", m->value);
}

std::string joined(const std::string& a, const std::string& b) { return a.empty() ? b : a + "; " + b; }

}  // namespace

Result<Validation> ProbeLadder::validate(const Proposal& p, const KnobMap& config, const GateState& state,
                                        const Evidence& ev, LoggedExperiment& g, const PairContext* pair) {
  const KnobDiff diff = {{p.change.knob, p.change.value}};
  const KnobMap next = apply_change(config, p.change);
  RECUR_ASSIGN_OR_RETURN(Config next_cfg, to_config(next));
  RECUR_ASSIGN_OR_RETURN(Config cur_cfg, to_config(config));
  const gate::GateSpec spec = gate_with_candidate(ep_, config);
  const gate::Condition* deciding = state.deciding(spec);
  std::string gain;
  std::string local;  // a rung's confirmation of the change on its own component

  // Tier 1: the variant the change selects must pass check against float64, and when the gate
  // fails on numerics it must also be clearly more accurate than the variant it replaces.
  if (at_limit()) return Validation{};
  if (auto kv = kernel_variant_of(p.change)) {
    RECUR_ASSIGN_OR_RETURN(LoggedExperiment c, check_variant(spec, kv->first, kv->second, diff));
    if (c.decision == Decision::kRevert) return Validation{};
    if (deciding && condition_is_numeric(*deciding) && !p.change.from.empty()) {
      RECUR_ASSIGN_OR_RETURN(LoggedExperiment was, check_variant(spec, kv->first, p.change.from, {}));
      const Metric* now = c.feedback.find_metric("max_rel");
      const Metric* before = was.feedback.find_metric("max_rel");
      if (now && before && !(now->value < 0.5 * before->value)) {
        RECUR_RETURN_IF_ERROR(log_.run(
            {.hypothesis = fmt::format("{} {} is more accurate than {} (max_rel {:.3g} vs {:.3g})", kv->first, kv->second,
                                       p.change.from, now->value, before->value),
             .probe = "analyze.compare", .tier = 0, .config_diff = diff},
            [&]() -> Result<Feedback> {
              Feedback f;
              f.probe = "analyze.compare";
              f.subject = fmt::format("check.kernel {} {} vs {}", kv->first, kv->second, p.change.from);
              f.verdict = Verdict::kRefuted;
              f.add_metric("max_rel_ratio", before->value > 0 ? now->value / before->value : 1.0);
              f.notes.push_back("not at least 2x more accurate than the current variant: it cannot close a numerics gap");
              return f;
            },
            [](const Feedback&) { return Decision::kRevert; }));
        return Validation{};
      }
      gain = fmt::format("check: max_rel {:.3g} -> {:.3g}", before ? before->value : 0.0, now ? now->value : 0.0);
      if (now && before) local = gain;
    }
  }

  // Tier 2: when the gate times the candidate's kernel, the new variant must be faster.
  if (at_limit()) return Validation{};
  bool paired = false;  // a paired timing of the change against the current configuration decided
  const gate::KernelWorkload w = kernel_workload_for(spec, ep_.candidate);
  if (deciding && condition_times_kernel(*deciding, ep_.candidate) && spec.kernel &&
      p.change.knob == fmt::format("kernel.{}.variant", w.kernel)) {
    RECUR_ASSIGN_OR_RETURN(
        LoggedExperiment b,
        log_.run({.hypothesis = fmt::format("{} {} is faster than {} ({})", w.kernel, p.change.value, p.change.from,
                                            p.change.why),
                  .probe = "bench.kernel", .tier = 2, .config_diff = diff},
                 [&]() -> Result<Feedback> {
                   RECUR_ASSIGN_OR_RETURN(gate::KernelMeasurement m, gate::measure_kernel_ratio(w, next_cfg, cur_cfg, {}));
                   return std::move(m.feedback);
                 },
                 // Only a significant gain goes on: an undecided ratio is no measurable effect.
                 [](const Feedback& f) { return f.verdict == Verdict::kConfirmed ? Decision::kNone : Decision::kRevert; }));
    gain = joined(gain, fmt::format("bench: time ratio {} ({})", metric_text(b.feedback, "ratio"),
                                    verdict_name(b.feedback.verdict)));
    if (b.decision == Decision::kRevert) return Validation{};
    paired = true;
    local = joined(local, fmt::format("bench: time ratio {}", metric_text(b.feedback, "ratio")));
  }

  // A speed condition decides: keep only a significant gain in a paired, interleaved A/B of the
  // current configuration against the change on the gate's own workload.
  if (at_limit()) return Validation{};
  if (!paired && deciding && condition_is_speed(*deciding, ep_.candidate)) {
    RECUR_ASSIGN_OR_RETURN(std::optional<LoggedExperiment> ab, paired_ab(spec, config, next, *deciding, p, diff));
    if (ab) {
      gain = joined(gain, fmt::format("paired A/B: {}", ab->feedback.notes.empty() ? "" : ab->feedback.notes.front()));
      if (ab->decision == Decision::kRevert) return Validation{};
    }
  }

  // The gate decides: keep only what brings it strictly closer to passing (a pair: than the
  // state before both, with both changes in the gate's diff).
  if (at_limit()) return Validation{};
  const GateScore before = gate_score((pair ? *pair->before : state).verdict);
  const gate::GateSpec next_spec = gate_with_candidate(ep_, next);
  KnobDiff gate_diff = diff;
  std::string hypothesis = p.hypothesis;
  if (pair) {
    gate_diff[pair->first.knob] = pair->first.value;
    hypothesis = fmt::format("pair: {}={} (reverted alone, confirmed locally: {}) with {}={}: {}", pair->first.knob,
                             pair->first.value, pair->licensed_by, p.change.knob, p.change.value, p.hypothesis);
  }
  // The hypothesis's prediction, checked against what this gate run measures.
  const ChangeOutlook outlook =
      outlook_of(p.change, {.spec = &spec, .gate = &state, .evidence = &ev, .candidate_arm = ep_.candidate});
  RECUR_ASSIGN_OR_RETURN(
      LoggedExperiment ng,
      gate_.run(
          next, hypothesis, gate_diff,
          [&](const Feedback& f) {
            const GateScore after = gate_score(gate_state_from_feedback(next_spec, f).verdict);
            return closer_to_pass(after, before) ? Decision::kKeep : Decision::kRevert;
          },
          [&](Feedback& f) {
            if (pair)
              f.notes.push_back(fmt::format("a pair with {}={}: kept only if the gate is strictly closer than {}",
                                            pair->first.knob, pair->first.value, before.to_string()));
            if (std::string n = prediction_note(outlook, gate_state_from_feedback(next_spec, f)); !n.empty())
              f.notes.push_back(std::move(n));
          }));
  if (ng.decision != Decision::kKeep) {
    Validation v;
    if (!local.empty()) {
      v.local_confirmation = local;
      v.reverted_gate = ng;
    }
    return v;
  }
  const GateScore after = gate_score(gate_state_from_feedback(next_spec, ng.feedback).verdict);
  g = ng;
  Finding f{.step = ng.step, .hypothesis = p.hypothesis, .knob = p.change.knob, .from = p.change.from,
            .to = p.change.value, .component = p.change.component, .evidence = ev.findings, .gain = gain};
  f.gain = joined(f.gain, fmt::format("gate: {} -> {}", before.to_string(), after.to_string()));
  return Validation{.kept = std::move(f)};
}

// The paired A/B of the current configuration (arm `cur`) against the change (arm `new`) on the
// gate's workload, by the deciding condition's speed metric: a ratio whose CI clears 1 in the
// change's favour passes (kept so far), one that does not is no measurable effect (reverted),
// one against it is a slowdown (reverted). nullopt when the metric has no paired form.
Result<std::optional<LoggedExperiment>> ProbeLadder::paired_ab(const gate::GateSpec& spec, const KnobMap& config,
                                                               const KnobMap& next, const gate::Condition& deciding,
                                                               const Proposal& p, const KnobDiff& diff) {
  std::string condition;
  for (const gate::MetricRequest& r : metric_calls(deciding.expr)) {
    if (r.arm != ep_.candidate && r.vs != ep_.candidate) continue;
    if (r.def->source == gate::MetricSource::kEngineThroughput)
      condition = r.def->name.starts_with("prefill") ? "prefill_ratio(new vs cur) > 1" : "decode_ratio(new vs cur) > 1";
    else if (is_kernel_time(r.def->source))
      condition = "time_ratio(new vs cur) < 1";
    if (!condition.empty()) break;
  }
  if (condition.empty()) return std::optional<LoggedExperiment>();
  const gate::Arm* cand = spec.find_arm(ep_.candidate);
  gate::Arm cur = cand ? *cand : gate::Arm{}, nw = cur;
  cur.name = "cur";
  cur.knobs.assign(config.begin(), config.end());
  nw.name = "new";
  nw.knobs.assign(next.begin(), next.end());
  RECUR_ASSIGN_OR_RETURN(gate::GateSpec ab, gate::respec(spec, {cur, nw}, {condition}));
  RECUR_ASSIGN_OR_RETURN(
      LoggedExperiment e,
      log_.run({.hypothesis = fmt::format("{}={} is measurably faster than {} on the gate's workload (paired: `{}`)",
                                          p.change.knob, p.change.value, p.change.from, condition),
                .probe = "bench.ab", .tier = gate_tier(ab), .config_diff = diff},
               [&]() -> Result<Feedback> {
                 gate::GateRunOptions go;
                 go.progress = indented(progress_);
                 RECUR_ASSIGN_OR_RETURN(gate::GateResult r, gate::run_gate(ab, go));
                 Feedback f = std::move(r.feedback);
                 f.probe = "bench.ab";
                 const char* what = r.verdict.outcome == gate::Outcome::kPass   ? "a significant gain"
                                    : r.verdict.outcome == gate::Outcome::kFail ? "slower"
                                                                                : "no measurable effect";
                 f.notes.insert(f.notes.begin(), fmt::format("{}: {}", what, r.verdict.reason));
                 return f;
               },
               [](const Feedback& f) { return f.verdict == Verdict::kConfirmed ? Decision::kNone : Decision::kRevert; }));
  return std::optional<LoggedExperiment>(std::move(e));
}

Result<LoggedExperiment> ProbeLadder::check_variant(const gate::GateSpec& spec, const std::string& kernel,
                                                    const std::string& variant, const KnobDiff& diff) {
  const std::string key = kernel + "/" + variant;
  if (auto it = checks_.find(key); it != checks_.end()) return it->second;
  gate::KernelWorkload w = kernel_workload_for(spec, ep_.candidate);
  if (w.kernel != kernel) w = gate::KernelWorkload{.kernel = kernel, .budget_s = 1, .seeds = {1}};
  RECUR_ASSIGN_OR_RETURN(
      LoggedExperiment c,
      log_.run({.hypothesis = fmt::format("{} variant {} is correct (check against float64)", kernel, variant),
                .probe = "check.kernel", .tier = 1, .config_diff = diff},
               [&]() -> Result<Feedback> {
                 Config cfg;
                 RECUR_RETURN_IF_ERROR(cfg.set(fmt::format("kernel.{}.variant", kernel), variant));
                 RECUR_ASSIGN_OR_RETURN(gate::KernelCheckMeasurement m, gate::measure_kernel_check(w, cfg, nullptr, {}));
                 return std::move(m.feedback);
               },
               [&diff](const Feedback& f) {
                 // Checking the variant in use (no diff) measures a baseline; it reverts nothing.
                 return f.verdict == Verdict::kConfirmed || diff.empty() ? Decision::kNone : Decision::kRevert;
               }));
  checks_[key] = c;
  return c;
}

}  // namespace recur::agent
