#include "probe/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "probe/rng.h"

namespace recur::probe {

double quantile_sorted(std::span<const double> s, double q) {
  if (s.empty()) return 0;
  double h = q * double(s.size() - 1);
  size_t lo = size_t(std::floor(h));
  size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (h - double(lo)) * (s[hi] - s[lo]);
}

double median(std::span<const double> x) {
  std::vector<double> v(x.begin(), x.end());
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

std::pair<double, double> bootstrap_median_ci(std::span<const double> x, int resamples, uint64_t seed, double level) {
  if (x.empty()) return {0, 0};
  SplitMix64 rng(seed);
  std::vector<double> medians(size_t(std::max(resamples, 1)));
  std::vector<double> r(x.size());
  for (double& m : medians) {
    for (double& v : r) v = x[rng.below(x.size())];
    // The median of the resample: nth_element for the middle one or two order statistics.
    size_t mid = r.size() / 2;
    std::nth_element(r.begin(), r.begin() + long(mid), r.end());
    double upper = r[mid];
    if (r.size() % 2 == 0) {
      double lower = *std::max_element(r.begin(), r.begin() + long(mid));
      m = 0.5 * (lower + upper);
    } else {
      m = upper;
    }
  }
  std::sort(medians.begin(), medians.end());
  return {quantile_sorted(medians, (1 - level) / 2), quantile_sorted(medians, (1 + level) / 2)};
}

WilcoxonResult wilcoxon_signed_rank(std::span<const double> d) {
  WilcoxonResult out;
  std::vector<std::pair<double, bool>> a;  // |d|, positive
  for (double v : d)
    if (v != 0 && std::isfinite(v)) a.emplace_back(std::fabs(v), v > 0);
  const int n = int(a.size());
  out.n = n;
  if (n == 0) return out;
  std::sort(a.begin(), a.end());
  std::vector<double> ranks(static_cast<size_t>(n));
  double tie_term = 0;
  bool ties = false;
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && a[size_t(j + 1)].first == a[size_t(i)].first) ++j;
    double r = 0.5 * double(i + j) + 1;
    for (int k = i; k <= j; ++k) ranks[size_t(k)] = r;
    double t = double(j - i + 1);
    if (t > 1) ties = true;
    tie_term += t * t * t - t;
    i = j + 1;
  }
  for (int i = 0; i < n; ++i)
    if (a[size_t(i)].second) out.w_plus += ranks[size_t(i)];

  const double total = double(n) * double(n + 1) / 2;
  if (n <= 25 && !ties) {
    // Exact null: the number of subsets of {1..n} with each rank sum.
    std::vector<double> count(size_t(total) + 1, 0.0);
    count[0] = 1;
    for (int r = 1; r <= n; ++r)
      for (int s = int(total); s >= r; --s) count[size_t(s)] += count[size_t(s - r)];
    const double all = std::ldexp(1.0, n);
    const int w = int(std::lround(std::min(out.w_plus, total - out.w_plus)));
    double tail = 0;
    for (int s = 0; s <= w; ++s) tail += count[size_t(s)];
    out.p_two_sided = std::min(1.0, 2 * tail / all);
    out.exact = true;
    return out;
  }
  const double mean = total / 2;
  const double var = double(n) * double(n + 1) * double(2 * n + 1) / 24 - tie_term / 48;
  const double dev = std::fabs(out.w_plus - mean);
  const double z = var > 0 ? std::max(dev - 0.5, 0.0) / std::sqrt(var) : 0;
  out.p_two_sided = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return out;
}

}  // namespace recur::probe
