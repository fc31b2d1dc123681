// attend() (attention_ops.h) written once over a vector-traits type V, instantiated by each ISA
// translation unit. Include only from attention_ops_{scalar,avx2,avx512}.cc (internal linkage).
//
// V provides: W (lanes), R (register), zero, set1, load, load_n (zero-filled tail), store,
// store_n, add, sub, mul, fma, max, keep_n (zero lanes >= n), hsum, hmax, exp (exp(x) for
// x <= 0, 0 below -87), and the dequantizing loads deq_bf16/deq_f16/deq_fp8/deq_i8 (+ _n tails) that
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

inline size_t kv_dtype_bytes(KvDType t) {
  return t == KvDType::kF32 ? 4 : (t == KvDType::kBF16 || t == KvDType::kF16) ? 2 : 1;
}

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
    case KvDType::kF16: {
      const uint16_t* s = reinterpret_cast<const uint16_t*>(base) + elem;
      for (; i + W <= n; i += W) V::store(dst + i, V::deq_f16(s + i));
      if (i < n) V::store_n(dst + i, V::deq_f16_n(s + i, int(n - i)), int(n - i));
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

// acc[0, d) = acc * alpha + sum_{t < n} w[t] * v[t * d, ...). Columns go in blocks of 4
// vectors, so each token issues 4 independent FMAs (the chains over t are latency-bound).
template <class V>
void accumulate(float* acc, float alpha, const float* w, const float* v, int n, int d) {
  constexpr int W = V::W;
  using R = typename V::R;
  const R av = V::set1(alpha);
  int i = 0;
  for (; i + 4 * W <= d; i += 4 * W) {
    R a0 = V::mul(V::load(acc + i), av), a1 = V::mul(V::load(acc + i + W), av);
    R a2 = V::mul(V::load(acc + i + 2 * W), av), a3 = V::mul(V::load(acc + i + 3 * W), av);
    for (int t = 0; t < n; ++t) {
      const R wt = V::set1(w[t]);
      const float* vt = v + size_t(t) * size_t(d) + size_t(i);
      a0 = V::fma(wt, V::load(vt), a0);
      a1 = V::fma(wt, V::load(vt + W), a1);
      a2 = V::fma(wt, V::load(vt + 2 * W), a2);
      a3 = V::fma(wt, V::load(vt + 3 * W), a3);
    }
    V::store(acc + i, a0);
    V::store(acc + i + W, a1);
    V::store(acc + i + 2 * W, a2);
    V::store(acc + i + 3 * W, a3);
  }
  for (; i < d; i += W) {
    const int c = lmin(W, d - i);
    R a0 = V::mul(V::load_n(acc + i, c), av);
    for (int t = 0; t < n; ++t) a0 = V::fma(V::set1(w[t]), V::load_n(v + size_t(t) * size_t(d) + size_t(i), c), a0);
    V::store_n(acc + i, a0, c);
  }
}

// s[t] = q . k[t * d, ...) for t < n, four tokens at a time (independent accumulator chains).
template <class V>
void dots(const float* q, const float* k, int n, int d, float* s) {
  constexpr int W = V::W;
  using R = typename V::R;
  int t = 0;
  for (; t + 4 <= n; t += 4) {
    const float* k0 = k + size_t(t) * size_t(d);
    const float* k1 = k0 + d;
    const float* k2 = k1 + d;
    const float* k3 = k2 + d;
    R s0 = V::zero(), s1 = V::zero(), s2 = V::zero(), s3 = V::zero();
    int i = 0;
    for (; i + W <= d; i += W) {
      const R qi = V::load(q + i);
      s0 = V::fma(qi, V::load(k0 + i), s0);
      s1 = V::fma(qi, V::load(k1 + i), s1);
      s2 = V::fma(qi, V::load(k2 + i), s2);
      s3 = V::fma(qi, V::load(k3 + i), s3);
    }
    if (i < d) {
      const int c = d - i;
      const R qi = V::load_n(q + i, c);
      s0 = V::fma(qi, V::load_n(k0 + i, c), s0);
      s1 = V::fma(qi, V::load_n(k1 + i, c), s1);
      s2 = V::fma(qi, V::load_n(k2 + i, c), s2);
      s3 = V::fma(qi, V::load_n(k3 + i, c), s3);
    }
    s[t] = V::hsum(s0);
    s[t + 1] = V::hsum(s1);
    s[t + 2] = V::hsum(s2);
    s[t + 3] = V::hsum(s3);
  }
  for (; t < n; ++t) s[t] = dot<V>(q, k + size_t(t) * size_t(d), d);
}

// The page's K (which = 0) or V run of n tokens from position t0, read in place (f32) or
// dequantized into tile.
template <class V>
const float* page_run(const AttendArgs& a, int which, int64_t pi, int64_t t0, int n, float* tile) {
  const LayerView& L = *a.layer;
  const int P = L.page_size, D = L.head_dim;
  const int64_t elem = ((int64_t(a.pages[pi]) * L.kv_heads + a.kv_head) * P + (t0 - pi * P)) * D;
  const std::byte* base = which == 0 ? L.k : L.v;
  if (L.dtype == KvDType::kF32) return reinterpret_cast<const float*>(base) + elem;
  dequant_run<V>(L.dtype, base, elem, int64_t(n) * D, tile);
  return tile;
}

// The rows' visible positions [lo, hi) (causal limit, sliding window) within [begin, end).
inline void visible(const AttendArgs& a, int r, int64_t* lo, int64_t* hi) {
  *hi = lmin(a.end, a.limit ? a.limit[r] : a.end);
  *lo = a.window > 0 ? lmax(a.begin, a.limit[r] - a.window) : a.begin;
}

// AttendArgs::probs set (AttentionOperands::kCacheType on an f16 / bf16 layer): the arithmetic of
// ggml's non-flash attention over such a cache. Scores of every visible position, then each
// row's softmax whole (sum in double, weights e * (1 / sum)) rounded to the layer's type, then
// the weighted sum of V. Only f16 / bf16 layers come here (no token or head scales).
template <class V>
void attend_rounded_impl(const AttendArgs& a) {
  const LayerView& L = *a.layer;
  const int P = L.page_size, D = L.head_dim;
  const int64_t span = a.end - a.begin;
  float* tile = a.scratch;
  for (int r = 0; r < a.rows; ++r) {
    float* p = a.probs + size_t(r) * size_t(span);
    for (int64_t t = 0; t < span; ++t) p[t] = 0.0f;
  }
  for (int which = 0; which < 2; ++which) {
    for (int64_t pi = a.begin / P; pi * P < a.end; ++pi) {
      const int64_t t0 = lmax(a.begin, pi * P), t1 = lmin(a.end, (pi + 1) * P);
      int64_t first = t1, last = t0;  // the positions some row sees in this page
      for (int r = 0; r < a.rows; ++r) {
        int64_t lo, hi;
        visible(a, r, &lo, &hi);
        first = lmin(first, lmax(lo, t0));
        last = lmax(last, lmin(hi, t1));
      }
      if (last <= first) continue;
      const float* run = page_run<V>(a, which, pi, first, int(last - first), tile);
      for (int r = 0; r < a.rows; ++r) {
        int64_t lo, hi;
        visible(a, r, &lo, &hi);
        lo = lmax(lo, first);
        hi = lmin(hi, last);
        if (hi <= lo) continue;
        float* p = a.probs + size_t(r) * size_t(span) + size_t(lo - a.begin);
        const float* rows_run = run + (lo - first) * D;
        if (which == 0) {
          dots<V>(a.q + size_t(r) * size_t(D), rows_run, int(hi - lo), D, p);
          if (a.softcap > 0)
            for (int64_t t = 0; t < hi - lo; ++t) p[t] = a.softcap * tanhf(p[t] / a.softcap);
        } else {
          accumulate<V>(a.acc + size_t(r) * size_t(D), 1.0f, p, rows_run, int(hi - lo), D);
        }
      }
    }
    if (which == 1) break;
    // Between the passes: each row's scores become its rounded, normalized weights.
    for (int r = 0; r < a.rows; ++r) {
      int64_t lo, hi;
      visible(a, r, &lo, &hi);
      if (hi <= lo) continue;
      float* p = a.probs + size_t(r) * size_t(span) + size_t(lo - a.begin);
      const int n = int(hi - lo);
      const float m = max_of<V>(p, n);
      exp_shift<V>(p, n, m);
      double sum = 0;
      for (int t = 0; t < n; ++t) sum += double(p[t]);
      const float inv = float(1.0 / sum);
      for (int t = 0; t < n; ++t) p[t] = round_to(L.dtype, p[t] * inv);
      a.m[r] = m;
      a.l[r] = 1.0f;
    }
  }
}

template <class V>
void attend_impl(const AttendArgs& a) {
  if (a.probs != nullptr) {
    attend_rounded_impl<V>(a);
    return;
  }
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
    for (int r = 0; r < a.rows; ++r) {
      const int64_t hi = lmin(t1, a.limit ? a.limit[r] : a.end);
      if (a.window <= 0 || a.limit[r] - a.window < hi) nmax = lmax<int>(nmax, int(hi - t0));
    }
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
    // Pages are scattered and a head's run is one of kv_heads runs in its page, so the hardware
    // prefetcher does not follow: fetch the next page's K and V runs while this one computes.
    if ((pi + 1) * P < a.end) {
      const size_t run = size_t(P) * size_t(D) * kv_dtype_bytes(L.dtype);
      const size_t next = size_t((int64_t(a.pages[pi + 1]) * L.kv_heads + a.kv_head) * P) * size_t(D) * kv_dtype_bytes(L.dtype);
      for (size_t off = 0; off < run; off += 64) {
        __builtin_prefetch(L.k + next + off);
        __builtin_prefetch(L.v + next + off);
      }
    }
    const float* ks = L.k_token_scale ? L.k_token_scale + slot : nullptr;
    const float* vs = L.v_token_scale ? L.v_token_scale + slot : nullptr;
    for (int r = 0; r < a.rows; ++r) {
      const int64_t hi = lmin(t1, a.limit ? a.limit[r] : a.end);
      // The row's first visible position in this page (its sliding window's start, if later).
      const int64_t lo = a.window > 0 ? lmax(t0, a.limit[r] - a.window) : t0;
      const int n = int(hi - lo);
      if (n <= 0) continue;
      const int64_t skip = lo - t0;  // tokens of the tile before the window
      float* s = scores + size_t(r) * size_t(P);
      const float* qr = q + size_t(r) * size_t(D);
      dots<V>(qr, kt + skip * D, n, D, s);
      if (ks)
        for (int t = 0; t < n; ++t) s[t] *= ks[skip + t];
      if (a.softcap > 0)
        for (int t = 0; t < n; ++t) s[t] = a.softcap * tanhf(s[t] / a.softcap);
      const float m_new = lmax(a.m[r], max_of<V>(s, n));
      const float alpha = expf(a.m[r] - m_new);
      a.l[r] = a.l[r] * alpha + exp_shift<V>(s, n, m_new);
      a.m[r] = m_new;
      if (vs)
        for (int t = 0; t < n; ++t) s[t] *= vs[skip + t];
      accumulate<V>(a.acc + size_t(r) * size_t(D), alpha, s, vt + skip * D, n, D);
    }
  }
}

}  // namespace
}  // namespace recur::kernels::attention
