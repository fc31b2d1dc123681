// bench: timing a callable, a kernel variant or a command, and deciding whether B differs from A.
//
// Method (docs/probes.md):
//   1. Warm-up: each arm runs for ~warmup_s.
//   2. Calibration: iterations per sample grow until one sample of the baseline takes
//      >= target_sample_s; both arms then use that count, so samples are per-call times.
//   3. Samples: each is the fastest of slot_repeats back-to-back timings, which filters
//      preemption by other tenants (it only ever adds time).
//   4. Rounds, interleaved: an A/B round is A B B A (or B A A B, alternating), giving one paired
//      log-ratio  0.5 (log b1 + log b2) - 0.5 (log a1 + log a2); ABBA cancels linear drift.
//      After every A/B round comes an A/A round of the same kind (A A A A, the same formula):
//      the in-run noise calibration.
//   5. Decision (decide()): the median log-ratio with a bootstrap 95% CI, and the Wilcoxon
//      signed-rank p-value. The noise threshold t is the largest |bound| of the A/A CI: the
//      biggest apparent effect the machine produces right now for identical code. The change is
//      faster/slower only when the A/B CI lies wholly beyond -t/+t and p < alpha; `same` when
//      the CI and t both lie inside +-resolution (the noise is resolved and the change is below
//      it); otherwise inconclusive.
//   6. Adaptive stop: decide() runs after min_rounds and each time the round count grows by
//      half; bench stops at the first decisive verdict or when budget_s runs out (inconclusive).
// Not thread-safe (one measurement at a time per process: a concurrent one would be noise).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/feedback.h"

namespace recur::probe {

enum class BenchVerdict { kFaster, kSlower, kSame, kInconclusive };
std::string_view bench_verdict_name(BenchVerdict v);
std::optional<BenchVerdict> parse_bench_verdict(std::string_view name);

// The record's verdict relative to a hypothesis about the candidate ("faster", "slower" or
// "same"): the outcome equal to the hypothesis confirms it, another decisive outcome refutes
// it, inconclusive stays inconclusive.
Verdict verdict_for_hypothesis(BenchVerdict outcome, BenchVerdict hypothesis);

struct BenchOptions {
  double budget_s = 8;            // wall-clock budget for rounds (warm-up and calibration extra)
  double warmup_s = 0.05;
  double target_sample_s = 1e-3;  // one timing's duration after calibration
  int slot_repeats = 3;           // a sample is the fastest of this many back-to-back timings
  int min_rounds = 12;
  int max_rounds = 100000;
  double resolution = 0.01;       // ratios within 1 +- resolution are "same" when resolved
  double alpha = 0.05;            // Wilcoxon level required for faster/slower
  bool aa_rounds = true;          // in-run A/A calibration; off only for single-arm timing
  int bootstrap = 2000;
  uint64_t seed = 1;              // bootstrap resampling
  std::function<void()> between_samples;  // untimed, before every sample (e.g. a cache flush)
};

// One arm: run(iters) performs `iters` calls of the thing measured.
struct BenchArm {
  std::string name;
  std::function<void(int64_t iters)> run;
};

struct BenchDecision {
  BenchVerdict verdict = BenchVerdict::kInconclusive;
  double ratio = 1, ratio_lo = 1, ratio_hi = 1;  // candidate / baseline time: exp(median), CI
  double threshold = 0;                          // noise threshold on the log scale
  double aa_lo = 0, aa_hi = 0;                   // A/A CI on the log scale
  double p_value = 1;
  std::string reason;
};

// The decision rule on paired per-round log-ratios (candidate over baseline) and A/A rounds.
BenchDecision decide(std::span<const double> log_ratios, std::span<const double> aa_log_ratios,
                     const BenchOptions& options);

struct BenchResult {
  int64_t iters_per_sample = 1;
  int rounds = 0;
  std::vector<double> baseline_ns;   // per-call times, one per sample
  std::vector<double> candidate_ns;
  std::vector<double> log_ratios;
  std::vector<double> aa_log_ratios;
  BenchDecision decision;
  double elapsed_s = 0;
  bool budget_exhausted = false;
  // Medians of the per-call times with bootstrap CIs.
  double baseline_median_ns = 0, candidate_median_ns = 0;
  std::pair<double, double> baseline_ci_ns, candidate_ci_ns;
};

// Interleaved A/B comparison of candidate against baseline (the same arm twice is an A/A run).
BenchResult bench_compare(const BenchArm& baseline, const BenchArm& candidate, const BenchOptions& options);

// One arm alone: samples until the median's CI is within +-resolution or the budget ends.
BenchResult bench_single(const BenchArm& arm, const BenchOptions& options);

// Metrics and notes shared by every bench Feedback: times with CIs, ratio with CI, p-value,
// threshold, rounds, the bench verdict.
void add_bench_metrics(const BenchResult& r, bool compared, Feedback& f);

}  // namespace recur::probe
