// The KDA primitives (kda_ops.h), written once over a vector-traits type and instantiated per
// ISA by kda_ops_scalar.cc, kda_ops_avx2.cc and kda_ops_avx512.cc.
//
// Include this only from those files, after defining the traits type. Everything here has
// internal linkage so the three compilations (with different -m flags) never meet in the link.
//
// Traits V provide: R (register type), W (lanes), zero, set1, load, store, load_n, store_n
// (first n < W lanes, others zero / untouched), add, sub, mul, div, fma(a, b, c) = a b + c,
// max, abs, sqrt, rsqrt_nr, rcp_nr (estimate + one Newton step), exp, log (positive normal
// inputs), select_eq(a, b, x, y) = a == b ? x : y, hsum.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/kda/kda_ops.h"

namespace recur::kda {
namespace {

// f(i, m) for each W-wide chunk [i, i + m) of [0, n); m == W except for the tail.
template <class V, class F>
inline void each_chunk(int n, F&& f) {
  int i = 0;
  for (; i + V::W <= n; i += V::W) f(i, V::W);
  if (i < n) f(i, n - i);
}

template <class V>
inline typename V::R ld(const float* p, int m) {
  return m == V::W ? V::load(p) : V::load_n(p, m);
}
template <class V>
inline void st(float* p, typename V::R x, int m) {
  if (m == V::W) {
    V::store(p, x);
  } else {
    V::store_n(p, x, m);
  }
}

template <class V>
float dot_t(const float* a, const float* b, int n) {
  using R = typename V::R;
  R acc0 = V::zero(), acc1 = V::zero();
  int i = 0;
  for (; i + 2 * V::W <= n; i += 2 * V::W) {
    acc0 = V::fma(V::load(a + i), V::load(b + i), acc0);
    acc1 = V::fma(V::load(a + i + V::W), V::load(b + i + V::W), acc1);
  }
  for (; i < n; i += V::W) {
    int m = std::min(V::W, n - i);
    acc0 = V::fma(ld<V>(a + i, m), ld<V>(b + i, m), acc0);
  }
  return V::hsum(V::add(acc0, acc1));
}

template <class V>
void mul_t(const float* a, const float* b, float* y, int n) {
  each_chunk<V>(n, [&](int i, int m) { st<V>(y + i, V::mul(ld<V>(a + i, m), ld<V>(b + i, m)), m); });
}

template <class V>
void exp_t(const float* x, float* y, int n) {
  each_chunk<V>(n, [&](int i, int m) { st<V>(y + i, V::exp(ld<V>(x + i, m)), m); });
}

template <class V>
void axpy_t(float a, const float* x, float* y, int n) {
  auto va = V::set1(a);
  each_chunk<V>(n, [&](int i, int m) { st<V>(y + i, V::fma(va, ld<V>(x + i, m), ld<V>(y + i, m)), m); });
}

template <class V>
void l2norm_t(const float* x, float* y, int n, float eps, float scale, bool recip) {
  float ss = dot_t<V>(x, x, n);
  auto vs = V::set1(scale);
  if (recip) {
    auto r = V::mul(V::rsqrt_nr(V::set1(ss + eps)), vs);
    each_chunk<V>(n, [&](int i, int m) { st<V>(y + i, V::mul(ld<V>(x + i, m), r), m); });
  } else {
    auto nrm = V::sqrt(V::set1(ss + eps));
    each_chunk<V>(n, [&](int i, int m) {
      st<V>(y + i, V::mul(V::div(ld<V>(x + i, m), nrm), vs), m);
    });
  }
}

// log1p(t) for t in (0, 1]: log(u) * t / (u - 1) with u = 1 + t, exact when u rounds to 1.
template <class V>
inline typename V::R log1p_t(typename V::R t, bool recip) {
  auto one = V::set1(1.0f);
  auto u = V::add(one, t);
  auto den = V::sub(u, one);
  auto ratio = recip ? V::mul(t, V::rcp_nr(den)) : V::div(t, den);
  return V::select_eq(den, V::zero(), t, V::mul(V::log(u), ratio));
}

template <class V>
inline typename V::R sigmoid_t(typename V::R x, bool recip) {
  auto one = V::set1(1.0f);
  auto den = V::add(one, V::exp(V::sub(V::zero(), x)));
  return recip ? V::rcp_nr(den) : V::div(one, den);
}

template <class V>
void gate_t(int form, const float* graw, const float* bias, float ea, float lb, float* g, int n,
            bool recip) {
  auto vea = V::set1(ea);
  auto vlb = V::set1(lb);
  each_chunk<V>(n, [&](int i, int m) {
    auto x = ld<V>(graw + i, m);
    if (form == 0) {
      st<V>(g + i, x, m);
      return;
    }
    if (bias != nullptr) x = V::add(x, ld<V>(bias + i, m));
    typename V::R y;
    if (form == 1) {  // -exp(A_log) softplus(x), softplus = max(x, 0) + log1p(exp(-|x|))
      auto sp = V::add(V::max(x, V::zero()),
                       log1p_t<V>(V::exp(V::sub(V::zero(), V::abs(x))), recip));
      y = V::sub(V::zero(), V::mul(vea, sp));
    } else {  // lb sigmoid(exp(A_log) x)
      y = V::mul(vlb, sigmoid_t<V>(V::mul(vea, x), recip));
    }
    st<V>(g + i, y, m);
  });
}

template <class V>
void decay_dots_t(const float* kj, const float* gt, const float* gj, const float* x1,
                  const float* x2, int n, float* c, float* d1, float* d2) {
  using R = typename V::R;
  R a1 = V::zero(), a2 = V::zero();
  each_chunk<V>(n, [&](int i, int m) {
    R e = V::exp(V::sub(ld<V>(gt + i, m), ld<V>(gj + i, m)));
    R ci = V::mul(ld<V>(kj + i, m), e);
    if (c != nullptr) st<V>(c + i, ci, m);
    a1 = V::fma(ci, ld<V>(x1 + i, m), a1);
    a2 = V::fma(ci, ld<V>(x2 + i, m), a2);
  });
  *d1 = V::hsum(a1);
  *d2 = V::hsum(a2);
}

template <class V>
void delta_out_t(const float* v, const float* u, const float* w, float beta, float kq, float* vd,
                 float* o, int n) {
  auto vb = V::set1(beta);
  auto vkq = V::set1(kq);
  each_chunk<V>(n, [&](int i, int m) {
    auto d = V::mul(vb, V::sub(ld<V>(v + i, m), ld<V>(u + i, m)));
    st<V>(vd + i, d, m);
    st<V>(o + i, V::fma(vkq, d, ld<V>(w + i, m)), m);
  });
}

constexpr int kPrefetchRows = 8;

// --- state tiles, layout [K][V]: a strip of NV vectors (the last one has `last` lanes) ---

template <class V, int NV>
void reduce2_kv_strip(const float* S, int K, int ldv, const float* x1, const float* x2, int last,
                      float* o1, float* o2) {
  using R = typename V::R;
  R a[NV], b[NV];
  for (int i = 0; i < NV; ++i) a[i] = b[i] = V::zero();
  for (int c = 0; c < K; ++c) {
    const float* row = S + int64_t(c) * ldv;
    // Rows are ldv apart and a strip is only a few lines of each: help the prefetcher.
    if (c + kPrefetchRows < K) {
      for (int i = 0; i < NV; ++i) __builtin_prefetch(row + kPrefetchRows * int64_t(ldv) + i * V::W);
    }
    R s1 = V::set1(x1[c]), s2 = V::set1(x2[c]);
    for (int i = 0; i < NV; ++i) {
      R s = ld<V>(row + i * V::W, i == NV - 1 ? last : V::W);
      a[i] = V::fma(s, s1, a[i]);
      b[i] = V::fma(s, s2, b[i]);
    }
  }
  for (int i = 0; i < NV; ++i) {
    int m = i == NV - 1 ? last : V::W;
    st<V>(o1 + i * V::W, a[i], m);
    st<V>(o2 + i * V::W, b[i], m);
  }
}

template <class V, int NV>
void update_kv_strip(float* S, int K, int ldv, const float* E, int r, const float* C,
                     int64_t cstride, const float* X, int64_t xstride, int last) {
  using R = typename V::R;
  R x0[NV];
  for (int i = 0; i < NV; ++i) x0[i] = ld<V>(X + i * V::W, i == NV - 1 ? last : V::W);
  for (int c = 0; c < K; ++c) {
    float* row = S + int64_t(c) * ldv;
    R e = V::set1(E[c]);
    R c0 = V::set1(C[c]);
    R acc[NV];
    for (int i = 0; i < NV; ++i) {
      acc[i] = V::fma(c0, x0[i], V::mul(e, ld<V>(row + i * V::W, i == NV - 1 ? last : V::W)));
    }
    for (int j = 1; j < r; ++j) {
      R cj = V::set1(C[j * cstride + c]);
      const float* xj = X + j * xstride;
      for (int i = 0; i < NV; ++i) {
        acc[i] = V::fma(cj, ld<V>(xj + i * V::W, i == NV - 1 ? last : V::W), acc[i]);
      }
    }
    for (int i = 0; i < NV; ++i) st<V>(row + i * V::W, acc[i], i == NV - 1 ? last : V::W);
  }
}

// Calls strip<NV>(column offset, lanes in last vector) over [0, bv) in strips of <= 4 vectors.
template <class V, class F>
inline void for_strips(int bv, F&& strip) {
  for (int j0 = 0; j0 < bv; j0 += 4 * V::W) {
    int width = std::min(4 * V::W, bv - j0);
    int nv = (width + V::W - 1) / V::W;
    int last = width - (nv - 1) * V::W;
    strip(j0, nv, last);
  }
}

// --- state tiles, layout [V][K]: each tile row is one column v of S, contiguous over K ---

template <class V>
void reduce2_vk_row(const float* row, int K, const float* x1, const float* x2, float* o1,
                    float* o2) {
  using R = typename V::R;
  R a0 = V::zero(), a1 = V::zero(), b0 = V::zero(), b1 = V::zero();
  int c = 0;
  for (; c + 2 * V::W <= K; c += 2 * V::W) {
    R s0 = V::load(row + c), s1 = V::load(row + c + V::W);
    a0 = V::fma(s0, V::load(x1 + c), a0);
    b0 = V::fma(s0, V::load(x2 + c), b0);
    a1 = V::fma(s1, V::load(x1 + c + V::W), a1);
    b1 = V::fma(s1, V::load(x2 + c + V::W), b1);
  }
  for (; c < K; c += V::W) {
    int m = std::min(V::W, K - c);
    R s = ld<V>(row + c, m);
    a0 = V::fma(s, ld<V>(x1 + c, m), a0);
    b0 = V::fma(s, ld<V>(x2 + c, m), b0);
  }
  *o1 = V::hsum(V::add(a0, a1));
  *o2 = V::hsum(V::add(b0, b1));
}

template <class V>
void reduce2_t(const float* S, int layout, int K, int Vd, int v0, int bv, const float* x1,
               const float* x2, float* o1, float* o2) {
  if (layout == 0) {
    for_strips<V>(bv, [&](int j0, int nv, int last) {
      const float* s = S + v0 + j0;
      switch (nv) {
        case 1: reduce2_kv_strip<V, 1>(s, K, Vd, x1, x2, last, o1 + j0, o2 + j0); break;
        case 2: reduce2_kv_strip<V, 2>(s, K, Vd, x1, x2, last, o1 + j0, o2 + j0); break;
        case 3: reduce2_kv_strip<V, 3>(s, K, Vd, x1, x2, last, o1 + j0, o2 + j0); break;
        default: reduce2_kv_strip<V, 4>(s, K, Vd, x1, x2, last, o1 + j0, o2 + j0); break;
      }
    });
    return;
  }
  for (int j = 0; j < bv; ++j) {
    reduce2_vk_row<V>(S + int64_t(v0 + j) * K, K, x1, x2, o1 + j, o2 + j);
  }
}

template <class V>
void update_t(float* S, int layout, int K, int Vd, int v0, int bv, const float* E, int r,
              const float* C, int64_t cstride, const float* X, int64_t xstride) {
  if (layout == 0) {
    if (r == 0) {  // pure decay: E only
      for_strips<V>(bv, [&](int j0, int nv, int last) {
        float* s = S + v0 + j0;
        for (int c = 0; c < K; ++c) {
          float* row = s + int64_t(c) * Vd;
          auto e = V::set1(E[c]);
          for (int i = 0; i < nv; ++i) {
            int m = i == nv - 1 ? last : V::W;
            st<V>(row + i * V::W, V::mul(e, ld<V>(row + i * V::W, m)), m);
          }
        }
      });
      return;
    }
    for_strips<V>(bv, [&](int j0, int nv, int last) {
      float* s = S + v0 + j0;
      const float* x = X + j0;
      switch (nv) {
        case 1: update_kv_strip<V, 1>(s, K, Vd, E, r, C, cstride, x, xstride, last); break;
        case 2: update_kv_strip<V, 2>(s, K, Vd, E, r, C, cstride, x, xstride, last); break;
        case 3: update_kv_strip<V, 3>(s, K, Vd, E, r, C, cstride, x, xstride, last); break;
        default: update_kv_strip<V, 4>(s, K, Vd, E, r, C, cstride, x, xstride, last); break;
      }
    });
    return;
  }
  for (int j = 0; j < bv; ++j) {
    float* row = S + int64_t(v0 + j) * K;
    each_chunk<V>(K, [&](int c, int m) {
      auto acc = V::mul(ld<V>(E + c, m), ld<V>(row + c, m));
      for (int i = 0; i < r; ++i) {
        acc = V::fma(ld<V>(C + i * cstride + c, m), V::set1(X[i * xstride + j]), acc);
      }
      st<V>(row + c, acc, m);
    });
  }
}

template <class V>
constexpr KdaOps make_ops() {
  return KdaOps{
      .dot = dot_t<V>,
      .mul = mul_t<V>,
      .exp = exp_t<V>,
      .axpy = axpy_t<V>,
      .l2norm = l2norm_t<V>,
      .gate = gate_t<V>,
      .decay_dots = decay_dots_t<V>,
      .delta_out = delta_out_t<V>,
      .reduce2 = reduce2_t<V>,
      .update = update_t<V>,
  };
}

}  // namespace
}  // namespace recur::kda
