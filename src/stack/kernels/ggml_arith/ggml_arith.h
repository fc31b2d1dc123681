// llama.cpp's CPU arithmetic, reproduced bit for bit (issue #27, engine.ggml_arithmetic): the
// element-wise functions and summation orders a ggml CPU build (c392e50's ggml-cpu.c and
// llamafile's tinyBLAS) computes with, for a build of one x86 ISA. recur's own kernels sum in
// other orders and use other approximations; where a near tie decides a greedy token, only the
// same bits give the same token. Everything here is written from the published algorithms (the
// constants are the algorithm's, the code is recur's); benchmarks/ggml_bits_check.sh compares each
// function with libggml-cpu.so itself.
//
// Written in portable scalar code: each SIMD lane's operations (fma where ggml's vector code has
// one, plain operations elsewhere) in ggml's order, so the bits do not depend on the ISA recur runs
// on. These are parity options, not fast paths.
#pragma once

#include <array>
#include <cstdint>

#include "core/enum_names.h"

namespace recur::ggml_arith {

// The ISA a llama.cpp CPU build was compiled for (GGML_NATIVE picks the build machine's): it
// decides the vector width of every SIMD loop, hence tails and summation orders, and which of
// ggml's vector exp forms runs.
enum class GgmlIsa : uint8_t { kAvx512, kAvx2 };
inline constexpr std::array kGgmlIsaNames{EnumName<GgmlIsa>{GgmlIsa::kAvx512, "avx512"},
                                          EnumName<GgmlIsa>{GgmlIsa::kAvx2, "avx2"}};
// Floats per vector register of that build: 16 or 8.
int lanes(GgmlIsa isa);

// ---- Element-wise (ggml_v_expf and the loops around it).

// One lane of ggml_v_expf, the vector exp of that ISA (within 2.5 ulp of exp; the AVX-512 and
// AVX2 forms differ in their last steps, so in their bits).
float v_expf(GgmlIsa isa, float x);
// ggml_vec_silu_f32: whole vectors through x / (1 + v_expf(0 - x)), the n % lanes tail through
// x / (1 + expf(-x)).
void silu_row(GgmlIsa isa, int64_t n, float* y, const float* x);
// Columns [begin, begin + count) of such a row of row_len (a tensor-parallel shard of it): each
// column takes the form its place in the whole row gives it.
void silu_span(GgmlIsa isa, int64_t row_len, int64_t begin, int64_t count, float* y, const float* x);
// ggml_vec_sigmoid_f32 (a scalar loop in every build): 1 / (1 + expf(-x)).
void sigmoid_row(int64_t n, float* y, const float* x);
// ggml_vec_soft_max_f32: y = exp(x - max) (v_expf for whole vectors, expf for the tail); returns
// the sum in ggml's order: each vector's fp32 reduction then the tail's values, added in double.
double softmax_exp_row(GgmlIsa isa, int64_t n, float* y, const float* x, float max);
// ggml_compute_forward_soft_max_f32 for one row of n: w = x * scale (+ mask), y = exp(w - max(w))
// scaled by float(1 / sum). mask may be null (ggml_soft_max); its -inf entries give exact zeros.
void soft_max_row(GgmlIsa isa, int64_t n, float* y, const float* x, float scale, const float* mask);

// ---- Reductions and dot products.

// _mm512_reduce_add_ps's order (gcc's): halves, then quarters, then pairs.
float reduce_add_16(const float* v);
// llamafile's hsum(__m256) and ggml_vec_soft_max_f32's AVX2 sum: (v0+v4 + v2+v6) + (v1+v5 + v3+v7).
float hsum_8(const float* v);
// ggml_vec_dot_f16 / ggml_vec_dot_f32 (one token's products, n = 1): four accumulators of `lanes`
// floats over whole steps of 4 * lanes, fma, reduced pairwise (ggml's GGML_F32_VEC_REDUCE), then
// the tail: f16 adds each fp32 product in double, f32 contracts each product into the fp32 sum.
float vec_dot_f16(GgmlIsa isa, int64_t n, const uint16_t* x, const uint16_t* y);
float vec_dot_f32(GgmlIsa isa, int64_t n, const float* x, const float* y);
// One output of llamafile_sgemm's tinyBLAS (several tokens): one accumulator of `lanes` floats,
// fma over k in steps of lanes (k % lanes == 0), then hsum (reduce_add_16 or hsum_8).
float tile_dot_f16(GgmlIsa isa, int64_t k, const uint16_t* a, const uint16_t* b);
float tile_dot_f32(GgmlIsa isa, int64_t k, const float* a, const float* b);
// Whether ggml_compute_forward_mul_mat hands an F16 x F16 or F32 x F32 product of m rows, n tokens
// and k columns to tinyBLAS (n >= 2, k % lanes == 0, m % 4 == 0) rather than its vec_dot loop.
bool tiles_take(GgmlIsa isa, int64_t m, int64_t n, int64_t k);

// ---- RMSNorm and RoPE (scalar loops in ggml: the same in every build).

// ggml_rms_norm then ggml_mul by w (w may be null): the squares summed in double in order,
// scale = 1 / sqrtf(float(sum / n) + eps), y = (x * scale) * w.
void rms_norm_row(int64_t n, float* y, const float* x, float eps, const float* w);

// ggml_rope_ext's parameters (llama.cpp passes them from the model's hyper-parameters).
struct RopeParams {
  int n_dims = 0;             // rotated dims (even)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;    // 1 / the linear or YaRN scaling factor
  float ext_factor = 0.0f;    // YaRN's extrapolation mix (0: none)
  float attn_factor = 1.0f;   // magnitude scale of cos and sin
  float beta_fast = 32.0f, beta_slow = 1.0f;
  int n_ctx_orig = 0;         // YaRN's original context
};
// ggml_rope_cache_init for position p: cos_sin[2i], cos_sin[2i + 1] = cos, sin of pair i
// (n_dims floats): the angle chained in float (theta *= powf(base, -2 / n_dims)) and divided by
// freq_factors[i] when given, cosf/sinf, YaRN as rope_yarn.
void rope_cache(int64_t p, const RopeParams& rp, const float* freq_factors, float* cos_sin);
// ggml's rotation of one head of n_dims rotated dims by a cache: pairs (2i, 2i+1), or (i, i + n_dims/2)
// with neox; y may alias x. With the build's fp contraction: y0 = fma(x0, c, -(x1 s)), y1 = fma(x0, s, x1 c).
void rope_rotate(int n_dims, bool neox, const float* cos_sin, const float* x, float* y);

}  // namespace recur::ggml_arith
