// Shared helpers of the GEMM tests: random matrices and error measures against a reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace recur::gemm::testing {

// n values: dist 0 = normal(0, 1), 1 = uniform(-1, 1) + 0.5 (a non-zero mean, so sums grow),
// 2 = normal with magnitudes spread over 2^-8 .. 2^8.
inline std::vector<float> random_values(size_t n, uint64_t seed, int dist = 0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  std::uniform_real_distribution<float> ed(-8.0f, 8.0f);
  std::vector<float> v(n);
  for (auto& e : v) {
    if (dist == 0) e = nd(rng);
    else if (dist == 1) e = ud(rng) + 0.5f;
    else e = nd(rng) * std::exp2(ed(rng));
  }
  return v;
}

struct ErrorStats {
  double max_rel = 0;  // max |y - ref| / mag
  double rms_rel = 0;  // sqrt(mean((|y - ref| / mag)^2))
  size_t worst = 0;    // index of the max
};

inline ErrorStats error_stats(std::span<const float> y, std::span<const double> ref, std::span<const double> mag) {
  ErrorStats s;
  double sq = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double e = mag[i] > 0 ? std::fabs(double(y[i]) - ref[i]) / mag[i] : std::fabs(double(y[i]) - ref[i]);
    sq += e * e;
    if (e > s.max_rel) {
      s.max_rel = e;
      s.worst = i;
    }
  }
  s.rms_rel = y.empty() ? 0 : std::sqrt(sq / double(y.size()));
  return s;
}

}  // namespace recur::gemm::testing
