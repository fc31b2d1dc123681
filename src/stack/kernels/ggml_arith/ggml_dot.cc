// ggml's reductions and dot products (ggml_arith.h): the vec_dot loops of one token and
// llamafile's tinyBLAS tiles.
#include <cmath>
#include <type_traits>

#include "core/convert.h"
#include "kernels/ggml_arith/ggml_arith.h"
#include "kernels/ggml_arith/ggml_dot_loops.h"

namespace recur::ggml_arith {

namespace {

float load(const uint16_t* p, int64_t i) { return fp16_to_fp32(p[i]); }

// GGML_F32x8_REDUCE's last step (AVX2): halves added, then two horizontal adds:
// (t0 + t1) + (t2 + t3).
float hadd_8(const float* v) {
  float t[4];
  for (int i = 0; i < 4; ++i) t[i] = v[i] + v[4 + i];
  return (t[0] + t[1]) + (t[2] + t[3]);
}

// The vec_dot loop: 4 accumulators of L lanes, fma per step of 4 L, the accumulators folded
// pairwise (0 += 2, 1 += 3, 0 += 1) and reduced in the ISA's order.
template <class T>
float vec_dot_body(GgmlIsa isa, int64_t n, const T* x, const T* y, int64_t* done) {
  const int l = lanes(isa);
  const int64_t step = 4 * l;
  const int64_t np = n - n % step;
  float acc[4][16] = {};
  if constexpr (std::is_same_v<T, uint16_t>) dot_loops().vec_f16(l, np, x, y, acc);
  else dot_loops().vec_f32(l, np, x, y, acc);
  for (int j = 0; j < l; ++j) {
    acc[0][j] += acc[2][j];
    acc[1][j] += acc[3][j];
  }
  for (int j = 0; j < l; ++j) acc[0][j] += acc[1][j];
  *done = np;
  return isa == GgmlIsa::kAvx512 ? reduce_add_16(acc[0]) : hadd_8(acc[0]);
}

template <class T>
float tile_dot(GgmlIsa isa, int64_t k, const T* a, const T* b) {
  const int l = lanes(isa);
  float acc[16] = {};
  if constexpr (std::is_same_v<T, uint16_t>) dot_loops().tile_f16(l, k, a, b, acc);
  else dot_loops().tile_f32(l, k, a, b, acc);
  return isa == GgmlIsa::kAvx512 ? reduce_add_16(acc) : hsum_8(acc);
}

}  // namespace

float reduce_add_16(const float* v) {
  float h[8], q[4];
  for (int i = 0; i < 8; ++i) h[i] = v[8 + i] + v[i];
  for (int i = 0; i < 4; ++i) q[i] = h[4 + i] + h[i];
  return (q[0] + q[2]) + (q[1] + q[3]);
}

float hsum_8(const float* v) {
  float h[4];
  for (int i = 0; i < 4; ++i) h[i] = v[4 + i] + v[i];
  return (h[0] + h[2]) + (h[1] + h[3]);
}

float vec_dot_f16(GgmlIsa isa, int64_t n, const uint16_t* x, const uint16_t* y) {
  int64_t i = 0;
  double sum = double(vec_dot_body(isa, n, x, y, &i));
  // Each product of two halves is exact in fp32; ggml adds it in double.
  for (; i < n; ++i) sum += double(load(x, i) * load(y, i));
  return float(sum);
}

float vec_dot_f32(GgmlIsa isa, int64_t n, const float* x, const float* y) {
  int64_t i = 0;
  float sum = vec_dot_body(isa, n, x, y, &i);
  // The tail, `sumf += x[i] * y[i]` in fp32: gcc vectorizes it as an in-order reduction (the
  // loop of `lanes`, then one of lanes / 2: products rounded, added one by one) and fuses only the
  // scalar remainder, its last n % (lanes / 2) (libggml-cpu.so's ggml_vec_dot_f32: vmulps, vaddss
  // in order, then vfmadd231ss).
  const int64_t fused_from = n - (n - i) % (lanes(isa) / 2);
  for (; i < fused_from; ++i) sum += x[i] * y[i];
  for (; i < n; ++i) sum = std::fma(x[i], y[i], sum);
  return sum;
}

float tile_dot_f16(GgmlIsa isa, int64_t k, const uint16_t* a, const uint16_t* b) { return tile_dot(isa, k, a, b); }
float tile_dot_f32(GgmlIsa isa, int64_t k, const float* a, const float* b) { return tile_dot(isa, k, a, b); }

bool tiles_take(GgmlIsa isa, int64_t m, int64_t n, int64_t k) { return n >= 2 && k % lanes(isa) == 0 && m % 4 == 0; }

}  // namespace recur::ggml_arith
