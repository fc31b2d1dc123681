#include "analyze/hta_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace recur::analyze {
namespace {

// numpy.percentile(..., method="linear") of sorted values.
double quantile(const std::vector<double>& sorted, double q) {
  double pos = q * double(sorted.size() - 1);
  size_t lo = size_t(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - double(lo);
  double a = sorted[lo], b = sorted[hi];
  // numpy's lerp: from the nearer end, so that the result is exact at both ends.
  return frac >= 0.5 ? b - (b - a) * (1 - frac) : a + (b - a) * frac;
}

}  // namespace

Describe describe(std::vector<double>& values) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  Describe d;
  d.count = values.size();
  if (values.empty()) {
    d.mean = d.std = d.min = d.p25 = d.p50 = d.p75 = d.max = kNaN;
    return d;
  }
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / double(values.size());
  if (values.size() > 1) {
    double ss = 0;
    for (double v : values) ss += (v - d.mean) * (v - d.mean);
    d.std = std::sqrt(ss / double(values.size() - 1));
  } else {
    d.std = kNaN;
  }
  d.min = values.front();
  d.max = values.back();
  d.p25 = quantile(values, 0.25);
  d.p50 = quantile(values, 0.5);
  d.p75 = quantile(values, 0.75);
  return d;
}

double numpy_round(double x, int decimals) {
  if (!std::isfinite(x)) return x;
  double scale = std::pow(10.0, decimals);
  return std::nearbyint(x * scale) / scale;
}

}  // namespace recur::analyze
