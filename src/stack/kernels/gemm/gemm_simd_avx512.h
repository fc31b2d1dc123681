// AVX-512 helpers shared by the GEMM translation units compiled with the AVX-512 flags
// (gemm_dot_avx512.cc, gemm_gemv_avx512.cc, gemm_tiled_avx512.cc): the intrinsics include,
// tail masks, masked loads, the widening weight loads and horizontal sums written out by hand. Include only from those files (internal linkage).
//
// GCC 12's AVX-512 header builds _mm512_undefined_* as `__m512 __Y = __Y;`, which
// -Wuninitialized reports at every inlined use; the warning's location is inside the header,
// so silencing it for the include alone is enough. _mm512_reduce_add_ps has the same problem,
// hence hsum below.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <algorithm>
#include <cstdint>

#include "kernels/gemm/gemm.h"

namespace recur::gemm {
namespace {

inline __mmask16 mask16(int n) { return __mmask16(n >= 16 ? 0xffffu : (1u << n) - 1u); }
inline __mmask32 mask32(int n) { return __mmask32(n >= 32 ? 0xffffffffu : (1u << n) - 1u); }
inline __mmask64 mask64(int n) { return __mmask64(n >= 64 ? ~0ull : (1ull << n) - 1ull); }

inline __m512 load_f32(const float* p, int len) {
  return len == 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(mask16(len), p);
}
inline __m256i load_u16x16(const uint16_t* p, int len) {
  return len == 16 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                   : _mm256_maskz_loadu_epi16(mask16(len), p);
}
inline __m512i load_u16x32(const uint16_t* p, int len) {
  return len == 32 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi16(mask32(len), p);
}
inline __m512i load_i8x64(const int8_t* p, int len) {
  return len == 64 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(mask64(len), p);
}

// Loads of 16 weights widened to fp32 (T and load(p, len)), for the dot and GEMV kernels, and
// of 32 (load32: lanes 0-15 and 16-31). load32 reads 16-bit weights as one 64-byte load split
// in registers: the one-row F16 GEMV streamed 1.33x faster than with two 32-byte loads
// (docs/performance.md, "F16 decode").
struct WidenF32 {
  using T = float;
  static __m512 load(const float* p, int len) { return load_f32(p, len); }
  static void load32(const float* p, __m512& lo, __m512& hi) {
    lo = _mm512_loadu_ps(p);
    hi = _mm512_loadu_ps(p + 16);
  }
};
struct WidenF16 {
  using T = uint16_t;
  static __m512 load(const uint16_t* p, int len) { return _mm512_cvtph_ps(load_u16x16(p, len)); }
  static void load32(const uint16_t* p, __m512& lo, __m512& hi) {
    const __m512i h = _mm512_loadu_si512(p);
    lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
    hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
  }
};
struct WidenBf16 {
  using T = uint16_t;
  static __m512 load(const uint16_t* p, int len) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load_u16x16(p, len)), 16));
  }
  static void load32(const uint16_t* p, __m512& lo, __m512& hi) {
    const __m512i h = _mm512_loadu_si512(p);
    lo = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16));
    hi = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1)), 16));
  }
};

inline float hsum(__m512 a) {
  __m256 lo = _mm512_castps512_ps256(a);
  __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
  __m256 s8 = _mm256_add_ps(lo, hi);
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
  return _mm_cvtss_f32(s4);
}

// One block of 32 as quantize_q8_0_rows gives it (ggml's quantize_row_q8_0: d = fp16(amax / 127),
// q = round_half_even(x * (127 / amax)) in fp32, saturated), as 32 int8 (the GEMV and the prefill GEMM).
inline __m256i q8_quantize_block(const float* x, float* d) {
  const __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
  const __m512 m = _mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b));
  __m256 m8 = _mm256_max_ps(_mm512_castps512_ps256(m), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(m), 1)));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
  const float amax = _mm_cvtss_f32(m4);
  *d = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(amax / 127.0f), _MM_FROUND_TO_NEAREST_INT)));
  const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
  // Nearest-even conversion; NaN and out-of-range give INT32_MIN, which saturates to -128 as
  // ggml's packs do.
  const __m512i qa = _mm512_cvt_roundps_epi32(_mm512_mul_ps(a, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512i qb = _mm512_cvt_roundps_epi32(_mm512_mul_ps(b, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtsepi32_epi8(qa)), _mm512_cvtsepi32_epi8(qb), 1);
}

inline int32_t hsum_epi32(__m512i a) {
  __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
  return _mm_cvtsi128_si32(s4);
}

}  // namespace
}  // namespace recur::gemm
