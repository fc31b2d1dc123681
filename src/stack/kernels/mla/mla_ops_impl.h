// The blocked MLA kernel (mla_ops.h) written once over a vector-traits type V, instantiated by
// each ISA translation unit. Include only from mla_ops_{scalar,avx2,avx512}.cc (internal linkage).
//
// V provides (simd/vec_*.h): W, R, zero, set1, load, load_n (zero-filled tail), store, store_n,
// add, sub, mul, fma, max, keep_n, hsum, hmax, exp (for x <= 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/mla/mla_ops.h"

namespace recur::kernels::mla {
namespace {

// Register blocks: MR rows of A against NR rows of B (dot form), MR rows x NC vectors (outer
// product form). AVX-512 has 32 registers, AVX2 16.
template <class V>
constexpr int kMr = V::W >= 16 ? 4 : 2;
constexpr int kNr = 4;
template <class V>
constexpr int kNc = V::W >= 16 ? 4 : 3;

// C[i][j] = alpha * sum_k A[i][k] B[j][k] for an MR x NR tile: one accumulator per element,
// k in vector steps then a zero-filled tail, so an element's sum never depends on its tile.
template <class V, int MR, int NR>
void dot_tile(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t K, float alpha, float* c,
              int64_t ldc) {
  constexpr int W = V::W;
  using R = typename V::R;
  R acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = V::zero();
  int64_t k = 0;
  for (; k + W <= K; k += W) {
    R bv[NR];
    for (int j = 0; j < NR; ++j) bv[j] = V::load(b + j * ldb + k);
    for (int i = 0; i < MR; ++i) {
      const R av = V::load(a + i * lda + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = V::fma(av, bv[j], acc[i][j]);
    }
  }
  if (k < K) {
    const int n = int(K - k);
    R bv[NR];
    for (int j = 0; j < NR; ++j) bv[j] = V::load_n(b + j * ldb + k, n);
    for (int i = 0; i < MR; ++i) {
      const R av = V::load_n(a + i * lda + k, n);
      for (int j = 0; j < NR; ++j) acc[i][j] = V::fma(av, bv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) c[i * ldc + j] = alpha * V::hsum(acc[i][j]);
}

// C[m, n] = alpha A[m, K] B[n, K]^T. B's tiles outermost: NR rows of B (the latents, W_UK,
// W_UV rows) stay in L1 while the rows of A pass.
template <class V>
void gemm_nt(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t K, float alpha,
             float* c, int64_t ldc) {
  constexpr int MR = kMr<V>;
  int64_t j = 0;
  for (; j + kNr <= n; j += kNr) {
    int64_t i = 0;
    for (; i + MR <= m; i += MR) dot_tile<V, MR, kNr>(a + i * lda, lda, b + j * ldb, ldb, K, alpha, c + i * ldc + j, ldc);
    for (; i < m; ++i) dot_tile<V, 1, kNr>(a + i * lda, lda, b + j * ldb, ldb, K, alpha, c + i * ldc + j, ldc);
  }
  for (; j < n; ++j) {
    int64_t i = 0;
    for (; i + MR <= m; i += MR) dot_tile<V, MR, 1>(a + i * lda, lda, b + j * ldb, ldb, K, alpha, c + i * ldc + j, ldc);
    for (; i < m; ++i) dot_tile<V, 1, 1>(a + i * lda, lda, b + j * ldb, ldb, K, alpha, c + i * ldc + j, ldc);
  }
}

// C[i][cols] = sum_k P[i][k] B[k][cols] for MR rows and NC vectors of columns starting at col
// (the last vector `tail` wide when tail > 0): one accumulator per element, k in order.
template <class V, int MR, int NC>
void outer_tile(const float* p, int64_t ldp, const float* b, int64_t ldb, int64_t K, float* c, int64_t ldc, int tail) {
  constexpr int W = V::W;
  using R = typename V::R;
  R acc[MR][NC];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NC; ++v) acc[i][v] = V::zero();
  for (int64_t k = 0; k < K; ++k) {
    const float* bk = b + k * ldb;
    R bv[NC];
    for (int v = 0; v < NC; ++v) bv[v] = (tail > 0 && v == NC - 1) ? V::load_n(bk + v * W, tail) : V::load(bk + v * W);
    for (int i = 0; i < MR; ++i) {
      const R pv = V::set1(p[i * ldp + k]);
      for (int v = 0; v < NC; ++v) acc[i][v] = V::fma(pv, bv[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NC; ++v) {
      if (tail > 0 && v == NC - 1) V::store_n(c + i * ldc + v * W, acc[i][v], tail);
      else V::store(c + i * ldc + v * W, acc[i][v]);
    }
}

template <class V, int MR>
void outer_rows(const float* p, int64_t ldp, const float* b, int64_t ldb, int64_t K, int64_t n, float* c, int64_t ldc) {
  constexpr int W = V::W, NC = kNc<V>;
  int64_t col = 0;
  for (; col + NC * W <= n; col += NC * W) outer_tile<V, MR, NC>(p, ldp, b + col, ldb, K, c + col, ldc, 0);
  for (; col + W <= n; col += W) outer_tile<V, MR, 1>(p, ldp, b + col, ldb, K, c + col, ldc, 0);
  if (col < n) outer_tile<V, MR, 1>(p, ldp, b + col, ldb, K, c + col, ldc, int(n - col));
}

// C[m, n] = P[m, K] B[K, n] (B rows ldb apart).
template <class V>
void gemm_nn(const float* p, int64_t ldp, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t K, float* c,
             int64_t ldc) {
  constexpr int MR = kMr<V>;
  int64_t i = 0;
  for (; i + MR <= m; i += MR) outer_rows<V, MR>(p + i * ldp, ldp, b, ldb, K, n, c + i * ldc, ldc);
  for (; i < m; ++i) outer_rows<V, 1>(p + i * ldp, ldp, b, ldb, K, n, c + i * ldc, ldc);
}

// s[0, limit) = softmax of s[0, limit), s[limit, n) = 0.
template <class V>
void softmax_prefix(float* s, int64_t limit, int64_t n) {
  constexpr int W = V::W;
  using R = typename V::R;
  R mv = V::set1(-std::numeric_limits<float>::infinity());
  int64_t t = 0;
  for (; t + W <= limit; t += W) mv = V::max(mv, V::load(s + t));
  float mx = V::hmax(mv);
  for (; t < limit; ++t) mx = s[t] > mx ? s[t] : mx;
  const R m = V::set1(mx);
  R sum = V::zero();
  for (t = 0; t + W <= limit; t += W) {
    const R e = V::exp(V::sub(V::load(s + t), m));
    V::store(s + t, e);
    sum = V::add(sum, e);
  }
  if (t < limit) {
    const int r = int(limit - t);
    const R e = V::keep_n(V::exp(V::sub(V::load_n(s + t, r), m)), r);
    V::store_n(s + t, e, r);
    sum = V::add(sum, e);
  }
  const R inv = V::set1(1.0f / V::hsum(sum));
  for (t = 0; t + W <= limit; t += W) V::store(s + t, V::mul(V::load(s + t), inv));
  if (t < limit) V::store_n(s + t, V::mul(V::load_n(s + t, int(limit - t)), inv), int(limit - t));
  for (t = limit; t < n; ++t) s[t] = 0.0f;
}

template <class V>
void attend_block_impl(const BlockArgs& a) {
  const Dims& d = *a.dims;
  const int64_t R = d.rank, E = d.rope, N = d.nope, VD = d.v_dim, LW = d.latent_width(), QW = d.q_width();
  const int64_t H = d.heads, nj = a.j1 - a.j0, nh = a.h1 - a.h0, M = nh * nj;
  const int64_t first = a.len - a.count;  // row j sees positions < first + j + 1
  const int64_t n = first + a.j1;         // what the block's last row sees
  float* qa = a.scratch;                  // [M, LW], rows (head, row)
  float* s = qa + M * LW;                 // [M, n]
  float* lsum = s + M * n;                // [M, R]
  for (int64_t hh = 0; hh < nh; ++hh) {
    const int64_t h = a.h0 + hh;
    const float* q = a.q + (a.j0 * H + h) * QW;
    float* qh = qa + hh * nj * LW;
    gemm_nt<V>(q, H * QW, a.weights->wk + h * R * N, N, nj, R, N, a.scale, qh, LW);
    for (int64_t jj = 0; jj < nj; ++jj)
      for (int64_t e = 0; e < E; ++e) qh[jj * LW + R + e] = a.scale * q[jj * H * QW + N + e];
  }
  gemm_nt<V>(qa, LW, a.lat, LW, M, n, LW, 1.0f, s, n);
  for (int64_t i = 0; i < M; ++i) softmax_prefix<V>(s + i * n, first + a.j0 + i % nj + 1, n);
  gemm_nn<V>(s, n, a.lat, LW, M, R, n, lsum, R);
  for (int64_t hh = 0; hh < nh; ++hh) {
    const int64_t h = a.h0 + hh;
    gemm_nt<V>(lsum + hh * nj * R, R, a.weights->wv + h * VD * R, R, nj, VD, R, 1.0f, a.out + (a.j0 * H + h) * VD,
               H * VD);
  }
}

}  // namespace
}  // namespace recur::kernels::mla
