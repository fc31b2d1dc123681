// The KDA vector primitives on every ISA path this machine runs, against double-precision
// formulas, with lengths that exercise the masked tails.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/cpu_features.h"
#include "kernels/kda/kda_ops.h"

namespace recur::kda {
namespace {

std::vector<float> random_vec(int n, float lo, float hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& e : x) e = u(rng);
  return x;
}

TEST(KdaOps, ExpMatchesLibmOverTheWholeRange) {
  for (Isa isa : runnable_isas()) {
    const KdaOps& ops = *kOps.for_isa(isa);
    for (int n : {1, 7, 16, 33, 1000}) {
      auto x = random_vec(n, -120.0f, 40.0f, uint64_t(n));
      x[0] = -87.5f;
      std::vector<float> y(x.size());
      ops.exp(x.data(), y.data(), n);
      for (int i = 0; i < n; ++i) {
        double ref = std::exp(double(x[i]));
        double err = std::fabs(y[i] - ref);
        EXPECT_LE(err, 4e-7 * ref + 2e-38) << isa_name(isa) << " x=" << x[i];
      }
    }
  }
}

TEST(KdaOps, GateFormsMatchDouble) {
  for (Isa isa : runnable_isas()) {
    const KdaOps& ops = *kOps.for_isa(isa);
    for (bool recip : {false, true}) {
      const int n = 45;
      auto x = random_vec(n, -25.0f, 25.0f, 3);
      auto bias = random_vec(n, -1.0f, 1.0f, 4);
      std::vector<float> g(n);
      const float ea = 0.7f;
      ops.gate(1, x.data(), bias.data(), ea, -5.0f, g.data(), n, recip);
      for (int i = 0; i < n; ++i) {
        double z = double(x[i]) + bias[i];
        double ref = -ea * (z > 30 ? z : std::log1p(std::exp(z)));
        EXPECT_LE(std::fabs(g[i] - ref), 1e-6 * std::fabs(ref) + 1e-12) << isa_name(isa) << " z=" << z;
      }
      ops.gate(2, x.data(), bias.data(), ea, -5.0f, g.data(), n, recip);
      for (int i = 0; i < n; ++i) {
        double z = double(x[i]) + bias[i];
        double ref = -5.0 / (1.0 + std::exp(-ea * z));
        EXPECT_LE(std::fabs(g[i] - ref), 2e-6 * std::fabs(ref) + 1e-12) << isa_name(isa) << " z=" << z;
      }
    }
  }
}

TEST(KdaOps, TileReduceAndUpdateOnOddTiles) {
  for (Isa isa : runnable_isas()) {
    const KdaOps& ops = *kOps.for_isa(isa);
    const int K = 19, V = 77;
    for (int layout : {0, 1}) {
      for (auto [v0, bv] : {std::pair{0, 77}, std::pair{5, 37}, std::pair{70, 7}, std::pair{3, 1}}) {
        auto S = random_vec(K * V, -1, 1, 11);
        auto x1 = random_vec(K, -1, 1, 12), x2 = random_vec(K, -1, 1, 13);
        auto E = random_vec(K, 0, 1, 14);
        const int r = 3;
        auto C = random_vec(r * K, -1, 1, 15), X = random_vec(r * bv, -1, 1, 16);
        auto at = [&](const std::vector<float>& s, int c, int j) {
          return double(layout == 0 ? s[size_t(c * V + j)] : s[size_t(j * K + c)]);
        };
        std::vector<float> o1(bv), o2(bv);
        ops.reduce2(S.data(), layout, K, V, v0, bv, x1.data(), x2.data(), o1.data(), o2.data());
        for (int j = 0; j < bv; ++j) {
          double r1 = 0, r2 = 0;
          for (int c = 0; c < K; ++c) {
            r1 += at(S, c, v0 + j) * x1[c];
            r2 += at(S, c, v0 + j) * x2[c];
          }
          EXPECT_NEAR(o1[j], r1, 1e-5) << isa_name(isa) << " layout " << layout;
          EXPECT_NEAR(o2[j], r2, 1e-5);
        }
        auto S2 = S;
        ops.update(S2.data(), layout, K, V, v0, bv, E.data(), r, C.data(), K, X.data(), bv);
        for (int c = 0; c < K; ++c) {
          for (int j = 0; j < V; ++j) {
            double ref = at(S, c, j);
            if (j >= v0 && j < v0 + bv) {
              ref *= E[c];
              for (int i = 0; i < r; ++i) ref += double(C[i * K + c]) * X[i * bv + j - v0];
            }
            EXPECT_NEAR(at(S2, c, j), ref, 1e-5) << isa_name(isa) << " c=" << c << " j=" << j;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace recur::kda
