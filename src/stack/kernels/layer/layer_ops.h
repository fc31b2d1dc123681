// The vector loops of the layer kernels (layer.h), compiled three times (layer_ops_scalar.cc,
// layer_ops_avx2.cc, layer_ops_avx512.cc) from one template (layer_ops_impl.h) and chosen at
// run time: AVX-512, then AVX2, then scalar (layer_ops(), IsaDispatch). Any length works
// (vector tails are masked). All functions are pure on their arguments and thread-safe.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"

namespace recur::kernels {

struct LayerOps {
  Isa isa;
  // h = x + r; y = h / sqrt(mean(h^2) + eps) * w, per row of n.
  void (*rmsnorm_residual)(const float* x, const float* r, const float* w, float* h, float* y, int64_t rows,
                           int64_t n, float eps);
  // y = silu(g) * u = g / (1 + exp(-g)) * u.
  void (*swiglu)(const float* g, const float* u, float* y, int64_t n);
  // y = exp(x - max) / sum exp(x - max), per row of n.
  void (*softmax)(const float* x, float* y, int64_t rows, int64_t n);
  // Rotates one head row of dim d: y = x * c + rot(x) * s, with rot the pair swap (interleaved)
  // or the half swap (neox); c, s are the per-token tables of rope.cc (length d, s signed). y may
  // alias x (the engine rotates q and k in place).
  void (*rope_row)(const float* x, float* y, const float* c, const float* s, int64_t d, bool neox);
  // y[m, n] = sum_k x[m, k] w[n, k] (row-major, y row stride ldy).
  void (*gemm_nt)(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, int64_t ldy);
  // y[i] = d * q[i] for one Q8_0 block of 32.
  void (*dequant_q8_0)(const int8_t* q, float d, float* y);
};

extern const LayerOps kLayerOpsScalar;
extern const LayerOps kLayerOpsAvx2;
extern const LayerOps kLayerOpsAvx512;

// The table for `isa` (it must be runnable), or for active_isa().
const LayerOps& layer_ops(Isa isa);
const LayerOps& layer_ops();

}  // namespace recur::kernels
