// attend() (attention_ops.h) written once over a vector-traits type V, instantiated by each ISA
// translation unit. Include only from attention_ops_{scalar,avx2,avx512}.cc (internal linkage).
//
// V provides: W (lanes), R (register), zero, set1, load, load_n (zero-filled tail), store,
// store_n, add, sub, mul, fma, max, keep_n (zero lanes >= n), hsum, hmax, exp (exp(x) for
// x <= 0, 0 below -87), and the dequantizing loads deq_bf16/deq_fp8/deq_i8 (+ _n tails) that
// turn W stored elements into W floats (fp8: the exact E4M3 value, without the head scale).
#pragma once

#include <math.h>

#include <cstddef>
#include <cstdint>

#include "kernels/attention/attention_ops.h"

namespace recur::kernels::attention {
namespace {

// Local min/max and libm's expf: std:: inline templates instantiated here could be emitted
// with this TU's ISA flags and picked by the linker for baseline callers (core/convert.h).
template <class T>
T lmin(T a, T b) { return b < a ? b : a; }
template <class T>
T lmax(T a, T b) { return a < b ? b : a; }

template <class V>
void dequant_run(KvDType t, const std::byte* base, int64_t elem, int64_t n, float* dst) {
  constexpr int W = V::W;
  int64_t i = 0;
  switch (t) {
    case KvDType::kF32: break;  // never dequantized: attend() reads f32 pages in place
    case KvDType::kBF16: {
      const uint16_t* s = reinterpret_cast<const uint16_t*>(base) + elem;
      for (; i + W <= n; i += W) V::store(dst + i, V::deq_bf16(s + i));
      if (i < n) V::store_n(dst + i, V::deq_bf16_n(s + i, int(n - i)), int(n - i));
      break;
    }
    case KvDType::kFP8E4M3: {
      const uint8_t* s = reinterpret_cast<const uint8_t*>(base) + elem;
      for (; i + W <= n; i += W) V::store(dst + i, V::deq_fp8(s + i));
      if (i < n) V::store_n(dst + i, V::deq_fp8_n(s + i, int(n - i)), int(n - i));
      break;
    }
    case KvDType::kI8: {
      const int8_t* s = reinterpret_cast<const int8_t*>(base) + elem;
      for (; i + W <= n; i += W) V::store(dst + i, V::deq_i8(s + i));
      if (i < n) V::store_n(dst + i, V::deq_i8_n(s + i, int(n - i)), int(n - i));
      break;
    }
  }
}

template <class V>
float dot(const float* a, const float* b, int d) {
  constexpr int W = V::W;
  typename V::R s0 = V::zero(), s1 = V::zero();
  int i = 0;
  for (; i + 2 * W <= d; i += 2 * W) {
    s0 = V::fma(V::load(a + i), V::load(b + i), s0);
    s1 = V::fma(V::load(a + i + W), V::load(b + i + W), s1);
  }
  for (; i + W <= d; i += W) s0 = V::fma(V::load(a + i), V::load(b + i), s0);
  if (i < d) s1 = V::fma(V::load_n(a + i, d - i), V::load_n(b + i, d - i), s1);
  return V::hsum(V::add(s0, s1));
}

// s[t] = exp(s[t] - m) for t < n; returns the sum.
template <class V>
float exp_shift(float* s, int n, float m) {
  constexpr int W = V::W;
  const typename V::R mv = V::set1(m);
  typename V::R sum = V::zero();
  int i = 0;
  for (; i + W <= n; i += W) {
    typename V::R e = V::exp(V::sub(V::load(s + i), mv));
    V::store(s + i, e);
    sum = V::add(sum, e);
  }
  if (i < n) {
    typename V::R e = V::keep_n(V::exp(V::sub(V::load_n(s + i, n - i), mv)), n - i);
    V::store_n(s + i, e, n - i);
    sum = V::add(sum, e);
  }
  return V::hsum(sum);
}

template <class V>
float max_of(const float* s, int n) {
  constexpr int W = V::W;
  float m = s[0];
  int i = 0;
  if (n >= W) {
    typename V::R mv = V::load(s);
    for (i = W; i + W <= n; i += W) mv = V::max(mv, V::load(s + i));
    m = V::hmax(mv);
  }
  for (; i < n; ++i) m = lmax(m, s[i]);
  return m;
}

// acc[0, d) = acc * alpha + sum_{t < n} w[t] * v[t * d, ...).
template <class V>
void accumulate(float* acc, float alpha, const float* w, const float* v, int n, int d) {
  constexpr int W = V::W;
  const typename V::R av = V::set1(alpha);
  int i = 0;
  for (; i + 2 * W <= d; i += 2 * W) {
    typename V::R a0 = V::mul(V::load(acc + i), av), a1 = V::mul(V::load(acc + i + W), av);
    for (int t = 0; t < n; ++t) {
      const typename V::R wt = V::set1(w[t]);
      a0 = V::fma(wt, V::load(v + size_t(t) * size_t(d) + size_t(i)), a0);
      a1 = V::fma(wt, V::load(v + size_t(t) * size_t(d) + size_t(i + W)), a1);
    }
    V::store(acc + i, a0);
    V::store(acc + i + W, a1);
  }
  for (; i < d; i += W) {
    const int c = lmin(W, d - i);
    typename V::R a0 = V::mul(V::load_n(acc + i, c), av);
    for (int t = 0; t < n; ++t) a0 = V::fma(V::set1(w[t]), V::load_n(v + size_t(t) * size_t(d) + size_t(i), c), a0);
    V::store_n(acc + i, a0, c);
  }
}

template <class V>
void attend_impl(const AttendArgs& a) {
  const LayerView& L = *a.layer;
  const int P = L.page_size, D = L.head_dim;
  float* ktile = a.scratch;
  float* vtile = ktile + size_t(P) * size_t(D);
  float* scores = vtile + size_t(P) * size_t(D);
  float* qscaled = scores + size_t(a.rows) * size_t(P);
  const float* q = a.q;
  if (L.dtype == KvDType::kFP8E4M3) {
    const float s = L.k_head_scale[a.kv_head];
    for (int64_t i = 0; i < int64_t(a.rows) * D; ++i) qscaled[i] = q[i] * s;
    q = qscaled;
  }
  for (int64_t pi = a.begin / P; pi * P < a.end; ++pi) {
    const int64_t t0 = lmax(a.begin, pi * P), t1 = lmin(a.end, (pi + 1) * P);
    int nmax = 0;
    for (int r = 0; r < a.rows; ++r)
      nmax = lmax<int>(nmax, int(lmin(t1, a.limit ? a.limit[r] : a.end) - t0));
    if (nmax <= 0) continue;
    const int64_t slot = (int64_t(a.pages[pi]) * L.kv_heads + a.kv_head) * P + (t0 - pi * P);
    const int64_t elem = slot * D;
    const float* kt = reinterpret_cast<const float*>(L.k) + elem;
    const float* vt = reinterpret_cast<const float*>(L.v) + elem;
    if (L.dtype != KvDType::kF32) {
      dequant_run<V>(L.dtype, L.k, elem, int64_t(nmax) * D, ktile);
      dequant_run<V>(L.dtype, L.v, elem, int64_t(nmax) * D, vtile);
      kt = ktile;
      vt = vtile;
    }
    const float* ks = L.k_token_scale ? L.k_token_scale + slot : nullptr;
    const float* vs = L.v_token_scale ? L.v_token_scale + slot : nullptr;
    for (int r = 0; r < a.rows; ++r) {
      const int n = int(lmin(t1, a.limit ? a.limit[r] : a.end) - t0);
      if (n <= 0) continue;
      float* s = scores + size_t(r) * size_t(P);
      const float* qr = q + size_t(r) * size_t(D);
      for (int t = 0; t < n; ++t) s[t] = dot<V>(qr, kt + size_t(t) * size_t(D), D);
      if (ks)
        for (int t = 0; t < n; ++t) s[t] *= ks[t];
      const float m_new = lmax(a.m[r], max_of<V>(s, n));
      const float alpha = expf(a.m[r] - m_new);
      a.l[r] = a.l[r] * alpha + exp_shift<V>(s, n, m_new);
      a.m[r] = m_new;
      if (vs)
        for (int t = 0; t < n; ++t) s[t] *= vs[t];
      accumulate<V>(a.acc + size_t(r) * size_t(D), alpha, s, vt, n, D);
    }
  }
}

}  // namespace
}  // namespace recur::kernels::attention
