// Test helpers for the KDA kernels: random problems and error measurement against the
// float64 reference. Test-only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/kda/kda.h"
#include "kernels/kda/kda_reference.h"

namespace recur::kda::testing {

// Inputs for `shape` drawn from a seeded generator. The gate inputs follow the form: raw
// logits N(0, 1.5^2) with dt_bias N(0, 1), A_log U(-1, 1); precomputed g U(g_min, 0).
struct Problem {
  Shape shape;
  Params params;
  std::vector<float> q, k, v, g, b, a_log, dt_bias, state;

  Problem(const Shape& s, const Params& p, uint64_t seed, float g_min = -3.0f) : shape(s), params(p) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> n01(0.0f, 1.0f);
    auto fill = [&](std::vector<float>& x, size_t n, float sd) {
      x.resize(n);
      for (auto& e : x) e = sd * n01(rng);
    };
    const size_t rows = size_t(s.batch * s.tokens);
    fill(q, rows * s.hk * s.k, 1.0f);
    fill(k, rows * s.hk * s.k, 1.0f);
    fill(v, rows * s.hv * s.v, 1.0f);
    fill(b, rows * s.hv, 2.0f);
    fill(dt_bias, size_t(s.hv * s.k), 1.0f);
    fill(state, size_t(s.batch * s.hv * s.k * s.v), 0.3f);
    std::uniform_real_distribution<float> ua(-1.0f, 1.0f);
    a_log.resize(size_t(s.hv));
    for (auto& e : a_log) e = ua(rng);
    if (p.gate == GateForm::kPrecomputed) {
      std::uniform_real_distribution<float> ug(g_min, 0.0f);
      g.resize(rows * s.hv * s.k);
      for (auto& e : g) e = ug(rng);
    } else {
      fill(g, rows * s.hv * s.k, 1.5f);
    }
  }
  Inputs inputs() const {
    return Inputs{q.data(), k.data(), v.data(), g.data(), b.data(), a_log.data(), dt_bias.data()};
  }
  // The same inputs restricted to token t (a T = 1 view), for stepping token by token.
  struct TokenView {
    Shape shape;
    std::vector<float> q, k, v, g, b;
    Inputs inputs(const Problem& p) const {
      return Inputs{q.data(), k.data(), v.data(), g.data(), b.data(), p.a_log.data(), p.dt_bias.data()};
    }
  };
  // Tokens [t0, t0 + n) of every sequence as their own problem view.
  TokenView tokens(int64_t t0, int64_t n) const {
    TokenView tv;
    tv.shape = shape;
    tv.shape.tokens = n;
    auto cut = [&](const std::vector<float>& src, std::vector<float>& dst, int64_t row) {
      dst.clear();
      for (int64_t bb = 0; bb < shape.batch; ++bb) {
        auto first = src.begin() + (bb * shape.tokens + t0) * row;
        dst.insert(dst.end(), first, first + n * row);
      }
    };
    cut(q, tv.q, shape.hk * shape.k);
    cut(k, tv.k, shape.hk * shape.k);
    cut(v, tv.v, shape.hv * shape.v);
    cut(g, tv.g, shape.hv * shape.k);
    cut(b, tv.b, shape.hv);
    return tv;
  }
};

struct ErrorReport {
  double max_abs = 0;   // max |x - ref|
  double max_rel = 0;   // max |x - ref| / (|ref| + floor), floor = 1e-3 * max|ref|
  double ref_max = 0;   // max |ref|
  size_t worst = 0;     // index of the max_abs element
  std::string to_string() const {
    return fmt::format("max_abs={:.3g} max_rel={:.3g} (worst index {}, max|ref|={:.3g})",
                       max_abs, max_rel, worst, ref_max);
  }
};

template <class A, class B>
ErrorReport compare(const A& x, const B& ref) {
  ErrorReport r;
  for (size_t i = 0; i < ref.size(); ++i) r.ref_max = std::max(r.ref_max, std::fabs(double(ref[i])));
  const double floor = 1e-3 * r.ref_max + 1e-30;
  for (size_t i = 0; i < ref.size(); ++i) {
    double e = std::fabs(double(x[i]) - double(ref[i]));
    if (!(e <= r.max_abs)) {  // also catches NaN
      r.max_abs = std::isnan(e) ? INFINITY : e;
      r.worst = i;
    }
    r.max_rel = std::max(r.max_rel, std::isnan(e) ? INFINITY : e / (std::fabs(double(ref[i])) + floor));
  }
  return r;
}

inline std::vector<double> to_double(const std::vector<float>& x) {
  return std::vector<double>(x.begin(), x.end());
}

}  // namespace recur::kda::testing
