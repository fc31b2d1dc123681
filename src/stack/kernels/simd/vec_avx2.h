// The 8-lane AVX2 + FMA vector traits every kernel family writes its loops over (KDA, attention,
// layer ops: their *_impl.h templates take a V with these names), with masked tails
// (vmaskmovps never touches memory past the end). A family adds what only it needs by deriving
// (attention: the KV-cache dequantizers). Include only from translation units compiled with the
// AVX2 flags (recur_isa_sources): internal linkage, so no definition escapes to a scalar caller.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/simd/vec_math.h"

namespace recur::simd {
namespace {

struct Avx2Vec {
  using R = __m256;
  using I = __m256i;
  using M = __m256;
  static constexpr int W = 8;
  static I mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static I set1i(int x) { return _mm256_set1_epi32(x); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R x) { _mm256_storeu_ps(p, x); }
  static R load_n(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
  static void store_n(float* p, R x, int n) { _mm256_maskstore_ps(p, mask(n), x); }
  // The first n lanes of x, the rest zero (or fill).
  static R keep_n(R x, int n) { return _mm256_and_ps(x, _mm256_castsi256_ps(mask(n))); }
  static R keep_n(R x, int n, float fill) {
    return _mm256_blendv_ps(_mm256_set1_ps(fill), x, _mm256_castsi256_ps(mask(n)));
  }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R div(R a, R b) { return _mm256_div_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static R min(R a, R b) { return _mm256_min_ps(a, b); }
  static R abs(R a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static R sqrt(R a) { return _mm256_sqrt_ps(a); }
  // rsqrt and rcp estimates with one Newton step.
  static R rsqrt_nr(R a) {
    R y = _mm256_rsqrt_ps(a);
    R hy = _mm256_mul_ps(_mm256_set1_ps(0.5f), y);
    return _mm256_fnmadd_ps(_mm256_mul_ps(hy, a), _mm256_mul_ps(y, y), _mm256_mul_ps(_mm256_set1_ps(1.5f), y));
  }
  static R rcp_nr(R a) {
    R y = _mm256_rcp_ps(a);
    return _mm256_mul_ps(y, _mm256_fnmadd_ps(a, y, _mm256_set1_ps(2.0f)));
  }
  static R round_nearest(R a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static I to_int(R a) { return _mm256_cvtps_epi32(a); }
  static R int_to_float(I a) { return _mm256_cvtepi32_ps(a); }
  static R int_as_float(I a) { return _mm256_castsi256_ps(a); }
  static I float_as_int(R a) { return _mm256_castps_si256(a); }
  static I int_add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I int_sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I int_and(I a, I b) { return _mm256_and_si256(a, b); }
  static I int_or(I a, I b) { return _mm256_or_si256(a, b); }
  static I shl23(I a) { return _mm256_slli_epi32(a, 23); }
  static I shr23(I a) { return _mm256_srli_epi32(a, 23); }
  static M lt(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static R blend(M m, R if_false, R if_true) { return _mm256_blendv_ps(if_false, if_true, m); }
  static R select_eq(R a, R b, R x, R y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_EQ_OQ)); }
  static R exp(R a) { return vec_exp<Avx2Vec>(a); }
  static R log(R a) { return vec_log<Avx2Vec>(a); }
  // (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...): RoPE's interleaved pairs.
  static R swap_pairs(R a) { return _mm256_permute_ps(a, 0xB1); }
  static R load_i8(const int8_t* q) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
  }
  static float hsum(R a) {
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
  }
  static float hmax(R a) {
    __m128 s4 = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s4 = _mm_max_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_max_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
  }
};

}  // namespace
}  // namespace recur::simd
