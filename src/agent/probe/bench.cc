// The bench runner: warm-up, calibration, interleaved ABBA and A/A rounds, adaptive stop.
#include "probe/bench.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/clock.h"
#include "probe/stats.h"

namespace recur::probe {
namespace {

double seconds_since(int64_t t0) { return double(now_ns() - t0) * 1e-9; }

// One timed sample: per-call nanoseconds, the fastest of `slot_repeats` back-to-back timings
// (a timing that was preempted or interrupted is only ever slower, so the minimum filters it).
double sample(const BenchArm& arm, int64_t iters, const BenchOptions& o) {
  double best = 0;
  for (int k = 0; k < std::max(o.slot_repeats, 1); ++k) {
    if (o.between_samples) o.between_samples();
    const int64_t t0 = now_ns();
    arm.run(iters);
    const double t = double(now_ns() - t0) / double(iters);
    best = k == 0 ? t : std::min(best, t);
  }
  return best;
}

void warm_up(const BenchArm& arm, const BenchOptions& o) {
  const int64_t t0 = now_ns();
  do arm.run(1);
  while (seconds_since(t0) < o.warmup_s);
}

int64_t calibrate(const BenchArm& arm, const BenchOptions& o) {
  int64_t iters = 1;
  for (;;) {
    const int64_t t0 = now_ns();
    arm.run(iters);
    const double dt = seconds_since(t0);
    if (dt >= o.target_sample_s || iters >= (int64_t(1) << 30)) return iters;
    const double grow = dt > 0 ? std::clamp(1.2 * o.target_sample_s / dt, 1.5, 100.0) : 100.0;
    iters = std::max(iters + 1, int64_t(double(iters) * grow));
  }
}

// A B B A (or B A A B when flipped): slots 1 and 2 hold one role, slots 0 and 3 the other.
// Returns mean log(B samples) - mean log(A samples). With a == b it is an A/A round.
double abba_round(const BenchArm& a, const BenchArm& b, int64_t iters, bool flip, const BenchOptions& o,
                  std::vector<double>* a_out, std::vector<double>* b_out) {
  double la = 0, lb = 0;
  for (int i = 0; i < 4; ++i) {
    const bool role_b = (i == 1 || i == 2) != flip;
    const double t = sample(role_b ? b : a, iters, o);
    (role_b ? lb : la) += 0.5 * std::log(t);
    if (std::vector<double>* out = role_b ? b_out : a_out) out->push_back(t);
  }
  return lb - la;
}

void summarize(BenchResult& r, const BenchOptions& o) {
  if (!r.baseline_ns.empty()) {
    r.baseline_median_ns = median(r.baseline_ns);
    r.baseline_ci_ns = bootstrap_median_ci(r.baseline_ns, o.bootstrap, o.seed + 2);
  }
  if (!r.candidate_ns.empty()) {
    r.candidate_median_ns = median(r.candidate_ns);
    r.candidate_ci_ns = bootstrap_median_ci(r.candidate_ns, o.bootstrap, o.seed + 3);
  }
}

}  // namespace

BenchResult bench_compare(const BenchArm& baseline, const BenchArm& candidate, const BenchOptions& o) {
  BenchResult r;
  const int64_t start = now_ns();
  warm_up(baseline, o);
  if (&candidate != &baseline) warm_up(candidate, o);
  r.iters_per_sample = calibrate(baseline, o);
  const int64_t rounds_start = now_ns();
  int next_look = o.min_rounds;
  for (;;) {
    const bool flip = r.rounds % 2 == 1;
    r.log_ratios.push_back(abba_round(baseline, candidate, r.iters_per_sample, flip, o, &r.baseline_ns, &r.candidate_ns));
    if (o.aa_rounds) r.aa_log_ratios.push_back(abba_round(baseline, baseline, r.iters_per_sample, flip, o, nullptr, nullptr));
    ++r.rounds;
    const bool out_of_time = seconds_since(rounds_start) >= o.budget_s || r.rounds >= o.max_rounds;
    if (r.rounds >= next_look || out_of_time) {
      r.decision = decide(r.log_ratios, r.aa_log_ratios, o);
      next_look = std::max(r.rounds + 1, r.rounds * 3 / 2);
      if (r.decision.verdict != BenchVerdict::kInconclusive && r.rounds >= o.min_rounds) break;
      if (out_of_time) {
        r.budget_exhausted = true;
        break;
      }
    }
  }
  summarize(r, o);
  r.elapsed_s = seconds_since(start);
  return r;
}

BenchResult bench_single(const BenchArm& arm, const BenchOptions& o) {
  BenchResult r;
  const int64_t start = now_ns();
  warm_up(arm, o);
  r.iters_per_sample = calibrate(arm, o);
  const int64_t rounds_start = now_ns();
  int next_look = o.min_rounds;
  for (;;) {
    r.candidate_ns.push_back(sample(arm, r.iters_per_sample, o));
    ++r.rounds;
    const bool out_of_time = seconds_since(rounds_start) >= o.budget_s || r.rounds >= o.max_rounds;
    if (r.rounds >= next_look || out_of_time) {
      next_look = std::max(r.rounds + 1, r.rounds * 3 / 2);
      const double m = median(r.candidate_ns);
      auto [lo, hi] = bootstrap_median_ci(r.candidate_ns, o.bootstrap, o.seed);
      const bool resolved = hi - lo <= 2 * o.resolution * m;
      r.decision.reason = fmt::format("median {:.4g} ns per call, CI [{:.4g}, {:.4g}] ({}resolved to +-{:.1f}%)", m, lo, hi,
                                      resolved ? "" : "not ", 100 * o.resolution);
      r.decision.verdict = resolved ? BenchVerdict::kSame : BenchVerdict::kInconclusive;
      if (resolved) break;
      if (out_of_time) {
        r.budget_exhausted = true;
        break;
      }
    }
  }
  summarize(r, o);
  r.elapsed_s = seconds_since(start);
  return r;
}

void add_bench_metrics(const BenchResult& r, bool compared, Feedback& f) {
  if (compared) {
    f.add_metric("baseline_time_us", r.baseline_median_ns * 1e-3, "us").ci95 =
        std::pair(r.baseline_ci_ns.first * 1e-3, r.baseline_ci_ns.second * 1e-3);
  }
  f.add_metric("time_us", r.candidate_median_ns * 1e-3, "us").ci95 =
      std::pair(r.candidate_ci_ns.first * 1e-3, r.candidate_ci_ns.second * 1e-3);
  if (compared) {
    const BenchDecision& d = r.decision;
    f.add_metric("ratio", d.ratio).ci95 = std::pair(d.ratio_lo, d.ratio_hi);
    f.add_metric("p_value", d.p_value);
    f.add_metric("noise_threshold", std::exp(d.threshold) - 1);
    f.notes.push_back(fmt::format("bench verdict: {} ({})", bench_verdict_name(d.verdict), d.reason));
    f.notes.push_back(fmt::format("A/A calibration in-run: median log-ratio CI [{:+.4f}, {:+.4f}] over {} rounds", d.aa_lo,
                                  d.aa_hi, r.aa_log_ratios.size()));
  } else {
    f.notes.push_back(r.decision.reason);
  }
  f.add_metric("rounds", double(r.rounds));
  f.add_metric("iters_per_sample", double(r.iters_per_sample));
  if (r.budget_exhausted) f.notes.push_back(fmt::format("stopped: time budget used after {} rounds", r.rounds));
}

}  // namespace recur::probe
