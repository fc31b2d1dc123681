// The vector primitives every KDA driver (decode, ReplaySSM, prefill) is written in.
//
// Drivers read top to bottom in plain C++; the loops that touch K- or V-length vectors or a
// state tile are these functions, compiled three times (kda_ops_scalar.cc, kda_ops_avx2.cc,
// kda_ops_avx512.cc) from one template (kda_ops_impl.h) and picked per call with IsaDispatch.
// Any n works (vector tails are masked). `recip` selects rsqrt/reciprocal + Newton instead of
// divisions. All functions are pure on their arguments and thread-safe.
#pragma once

#include <cstdint>

#include "core/dispatch.h"

namespace recur::kda {

struct KdaOps {
  // sum a[i] b[i]
  float (*dot)(const float* a, const float* b, int n);
  // y = a * b (elementwise; y may alias a or b)
  void (*mul)(const float* a, const float* b, float* y, int n);
  // y = exp(x)
  void (*exp)(const float* x, float* y, int n);
  // y += a x
  void (*axpy)(float a, const float* x, float* y, int n);
  // y = x / sqrt(sum x^2 + eps) * scale
  void (*l2norm)(const float* x, float* y, int n, float eps, float scale, bool recip);
  // g = log-decay from raw gate inputs (form as GateForm; bias may be null = 0);
  // ea = exp(A_log[h]), lb = lower bound of the sigmoid form.
  void (*gate)(int form, const float* graw, const float* bias, float ea, float lb, float* g,
               int n, bool recip);
  // The ReplaySSM coefficient of buffered step j for the current step t:
  //   c = kj * exp(gt - gj) (stored when c is not null), d1 = c . x1, d2 = c . x2.
  void (*decay_dots)(const float* kj, const float* gt, const float* gj, const float* x1,
                     const float* x2, int n, float* c, float* d1, float* d2);
  // vd = beta (v - u);  o = w + kq vd
  void (*delta_out)(const float* v, const float* u, const float* w, float beta, float kq,
                    float* vd, float* o, int n);
  // State tile reductions over K, for the columns [v0, v0 + bv) of one head's state S:
  //   o1[j] = sum_c S[c][v0 + j] x1[c],  o2[j] likewise with x2.   (layout: StateLayout)
  void (*reduce2)(const float* S, int layout, int K, int V, int v0, int bv, const float* x1,
                  const float* x2, float* o1, float* o2);
  // Rank-r update of the same tile:
  //   S[c][v0 + j] = E[c] S[c][v0 + j] + sum_{i<r} C[i*cstride + c] X[i*xstride + j]
  void (*update)(float* S, int layout, int K, int V, int v0, int bv, const float* E, int r,
                 const float* C, int64_t cstride, const float* X, int64_t xstride);
};

extern const KdaOps kScalarOps;
extern const KdaOps kAvx2Ops;
extern const KdaOps kAvx512Ops;

inline constexpr IsaDispatch<const KdaOps*> kOps{
    .scalar = &kScalarOps, .avx2 = &kAvx2Ops, .avx512 = &kAvx512Ops};

}  // namespace recur::kda
