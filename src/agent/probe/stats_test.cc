// Statistics against hand-computed and tabulated values, and the decision rule on synthetic
// samples. No timings here: verdicts on real timings are measured by
// benchmarks/bench_false_positive_and_power.cc.
#include "probe/stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include "probe/bench.h"
#include "probe/rng.h"

namespace recur::probe {
namespace {

std::vector<double> normal_samples(uint64_t seed, int n, double mean, double sd) {
  SplitMix64 rng(seed);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    double u1 = 1 - rng.uniform(), u2 = rng.uniform();
    v.push_back(mean + sd * std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  return v;
}

TEST(Stats, MedianAndQuantiles) {
  EXPECT_EQ(median(std::vector<double>{3, 1, 2}), 2);
  EXPECT_EQ(median(std::vector<double>{4, 1, 3, 2}), 2.5);
  std::vector<double> s = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.25), 2);
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.1), 1.4);  // R: quantile(1:5, 0.1) = 1.4
  EXPECT_EQ(median(std::vector<double>{}), 0);
}

TEST(Stats, BootstrapMatchesAnIndependentReimplementation) {
  // Values from /usr/bin/python3 running the same algorithm (SplitMix64(7), 2000 resamples,
  // index floor(u * n), type-7 quantiles of the resampled medians); see docs/probes.md.
  std::vector<double> x = {3.1, 2.7, 5.0, 4.4, 3.9, 4.1, 2.2, 6.3, 3.3, 4.8};
  auto [lo, hi] = bootstrap_median_ci(x, 2000, 7);
  EXPECT_DOUBLE_EQ(lo, 3.0);
  EXPECT_DOUBLE_EQ(hi, 4.8);
  auto same = bootstrap_median_ci(std::vector<double>(9, 2.5), 500, 1);
  EXPECT_EQ(same, std::pair(2.5, 2.5));
}

TEST(Stats, BootstrapCiCoversTheTrueMedianAboutNinetyFivePercentOfTheTime) {
  int covered = 0;
  const int trials = 400;
  for (int t = 0; t < trials; ++t) {
    auto x = normal_samples(1000 + uint64_t(t), 61, 0.0, 1.0);
    auto [lo, hi] = bootstrap_median_ci(x, 1000, uint64_t(t));
    covered += lo <= 0 && 0 <= hi;
  }
  EXPECT_GE(covered, int(0.90 * trials));
  EXPECT_LE(covered, int(0.99 * trials));
}

TEST(Stats, WilcoxonExactMatchesTables) {
  // n = 10, W+ = 8: the two-sided 5% critical value; P = 2 * 25 / 1024.
  std::vector<double> d = {1, -2, 3, 4, -5, -6, -7, -8, -9, -10};
  WilcoxonResult w = wilcoxon_signed_rank(d);
  EXPECT_TRUE(w.exact);
  EXPECT_EQ(w.n, 10);
  EXPECT_EQ(w.w_plus, 8);
  EXPECT_DOUBLE_EQ(w.p_two_sided, 0.048828125);
  // R's wilcox.test(x, y, paired = TRUE) example (Hollander & Wolfe): V = 40, p = 0.03906.
  std::vector<double> x = {1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30};
  std::vector<double> y = {0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29};
  std::vector<double> diff;
  for (size_t i = 0; i < x.size(); ++i) diff.push_back(x[i] - y[i]);
  w = wilcoxon_signed_rank(diff);
  EXPECT_EQ(w.w_plus, 40);
  EXPECT_NEAR(w.p_two_sided, 0.0390625, 1e-12);
  // Zeros are dropped.
  EXPECT_EQ(wilcoxon_signed_rank(std::vector<double>{0, 0, 1}).n, 1);
  EXPECT_EQ(wilcoxon_signed_rank(std::vector<double>{}).p_two_sided, 1);
}

TEST(Stats, WilcoxonNormalApproximationAgreesWithExactNearTheSwitch) {
  // n = 25 exact vs n = 25 with one tie (forcing the approximation) on nearly the same data.
  std::vector<double> d;
  for (int i = 1; i <= 25; ++i) d.push_back(i % 3 == 0 ? -double(i) : double(i));
  WilcoxonResult exact = wilcoxon_signed_rank(d);
  ASSERT_TRUE(exact.exact);
  std::vector<double> tied = d;
  tied[1] = 1;  // |d| = 1 twice
  WilcoxonResult approx = wilcoxon_signed_rank(tied);
  ASSERT_FALSE(approx.exact);
  EXPECT_NEAR(exact.p_two_sided, approx.p_two_sided, 0.01);
  // All positive, n = 30: far in the tail.
  std::vector<double> pos;
  for (int i = 1; i <= 30; ++i) pos.push_back(i);
  EXPECT_LT(wilcoxon_signed_rank(pos).p_two_sided, 1e-5);
}

TEST(Decision, SlowerFasterSameInconclusiveOnSyntheticRounds) {
  BenchOptions o;
  auto quiet_aa = normal_samples(9, 80, 0.0, 0.02);
  EXPECT_EQ(decide(normal_samples(1, 80, 0.05, 0.02), quiet_aa, o).verdict, BenchVerdict::kSlower);
  EXPECT_EQ(decide(normal_samples(2, 80, -0.05, 0.02), quiet_aa, o).verdict, BenchVerdict::kFaster);
  EXPECT_EQ(decide(normal_samples(3, 80, 0.0, 0.005), normal_samples(4, 80, 0.0, 0.005), o).verdict, BenchVerdict::kSame);
  EXPECT_EQ(decide(normal_samples(5, 12, 0.01, 0.05), normal_samples(6, 12, 0.0, 0.05), o).verdict,
            BenchVerdict::kInconclusive);
  BenchDecision d = decide(normal_samples(1, 80, 0.05, 0.02), quiet_aa, o);
  EXPECT_NEAR(d.ratio, std::exp(0.05), 0.01);
  EXPECT_LT(d.ratio_lo, d.ratio);
  EXPECT_GT(d.ratio_hi, d.ratio);
  EXPECT_LT(d.p_value, 1e-6);
}

TEST(Decision, TheThresholdComesFromTheAaRounds) {
  BenchOptions o;
  auto ab = normal_samples(11, 100, 0.02, 0.01);  // a 2% slowdown, tightly measured
  BenchDecision quiet = decide(ab, normal_samples(12, 100, 0.0, 0.002), o);
  EXPECT_EQ(quiet.verdict, BenchVerdict::kSlower) << quiet.reason;
  // The same A/B data on a machine whose A/A rounds wander by +-5%: not called a change.
  BenchDecision noisy = decide(ab, normal_samples(13, 100, 0.0, 0.25), o);
  EXPECT_EQ(noisy.verdict, BenchVerdict::kInconclusive) << noisy.reason;
  EXPECT_GT(noisy.threshold, 0.03);
  // Nor is a tight A/B CI around 1 called "same" while the A/A noise is unresolved.
  EXPECT_EQ(decide(normal_samples(3, 80, 0.0, 0.005), normal_samples(15, 80, 0.0, 0.25), o).verdict,
            BenchVerdict::kInconclusive);
  EXPECT_LT(quiet.threshold, 0.005);
  // A/A rounds with a systematic +3% offset (position effects) raise the bar the same way.
  BenchDecision biased = decide(ab, normal_samples(14, 100, 0.03, 0.002), o);
  EXPECT_NE(biased.verdict, BenchVerdict::kSlower) << biased.reason;
}

TEST(Decision, VerdictMapsOntoTheHypothesis) {
  using B = BenchVerdict;
  EXPECT_EQ(verdict_for_hypothesis(B::kFaster, B::kFaster), Verdict::kConfirmed);
  EXPECT_EQ(verdict_for_hypothesis(B::kSlower, B::kFaster), Verdict::kRefuted);
  EXPECT_EQ(verdict_for_hypothesis(B::kSame, B::kFaster), Verdict::kRefuted);
  EXPECT_EQ(verdict_for_hypothesis(B::kInconclusive, B::kFaster), Verdict::kInconclusive);
  EXPECT_EQ(verdict_for_hypothesis(B::kSame, B::kSame), Verdict::kConfirmed);
  EXPECT_EQ(verdict_for_hypothesis(B::kSlower, B::kSame), Verdict::kRefuted);
  EXPECT_EQ(parse_bench_verdict("slower"), B::kSlower);
  EXPECT_FALSE(parse_bench_verdict("quicker"));
}

TEST(Runner, InterleavesPairedRoundsAndCalibratesSamples) {
  volatile double sink = 0;
  BenchArm work{"work", [&](int64_t iters) {
                  for (int64_t i = 0; i < iters * 200; ++i) sink = sink + 1e-9 * double(i);
                }};
  BenchOptions o;
  o.budget_s = 0.05;
  o.min_rounds = 4;
  o.target_sample_s = 2e-4;
  o.warmup_s = 0.001;
  BenchResult r = bench_compare(work, work, o);
  EXPECT_GE(r.rounds, 1);
  EXPECT_TRUE(r.rounds >= 4 || r.budget_exhausted);  // min_rounds, unless the budget ran out first
  EXPECT_EQ(r.log_ratios.size(), size_t(r.rounds));
  EXPECT_EQ(r.aa_log_ratios.size(), size_t(r.rounds));
  EXPECT_EQ(r.baseline_ns.size(), size_t(2 * r.rounds));   // two baseline samples per ABBA round
  EXPECT_EQ(r.candidate_ns.size(), size_t(2 * r.rounds));
  EXPECT_GE(r.iters_per_sample, 1);
  EXPECT_TRUE(r.budget_exhausted || r.decision.verdict != BenchVerdict::kInconclusive);

  int64_t calls = 0;
  BenchArm count{"count", [&](int64_t iters) { calls += iters; }};
  o.between_samples = [&] { calls += 1000000; };
  BenchResult s = bench_single(count, o);
  EXPECT_GE(calls, int64_t(1000000) * s.rounds);  // the hook ran before every sample
  EXPECT_EQ(s.candidate_ns.size(), size_t(s.rounds));
}

}  // namespace
}  // namespace recur::probe
