// score_run and summarize (eval.h): what one run achieved against [expect], and per proposer.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "eval/eval.h"
#include "loop/gate_state.h"

namespace recur::agent {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();


// Probe seconds of experiments testing a change that did not stay in effect: reverted (every
// step of its ladder), or kept although the episode calls the knob a decoy (no real effect).
double wasted_seconds(const LoopResult& r, const std::optional<Expect>& expect) {
  std::set<std::string> kept;
  for (const LoggedExperiment& e : r.experiments)
    if (e.decision == Decision::kKeep)
      for (const auto& [k, v] : e.spec.config_diff) kept.insert(k + "=" + v);
  double wasted = 0;
  for (const LoggedExperiment& e : r.experiments) {
    if (e.spec.config_diff.empty()) continue;
    // A diff that puts knobs back to the start is the final ablation, a verification, not a
    // change that was tried (proposals never lead back to a visited configuration).
    const bool put_back = std::all_of(e.spec.config_diff.begin(), e.spec.config_diff.end(), [&](const auto& kv) {
      return kv.second == value_or_default(r.start, kv.first);
    });
    if (put_back) continue;
    for (const auto& [k, v] : e.spec.config_diff) {
      const bool decoy = expect && is_decoy(*expect, k);
      if (!kept.count(k + "=" + v) || decoy) {
        wasted += e.feedback.cost_s;
        break;
      }
    }
  }
  return wasted;
}

// Changes whose knob the latest gate's workload did not read (gate_state.h: the candidate arm's
// "knobs read" note), once each; the ablation's put-backs verify, they are not tried. Program
// workloads carry no note: nothing is known, nothing counted.
std::vector<std::string> dead_probes(const LoopResult& r) {
  std::optional<std::set<std::string>> live;  // as the latest gate before the experiment read them
  std::set<std::string> dead;
  for (const LoggedExperiment& e : r.experiments) {
    if (live)
      for (const auto& [k, v] : e.spec.config_diff)
        if (v != value_or_default(r.start, k) && !live->count(k)) dead.insert(k + "=" + v);
    if (e.spec.probe == "gate")
      if (auto read = knobs_read_from(e.feedback)) live = std::move(read);
  }
  return {dead.begin(), dead.end()};
}

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

EvalRun score_run(const Episode& episode, const LoopResult& r) {
  EvalRun run;
  run.episode = episode.name;
  run.episode_path = episode.path;
  run.run_name = r.run.name;
  run.passed = r.passed;
  run.outcome = r.outcome;
  run.experiments = int(r.experiments.size());
  run.probe_s = r.spent_s;
  run.wasted_s = wasted_seconds(r, episode.expect);
  run.dead_probes = dead_probes(r);
  if (r.passed) run.s_to_pass = r.spent_s;
  const Expect expect = episode.expect.value_or(Expect{});
  run.has_expect = episode.expect.has_value();
  run.expect_passes = expect.passes;
  run.expect_no_change = run.has_expect && expect.passes && expect.root_cause.empty();
  const ExpectMatch m = match_expect(expect, r.start, r.final_config);
  run.decoys_kept = m.decoys_kept;
  run.missing = m.missing;
  for (const std::string& d : m.decoys_kept) run.changes.push_back(d);
  for (const std::string& x : m.extra) run.changes.push_back(x);
  for (const ExpectedChange& c : expect.root_cause)
    if (auto it = r.final_config.find(c.knob); it != r.final_config.end() && c.matches(it->second))
      run.changes.push_back(c.knob + "=" + it->second);
  std::sort(run.changes.begin(), run.changes.end());
  if (!expect.passes) run.outcome_met = !r.passed && !r.paused;
  else if (run.expect_no_change) run.outcome_met = r.passed && run.changes.empty();
  else run.outcome_met = r.passed;
  if (run.has_expect && expect.passes) run.root_cause_named = m.root_cause_named && (!run.expect_no_change || run.changes.empty());
  return run;
}

std::vector<ProposerScore> summarize(const std::vector<EvalRun>& runs) {
  std::vector<ProposerScore> out;
  std::map<std::string, std::vector<double>> to_pass;
  for (const EvalRun& r : runs) {
    auto it = std::find_if(out.begin(), out.end(), [&](const ProposerScore& s) { return s.proposer == r.proposer; });
    if (it == out.end()) {
      out.push_back({.proposer = r.proposer});
      it = out.end() - 1;
    }
    ProposerScore& s = *it;
    ++s.runs;
    s.errors += r.error;
    s.outcome_met += r.outcome_met;
    s.passed += r.passed;
    s.probe_s += r.probe_s;
    s.wasted_s += r.wasted_s;
    s.dead_probes += int(r.dead_probes.size());
    if (r.root_cause_named) {
      ++s.feasible_runs;
      s.root_cause_named += *r.root_cause_named;
    }
    // A run that never passed counts as infinitely slow, so the median compares the same runs
    // for every proposer instead of only those each managed to pass.
    if (r.expect_passes) to_pass[r.proposer].push_back(r.s_to_pass.value_or(kNever));
  }
  for (ProposerScore& s : out) {
    s.outcome_rate = s.runs ? double(s.outcome_met) / s.runs : 0;
    s.root_cause_accuracy = s.feasible_runs ? double(s.root_cause_named) / s.feasible_runs : 0;
    if (!to_pass[s.proposer].empty()) {
      const double m = median_of(to_pass[s.proposer]);
      if (m != kNever) s.median_s_to_pass = m;
    }
  }
  auto random = std::find_if(out.begin(), out.end(), [](const ProposerScore& s) { return s.proposer.starts_with("random"); });
  if (random != out.end()) {
    const ProposerScore base = *random;
    for (ProposerScore& s : out) {
      if (base.median_s_to_pass && s.median_s_to_pass && *s.median_s_to_pass > 0)
        s.speedup_vs_random = *base.median_s_to_pass / *s.median_s_to_pass;
      if (base.outcome_rate > 0) s.outcome_rate_vs_random = s.outcome_rate / base.outcome_rate;
      s.random_median_not_reached = !base.median_s_to_pass && s.median_s_to_pass && &s != &*random;
    }
  }
  return out;
}

}  // namespace recur::agent
