// The layer-kernel loops (layer_ops.h), written once over a vector-traits type V and
// instantiated per ISA. Include only from layer_ops_{scalar,avx2,avx512}.cc after defining V;
// everything has internal linkage so the three compilations never meet in the link.
//
// V provides (as kda_ops_impl.h): R, W, zero, set1, load, store, load_n, store_n, add, sub,
// mul, div, fma, max, abs, lt, blend, hsum, hmax, exp (simd/vec_math.h semantics), keep_n(x, m,
// fill) (lanes >= m become fill), swap_pairs (exchange lanes 2i and 2i+1), load_i8 (W int8s).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/layer/layer_ops.h"

namespace recur::kernels {
namespace {

template <class V>
inline typename V::R ld(const float* p, int64_t m) {
  return m == V::W ? V::load(p) : V::load_n(p, int(m));
}
template <class V>
inline void st(float* p, typename V::R x, int64_t m) {
  if (m == V::W) {
    V::store(p, x);
  } else {
    V::store_n(p, x, int(m));
  }
}
template <class V, class F>
inline void each_chunk(int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) f(i, int64_t(V::W));
  if (i < n) f(i, n - i);
}

// exp(x) for x <= 0 down to the fp32 subnormal range: below -80 it is exp(x + 50) e^-50, so
// results between 1.4e-45 and 1.2e-38 are kept rather than flushed by exp's -87 clamp.
template <class V>
inline typename V::R exp_nonpos(typename V::R x) {
  using R = typename V::R;
  const R shifted = V::mul(V::exp(V::add(x, V::set1(50.0f))), V::set1(1.92874985e-22f));
  return V::blend(V::lt(x, V::set1(-80.0f)), V::exp(x), shifted);
}

template <class V>
void rmsnorm_residual_t(const float* x, const float* r, const float* w, float* h, float* y, int64_t rows, int64_t n,
                        float eps) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * n;
    const float* rr = r + row * n;
    float* hr = h + row * n;
    float* yr = y + row * n;
    typename V::R acc = V::zero();
    each_chunk<V>(n, [&](int64_t i, int64_t m) {
      typename V::R v = V::add(ld<V>(xr + i, m), ld<V>(rr + i, m));
      st<V>(hr + i, v, m);
      acc = V::fma(v, v, acc);
    });
    const float scale = 1.0f / std::sqrt(V::hsum(acc) / float(n) + eps);
    const typename V::R s = V::set1(scale);
    each_chunk<V>(n, [&](int64_t i, int64_t m) { st<V>(yr + i, V::mul(V::mul(ld<V>(hr + i, m), s), ld<V>(w + i, m)), m); });
  }
}

template <class V>
void swiglu_t(const float* g, const float* u, float* y, int64_t n) {
  each_chunk<V>(n, [&](int64_t i, int64_t m) {
    using R = typename V::R;
    const R gv = ld<V>(g + i, m);
    // sigmoid(g) from e = exp(-|g|) <= 1 (no overflow): 1 / (1 + e) for g >= 0, e / (1 + e) else.
    const R e = exp_nonpos<V>(V::sub(V::zero(), V::abs(gv)));
    const R den = V::add(V::set1(1.0f), e);
    const R sig = V::div(V::blend(V::lt(gv, V::zero()), V::set1(1.0f), e), den);
    st<V>(y + i, V::mul(V::mul(gv, sig), ld<V>(u + i, m)), m);
  });
}

template <class V>
void softmax_t(const float* x, float* y, int64_t rows, int64_t n) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * n;
    float* yr = y + row * n;
    typename V::R mx = V::set1(-INFINITY);
    each_chunk<V>(n, [&](int64_t i, int64_t m) {
      mx = V::max(mx, m == V::W ? V::load(xr + i) : V::keep_n(V::load_n(xr + i, int(m)), int(m), -INFINITY));
    });
    const typename V::R mv = V::set1(V::hmax(mx));
    typename V::R sum = V::zero();
    each_chunk<V>(n, [&](int64_t i, int64_t m) {
      typename V::R e = V::exp(V::sub(ld<V>(xr + i, m), mv));
      if (m != V::W) e = V::keep_n(e, int(m), 0.0f);
      sum = V::add(sum, e);
      st<V>(yr + i, e, m);
    });
    const typename V::R inv = V::set1(1.0f / V::hsum(sum));
    each_chunk<V>(n, [&](int64_t i, int64_t m) { st<V>(yr + i, V::mul(ld<V>(yr + i, m), inv), m); });
  }
}

template <class V>
void rope_row_t(const float* x, float* y, const float* c, const float* s, int64_t d, bool neox) {
  if (neox) {
    const int64_t half = d / 2;
    each_chunk<V>(half, [&](int64_t i, int64_t m) {
      const typename V::R lo = ld<V>(x + i, m), hi = ld<V>(x + half + i, m);
      st<V>(y + i, V::fma(hi, ld<V>(s + i, m), V::mul(lo, ld<V>(c + i, m))), m);
      st<V>(y + half + i, V::fma(lo, ld<V>(s + half + i, m), V::mul(hi, ld<V>(c + half + i, m))), m);
    });
    return;
  }
  if constexpr (V::W == 1) {
    for (int64_t i = 0; i < d; i += 2) {
      const float x0 = x[i], x1 = x[i + 1];  // read both first: y may alias x
      y[i] = x0 * c[i] + x1 * s[i];
      y[i + 1] = x1 * c[i + 1] + x0 * s[i + 1];
    }
  } else {
    // Chunks start at multiples of W (even), so pairs never straddle a chunk.
    each_chunk<V>(d, [&](int64_t i, int64_t m) {
      const typename V::R v = ld<V>(x + i, m);
      st<V>(y + i, V::fma(V::swap_pairs(v), ld<V>(s + i, m), V::mul(v, ld<V>(c + i, m))), m);
    });
  }
}

template <class V>
float dot_t(const float* a, const float* b, int64_t k) {
  typename V::R acc = V::zero();
  each_chunk<V>(k, [&](int64_t i, int64_t m) { acc = V::fma(ld<V>(a + i, m), ld<V>(b + i, m), acc); });
  return V::hsum(acc);
}

// Four rows of x share each load of a w row.
template <class V>
void gemm_nt_t(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, int64_t ldy) {
  using R = typename V::R;
  int64_t r = 0;
  for (; r + 4 <= m; r += 4) {
    const float* x0 = x + r * k;
    for (int64_t j = 0; j < n; ++j) {
      const float* wj = w + j * k;
      R a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
      each_chunk<V>(k, [&](int64_t i, int64_t mm) {
        const R wv = ld<V>(wj + i, mm);
        a0 = V::fma(ld<V>(x0 + i, mm), wv, a0);
        a1 = V::fma(ld<V>(x0 + k + i, mm), wv, a1);
        a2 = V::fma(ld<V>(x0 + 2 * k + i, mm), wv, a2);
        a3 = V::fma(ld<V>(x0 + 3 * k + i, mm), wv, a3);
      });
      y[r * ldy + j] = V::hsum(a0);
      y[(r + 1) * ldy + j] = V::hsum(a1);
      y[(r + 2) * ldy + j] = V::hsum(a2);
      y[(r + 3) * ldy + j] = V::hsum(a3);
    }
  }
  for (; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) y[r * ldy + j] = dot_t<V>(x + r * k, w + j * k, k);
}

template <class V>
void dequant_q8_0_t(const int8_t* q, float d, float* y) {
  const typename V::R dv = V::set1(d);
  for (int i = 0; i < 32; i += V::W) V::store(y + i, V::mul(V::load_i8(q + i), dv));
}

template <class V>
constexpr LayerOps make_layer_ops(Isa isa) {
  return LayerOps{.isa = isa,
                  .rmsnorm_residual = rmsnorm_residual_t<V>,
                  .swiglu = swiglu_t<V>,
                  .softmax = softmax_t<V>,
                  .rope_row = rope_row_t<V>,
                  .gemm_nt = gemm_nt_t<V>,
                  .dequant_q8_0 = dequant_q8_0_t<V>};
}

}  // namespace
}  // namespace recur::kernels
