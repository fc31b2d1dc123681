// The 16-lane AVX-512 vector traits every kernel family writes its loops over (KDA, attention,
// layer ops), with masked tails (masked loads never touch memory past the end); needs
// AVX512F/BW/VL. A family adds what only it needs by deriving. Include only from translation
// units compiled with the AVX-512 flags (recur_isa_sources): internal linkage.
#pragma once

// GCC 12's AVX-512 header builds _mm512_undefined_* as `__m512 __Y = __Y;`, which
// -Wuninitialized reports at every inlined use (max, min, casts, shifts ...); the warning's
// location is inside the header, so silencing it for the include alone is enough.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <cstdint>

#include "kernels/simd/vec_math.h"

namespace recur::simd {
namespace {

struct Avx512Vec {
  using R = __m512;
  using I = __m512i;
  using M = __mmask16;
  static constexpr int W = 16;
  static M mask(int n) { return M((1u << n) - 1u); }
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float x) { return _mm512_set1_ps(x); }
  static I set1i(int x) { return _mm512_set1_epi32(x); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R x) { _mm512_storeu_ps(p, x); }
  static R load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store_n(float* p, R x, int n) { _mm512_mask_storeu_ps(p, mask(n), x); }
  // The first n lanes of x, the rest zero (or fill).
  static R keep_n(R x, int n) { return _mm512_maskz_mov_ps(mask(n), x); }
  static R keep_n(R x, int n, float fill) { return _mm512_mask_blend_ps(mask(n), _mm512_set1_ps(fill), x); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R div(R a, R b) { return _mm512_div_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static R min(R a, R b) { return _mm512_min_ps(a, b); }
  static R abs(R a) { return _mm512_abs_ps(a); }
  static R sqrt(R a) { return _mm512_sqrt_ps(a); }
  // rsqrt and rcp estimates (14 bits) with one Newton step.
  static R rsqrt_nr(R a) {
    R y = _mm512_rsqrt14_ps(a);
    R hy = _mm512_mul_ps(_mm512_set1_ps(0.5f), y);
    return _mm512_fnmadd_ps(_mm512_mul_ps(hy, a), _mm512_mul_ps(y, y), _mm512_mul_ps(_mm512_set1_ps(1.5f), y));
  }
  static R rcp_nr(R a) {
    R y = _mm512_rcp14_ps(a);
    return _mm512_mul_ps(y, _mm512_fnmadd_ps(a, y, _mm512_set1_ps(2.0f)));
  }
  static R round_nearest(R a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static I to_int(R a) { return _mm512_cvtps_epi32(a); }
  static R int_to_float(I a) { return _mm512_cvtepi32_ps(a); }
  static R int_as_float(I a) { return _mm512_castsi512_ps(a); }
  static I float_as_int(R a) { return _mm512_castps_si512(a); }
  static I int_add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I int_sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I int_and(I a, I b) { return _mm512_and_si512(a, b); }
  static I int_or(I a, I b) { return _mm512_or_si512(a, b); }
  static I shl23(I a) { return _mm512_slli_epi32(a, 23); }
  static I shr23(I a) { return _mm512_srli_epi32(a, 23); }
  static M lt(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static R blend(M m, R if_false, R if_true) { return _mm512_mask_blend_ps(m, if_false, if_true); }
  static R select_eq(R a, R b, R x, R y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ), y, x); }
  static R exp(R a) { return vec_exp<Avx512Vec>(a); }
  static R log(R a) { return vec_log<Avx512Vec>(a); }
  // (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...): RoPE's interleaved pairs.
  static R swap_pairs(R a) { return _mm512_permute_ps(a, 0xB1); }
  static R load_i8(const int8_t* q) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
  }
  // Halving tree: 16 -> 8 -> 4 -> 1 lanes.
  static float hsum(R a) {
    __m256 lo = _mm512_castps512_ps256(a);
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
    __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
  }
  static float hmax(R a) {
    __m256 lo = _mm512_castps512_ps256(a);
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
    __m256 s8 = _mm256_max_ps(lo, hi);
    __m128 s4 = _mm_max_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_max_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_max_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
  }
};

}  // namespace
}  // namespace recur::simd
