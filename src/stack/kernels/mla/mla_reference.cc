#include "kernels/mla/mla_reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace recur::kernels::mla {

void reference_row(const double* q, const double* lat, int64_t n, const double* wk, const double* wv, const Dims& d,
                   double scale, double* out, double* magnitude) {
  const int64_t R = d.rank, E = d.rope, N = d.nope, V = d.v_dim, LW = d.latent_width();
  std::vector<double> score(static_cast<size_t>(n)), terms(static_cast<size_t>(n)), values(static_cast<size_t>(n * V)),
      values_abs(static_cast<size_t>(n * V));
  double mx = -INFINITY;
  for (int64_t t = 0; t < n; ++t) {
    const double* c = lat + t * LW;
    double s = 0, abs_sum = 0;
    for (int64_t i = 0; i < N; ++i) {
      double k = 0, k_abs = 0;  // the decompressed key: (W_UK c_t)_i = sum_r wk[r][i] c_t[r]
      for (int64_t r = 0; r < R; ++r) {
        k += wk[r * N + i] * c[r];
        k_abs += std::fabs(wk[r * N + i] * c[r]);
      }
      s += q[i] * k;
      abs_sum += std::fabs(q[i]) * k_abs;  // the absorbed form sums these terms in another order
    }
    for (int64_t i = 0; i < E; ++i) {
      s += q[N + i] * c[R + i];
      abs_sum += std::fabs(q[N + i] * c[R + i]);
    }
    score[size_t(t)] = scale * s;
    terms[size_t(t)] = scale * abs_sum;
    mx = std::max(mx, score[size_t(t)]);
    for (int64_t v = 0; v < V; ++v) {
      double y = 0, y_abs = 0;
      for (int64_t r = 0; r < R; ++r) {
        y += wv[v * R + r] * c[r];
        y_abs += std::fabs(wv[v * R + r] * c[r]);
      }
      values[size_t(t * V + v)] = y;
      values_abs[size_t(t * V + v)] = y_abs;
    }
  }
  double sum = 0;
  for (double& s : score) sum += (s = std::exp(s - mx));
  for (int64_t v = 0; v < V; ++v) {
    double y = 0;
    for (int64_t t = 0; t < n; ++t) y += score[size_t(t)] / sum * values[size_t(t * V + v)];
    out[v] = y;
  }
  if (magnitude == nullptr) return;
  for (int64_t v = 0; v < V; ++v) {
    double m = 0;
    for (int64_t t = 0; t < n; ++t) {
      const double p = score[size_t(t)] / sum, x = values[size_t(t * V + v)];
      m += p * values_abs[size_t(t * V + v)] + p * std::fabs(x - out[v]) * terms[size_t(t)];
    }
    magnitude[v] = m;
  }
}

}  // namespace recur::kernels::mla
