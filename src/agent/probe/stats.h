// Statistics for bench: medians, quantiles, a percentile-bootstrap CI of the median and the
// Wilcoxon signed-rank test. Robust, distribution-free methods, because timing samples on a
// shared machine are skewed and have outliers (docs/probes.md). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace recur::probe {

double median(std::span<const double> x);
// Linear interpolation between order statistics (R's type 7); `sorted` must be ascending.
double quantile_sorted(std::span<const double> sorted, double q);

// Percentile bootstrap of the median: `resamples` resamples with replacement drawn by
// SplitMix64(seed) (index = floor(uniform * n)); returns the (1-level)/2 and (1+level)/2
// quantiles of the resampled medians. Empty input gives {0, 0}.
std::pair<double, double> bootstrap_median_ci(std::span<const double> x, int resamples = 2000, uint64_t seed = 1,
                                              double level = 0.95);

struct WilcoxonResult {
  int n = 0;              // non-zero differences used
  double w_plus = 0;      // sum of the ranks of the positive differences
  double p_two_sided = 1;
  bool exact = false;     // exact null distribution (n <= 25, no ties) or normal approximation
};

// Wilcoxon signed-rank test of "the differences are symmetric about 0". Zeros are dropped;
// ties get average ranks. Exact for n <= 25 without ties; otherwise the normal approximation
// with tie correction and a continuity correction of 0.5 (as R's wilcox.test).
WilcoxonResult wilcoxon_signed_rank(std::span<const double> d);

}  // namespace recur::probe
