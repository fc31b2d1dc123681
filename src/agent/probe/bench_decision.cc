// The decision rule and the verdict mapping of bench.h.
#include <cmath>

#include <fmt/format.h>

#include "probe/bench.h"
#include "probe/stats.h"

namespace recur::probe {

std::string_view bench_verdict_name(BenchVerdict v) {
  switch (v) {
    case BenchVerdict::kFaster: return "faster";
    case BenchVerdict::kSlower: return "slower";
    case BenchVerdict::kSame: return "same";
    case BenchVerdict::kInconclusive: return "inconclusive";
  }
  return "?";
}

std::optional<BenchVerdict> parse_bench_verdict(std::string_view name) {
  for (BenchVerdict v : {BenchVerdict::kFaster, BenchVerdict::kSlower, BenchVerdict::kSame, BenchVerdict::kInconclusive})
    if (bench_verdict_name(v) == name) return v;
  return std::nullopt;
}

Verdict verdict_for_hypothesis(BenchVerdict outcome, BenchVerdict hypothesis) {
  if (outcome == BenchVerdict::kInconclusive || hypothesis == BenchVerdict::kInconclusive) return Verdict::kInconclusive;
  return outcome == hypothesis ? Verdict::kConfirmed : Verdict::kRefuted;
}

BenchDecision decide(std::span<const double> lr, std::span<const double> aa, const BenchOptions& o) {
  BenchDecision d;
  if (lr.empty()) {
    d.reason = "no rounds";
    return d;
  }
  const double m = median(lr);
  auto [lo, hi] = bootstrap_median_ci(lr, o.bootstrap, o.seed);
  d.ratio = std::exp(m);
  d.ratio_lo = std::exp(lo);
  d.ratio_hi = std::exp(hi);
  d.p_value = wilcoxon_signed_rank(lr).p_two_sided;
  if (!aa.empty()) {
    auto [alo, ahi] = bootstrap_median_ci(aa, o.bootstrap, o.seed + 1);
    d.aa_lo = alo;
    d.aa_hi = ahi;
    d.threshold = std::max(std::fabs(alo), std::fabs(ahi));
  }
  const double same_band = std::log1p(o.resolution);
  const std::string ci = fmt::format("ratio {:.4f} [{:.4f}, {:.4f}], noise threshold +-{:.2f}%, p={:.3g}", d.ratio,
                                     d.ratio_lo, d.ratio_hi, 100 * (std::exp(d.threshold) - 1), d.p_value);
  if (lo > d.threshold && d.p_value < o.alpha) {
    d.verdict = BenchVerdict::kSlower;
    d.reason = "CI wholly above the noise threshold: " + ci;
  } else if (hi < -d.threshold && d.p_value < o.alpha) {
    d.verdict = BenchVerdict::kFaster;
    d.reason = "CI wholly below the noise threshold: " + ci;
  } else if (lo > -same_band && hi < same_band && d.threshold < same_band) {
    // "same" needs both the A/B CI and the machine's noise resolved below the resolution.
    d.verdict = BenchVerdict::kSame;
    d.reason = fmt::format("CI and noise threshold wholly inside +-{:.2f}%: {}", 100 * o.resolution, ci);
  } else {
    d.reason = "CI overlaps the noise band: " + ci;
  }
  return d;
}

}  // namespace recur::probe
