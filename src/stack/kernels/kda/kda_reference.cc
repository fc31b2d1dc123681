#include "kernels/kda/kda_reference.h"

#include <cmath>

namespace recur::kda {
namespace {

double softplus(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

void reference_gate(const Shape& s, const Params& p, const Inputs& in, int64_t b, int64_t t,
                    int64_t h, double* g) {
  const float* graw = in.g + ((b * s.tokens + t) * s.hv + h) * s.k;
  for (int64_t c = 0; c < s.k; ++c) {
    double x = graw[c];
    if (p.gate == GateForm::kPrecomputed) {
      g[c] = x;
      continue;
    }
    if (in.dt_bias != nullptr) x += in.dt_bias[h * s.k + c];
    double ea = std::exp(double(in.a_log[h]));
    g[c] = p.gate == GateForm::kSoftplus ? -ea * softplus(x) : double(p.lower_bound) * sigmoid(ea * x);
  }
}

void reference_forward(const Shape& s, const Params& p, const Inputs& in,
                       std::vector<double>& state, std::vector<double>& out) {
  const int64_t K = s.k, V = s.v, group = s.hv / s.hk;
  const double scale = p.scale > 0 ? p.scale : 1.0 / std::sqrt(double(K));
  out.assign(size_t(s.batch * s.tokens * s.hv * V), 0.0);
  std::vector<double> q(K), k(K), g(K), u(V), vd(V);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.hv; ++h) {
      double* S = state.data() + (b * s.hv + h) * K * V;
      auto at = [&](int64_t c, int64_t j) -> double& {
        return p.layout == StateLayout::kKV ? S[c * V + j] : S[j * K + c];
      };
      for (int64_t t = 0; t < s.tokens; ++t) {
        const int64_t hk = h / group;
        const float* qr = in.q + ((b * s.tokens + t) * s.hk + hk) * K;
        const float* kr = in.k + ((b * s.tokens + t) * s.hk + hk) * K;
        const float* vr = in.v + ((b * s.tokens + t) * s.hv + h) * V;
        double qq = 0, kk = 0;
        for (int64_t c = 0; c < K; ++c) {
          qq += double(qr[c]) * qr[c];
          kk += double(kr[c]) * kr[c];
        }
        for (int64_t c = 0; c < K; ++c) {
          q[c] = qr[c] / std::sqrt(qq + p.eps) * scale;
          k[c] = kr[c] / std::sqrt(kk + p.eps);
        }
        reference_gate(s, p, in, b, t, h, g.data());
        const double beta = sigmoid(in.b[(b * s.tokens + t) * s.hv + h]);
        // S <- diag(exp g) S
        for (int64_t c = 0; c < K; ++c) {
          double d = std::exp(g[c]);
          for (int64_t j = 0; j < V; ++j) at(c, j) *= d;
        }
        // v' = beta (v - S^T k)
        for (int64_t j = 0; j < V; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < K; ++c) acc += at(c, j) * k[c];
          vd[j] = beta * (vr[j] - acc);
        }
        // S <- S + k v'^T
        for (int64_t c = 0; c < K; ++c) {
          for (int64_t j = 0; j < V; ++j) at(c, j) += k[c] * vd[j];
        }
        // o = S^T q
        double* o = out.data() + ((b * s.tokens + t) * s.hv + h) * V;
        for (int64_t j = 0; j < V; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < K; ++c) acc += at(c, j) * q[c];
          o[j] = acc;
        }
      }
    }
  }
}

}  // namespace recur::kda
