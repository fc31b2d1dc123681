// AVX2 helpers shared by the GEMM translation units compiled with the AVX2 flags
// (gemm_dot_avx2.cc, gemm_gemv_avx2.cc, gemm_prefill_avx2.cc): zero-padded partial loads, the
// widening weight loads and horizontal sums. Include only from those files (internal linkage).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace recur::gemm {
namespace {

// len (< N) elements of p, zero-padded to N, as one 256-bit or 128-bit load.
template <class T, int N>
struct Padded {
  alignas(32) T v[N] = {};
  Padded(const T* p, int len) { std::memcpy(v, p, size_t(len) * sizeof(T)); }
};

inline __m256 load_f32(const float* p, int len) {
  if (len == 8) return _mm256_loadu_ps(p);
  return _mm256_load_ps(Padded<float, 8>(p, len).v);
}
inline __m128i load_u16x8(const uint16_t* p, int len) {
  if (len == 8) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(Padded<uint16_t, 8>(p, len).v));
}
inline __m256i load_i8x32(const int8_t* p, int len) {
  if (len == 32) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(Padded<int8_t, 32>(p, len).v));
}

inline float hsum(__m256 a) {
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
  return _mm_cvtss_f32(s4);
}
inline int32_t hsum_epi32(__m256i a) {
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
  return _mm_cvtsi128_si32(s4);
}

// Element loaders: T and load(p, len) -> 8 fp32 lanes. (Types, not function pointers, as
// template arguments: a pointer to a function returning __m256 drops its vector attributes.)
struct WidenF32 {
  using T = float;
  static __m256 load(const float* p, int len) { return load_f32(p, len); }
};
struct WidenF16 {
  using T = uint16_t;
  static __m256 load(const uint16_t* p, int len) { return _mm256_cvtph_ps(load_u16x8(p, len)); }
};
struct WidenBf16 {
  using T = uint16_t;
  static __m256 load(const uint16_t* p, int len) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load_u16x8(p, len)), 16));
  }
};

// The exact int32 dot of 32 int8 x (ax = |x|) and 32 int8 w in 8 lanes: |x| (unsigned) against
// sign(x)·w (vpmaddubsw + vpmaddwd). |x|, |w| <= 127, so no pair sum saturates int16.
inline __m256i q8_block_dot(__m256i ax, __m256i xq, __m256i wq) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(wq, xq)), _mm256_set1_epi16(1));
}

// One block of 32 as quantize_q8_0_rows gives it (ggml's quantize_row_q8_0, whose AVX code this
// is: d = fp16(amax / 127), q = round_half_even(x * (127 / amax)) in fp32, cvtps_epi32 and two
// saturating packs), as 32 int8 (the AVX2 GEMV and prefill GEMM).
inline __m256i q8_quantize_block8(const float* x, float* d) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 v[4];
  for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
  const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
                                 _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
  const float amax = _mm_cvtss_f32(m4);
  *d = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(amax / 127.0f), _MM_FROUND_TO_NEAREST_INT)));
  const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
  __m256i i32[4];
  for (int j = 0; j < 4; ++j)
    i32[j] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[j], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  const __m256i i16a = _mm256_packs_epi32(i32[0], i32[1]), i16b = _mm256_packs_epi32(i32[2], i32[3]);
  // packs work per 128-bit lane: dwords 0, 4, 1, 5, 2, 6, 3, 7 hold elements in order.
  return _mm256_permutevar8x32_epi32(_mm256_packs_epi16(i16a, i16b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// x [k] (k % 32 == 0) as q8_quantize_block8 blocks: q [k] and d [k / 32], quantize_q8_0_rows' bits.
inline void q8_quantize_row8(const float* x, int64_t k, int8_t* q, float* d) {
  for (int64_t b = 0; b < k / 32; ++b)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), q8_quantize_block8(x + 32 * b, d + b));
}

}  // namespace
}  // namespace recur::gemm
