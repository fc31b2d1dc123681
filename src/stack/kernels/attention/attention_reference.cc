// reference_attention() (attention_reference.h): two passes in double, max-subtracted softmax.
#include "kernels/attention/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace recur::kernels::attention {

void reference_attention(const double* q, const double* k, const double* v, int64_t n, int64_t stride, int head_dim,
                         double scale, double* out, double* magnitude) {
  std::vector<double> s(static_cast<size_t>(n)), sabs(static_cast<size_t>(n));
  double mx = -INFINITY;
  for (int64_t t = 0; t < n; ++t) {
    double dot = 0, adot = 0;
    for (int i = 0; i < head_dim; ++i) {
      const double prod = q[i] * k[t * stride + i];
      dot += prod;
      adot += std::fabs(prod);
    }
    s[size_t(t)] = scale * dot;
    sabs[size_t(t)] = scale * adot;
    mx = std::max(mx, s[size_t(t)]);
  }
  double sum = 0;
  for (int64_t t = 0; t < n; ++t) sum += (s[size_t(t)] = std::exp(s[size_t(t)] - mx));
  for (int64_t t = 0; t < n; ++t) s[size_t(t)] /= sum;
  for (int i = 0; i < head_dim; ++i) {
    double o = 0;
    for (int64_t t = 0; t < n; ++t) o += s[size_t(t)] * v[t * stride + i];
    double m = 0;
    for (int64_t t = 0; t < n; ++t) {
      const double vt = v[t * stride + i];
      m += s[size_t(t)] * (std::fabs(vt) + std::fabs(vt - o) * sabs[size_t(t)]);
    }
    out[i] = o;
    magnitude[i] = m;
  }
}

}  // namespace recur::kernels::attention
