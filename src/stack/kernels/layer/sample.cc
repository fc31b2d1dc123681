// Sampling: greedy, temperature, top-p; probabilities and the walk in double, one seeded
// uniform per row, so sample_reference-style recomputation gives the same token.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/layer/layer.h"

namespace recur::kernels {

double sample_uniform(uint64_t seed, int64_t row) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + uint64_t(row) * 0xbf58476d1ce4e5b9ull + 0x94d049bb133111ebull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

Status sample(const float* logits, int64_t rows, int64_t vocab, const SampleParams& p, int32_t* out) {
  if (std::isnan(p.temperature) || !(p.top_p > 0 && p.top_p <= 1))
    return invalid_argument("sample: temperature {} must not be NaN and top_p {} must be in (0, 1]", p.temperature, p.top_p);
  if (vocab < 1) return invalid_argument("sample: vocab {} must be >= 1", vocab);
  std::vector<int32_t> order;
  std::vector<double> prob;  // sized on the first sampled row: greedy rows (argmax) allocate nothing
  for (int64_t r = 0; r < rows; ++r) {
    const float* l = logits + r * vocab;
    int32_t best = 0;
    for (int64_t i = 1; i < vocab; ++i)
      if (l[i] > l[best]) best = int32_t(i);
    if (p.temperature <= 0) {
      out[r] = best;
      continue;
    }
    prob.resize(size_t(vocab));
    const double inv_t = 1.0 / double(p.temperature), mx = double(l[best]);
    double total = 0;
    for (int64_t i = 0; i < vocab; ++i) total += prob[size_t(i)] = std::exp((double(l[i]) - mx) * inv_t);
    // Walk order: by index for top_p = 1 (no sort needed); by logit, ties -> lower index, else.
    order.resize(size_t(vocab));
    std::iota(order.begin(), order.end(), 0);
    double kept = total;
    int64_t n = vocab;
    if (p.top_p < 1) {
      std::stable_sort(order.begin(), order.end(), [l](int32_t a, int32_t b) { return l[a] > l[b]; });
      const double need = double(p.top_p) * total;
      double acc = 0;
      for (n = 0; n < vocab;) {
        acc += prob[size_t(order[size_t(n)])];
        ++n;
        if (acc >= need) break;
      }
      kept = acc;
    }
    const double target = sample_uniform(p.seed, r) * kept;
    double acc = 0;
    int32_t pick = order[size_t(n - 1)];
    for (int64_t j = 0; j < n; ++j) {
      acc += prob[size_t(order[size_t(j)])];
      if (acc > target) {
        pick = order[size_t(j)];
        break;
      }
    }
    out[r] = pick;
  }
  return ok_status();
}

}  // namespace recur::kernels
