// The AVX-512 array kernels of core/convert: 16 lanes per step, the tail through masked loads
// and stores (which never touch memory past the end).
// Compiled with the AVX-512 flags only (recur_isa_sources); reached through convert_kernels.h.
// Needs only AVX512F/BW/VL, the level IsaDispatch calls kAvx512.
//
// bf16 deliberately avoids AVX512-BF16: vcvtneps2bf16 treats fp32 subnormal inputs as zero
// (Intel SDM, "denormal go to zero"; 0x007fffff gives 0x0000 where round-to-nearest-even gives
// 0x0080), so it cannot match the scalar reference. The integer rounding below is exact.
// fp16 uses vcvtps2ph (immediate round-to-nearest-even) and vcvtph2ps, exact IEEE.
//
// GCC 12's AVX-512 header builds _mm512_undefined_* as `__m512 __Y = __Y;`, which
// -Wuninitialized reports at every inlined use; the location is inside the header, so silencing
// it around the include is enough.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "core/convert_kernels.h"

namespace recur::convert_kernels {
namespace {

constexpr size_t kLanes = 16;

__m512i splat(uint32_t v) { return _mm512_set1_epi32(int(v)); }

__mmask16 tail_mask(size_t n) { return __mmask16((1u << n) - 1u); }

// Lanes whose fp32 bits (with the sign cleared) are NaN.
__mmask16 nan_lanes(__m512i abs_bits) {
  return _mm512_cmpgt_epu32_mask(abs_bits, splat(0x7f800000u));
}

// round_magnitude() of convert.cc for 16 finite non-negative fp32 bit patterns.
template <int kMan, int kBias>
__m512i round_magnitude(__m512i a) {
  constexpr int kDrop = 23 - kMan;
  const __m512i one = splat(1);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(a, kDrop), one);
  __m512i r = _mm512_add_epi32(a, _mm512_add_epi32(splat((1u << (kDrop - 1)) - 1), lsb));
  __m512i normal =
      _mm512_sub_epi32(_mm512_srli_epi32(r, kDrop), splat(uint32_t(127 - kBias) << kMan));

  __m512i exp = _mm512_srli_epi32(a, 23);
  __mmask16 has_exp = _mm512_test_epi32_mask(a, splat(0x7f800000u));
  __m512i mant = _mm512_and_si512(a, splat(0x7fffffu));
  mant = _mm512_mask_or_epi32(mant, has_exp, mant, splat(0x800000u));
  __m512i e_eff = _mm512_max_epu32(exp, one);
  __m512i shift = _mm512_min_epu32(_mm512_sub_epi32(splat(151 - kBias - kMan), e_eff), splat(25));
  __m512i half_m1 = _mm512_sub_epi32(_mm512_sllv_epi32(one, _mm512_sub_epi32(shift, one)), one);
  __m512i sub_lsb = _mm512_and_si512(_mm512_srlv_epi32(mant, shift), one);
  __m512i subnormal =
      _mm512_srlv_epi32(_mm512_add_epi32(mant, _mm512_add_epi32(half_m1, sub_lsb)), shift);

  __mmask16 is_normal = _mm512_cmpge_epu32_mask(a, splat(uint32_t(128 - kBias) << 23));
  return _mm512_mask_blend_epi32(is_normal, subnormal, normal);
}

// ---- one 16-lane step per conversion; m selects the lanes to load and store ----

void bf16_encode16(const float* src, uint16_t* dst, __mmask16 m) {
  __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, src));
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), splat(1));
  __m512i h = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(splat(0x7fffu), lsb)), 16);
  __mmask16 nan = nan_lanes(_mm512_and_si512(u, splat(0x7fffffffu)));
  h = _mm512_mask_or_epi32(h, nan, _mm512_srli_epi32(u, 16), splat(0x40u));
  _mm512_mask_cvtepi32_storeu_epi16(dst, m, h);
}

void bf16_decode16(const uint16_t* src, float* dst, __mmask16 m) {
  __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, src)), 16);
  __mmask16 nan = nan_lanes(_mm512_and_si512(u, splat(0x7fffffffu)));
  u = _mm512_mask_or_epi32(u, nan, u, splat(0x00400000u));
  _mm512_mask_storeu_epi32(dst, m, u);
}

void fp16_encode16(const float* src, uint16_t* dst, __mmask16 m) {
  __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src), _MM_FROUND_TO_NEAREST_INT);
  _mm256_mask_storeu_epi16(dst, m, h);
}

void fp16_decode16(const uint16_t* src, float* dst, __mmask16 m) {
  _mm512_mask_storeu_ps(dst, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src)));
}

void e4m3_encode16(const float* src, uint8_t* dst, __mmask16 m) {
  __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, src));
  __m512i a = _mm512_and_si512(u, splat(0x7fffffffu));
  __m512i sign = _mm512_and_si512(_mm512_srli_epi32(u, 24), splat(0x80u));
  __m512i code = _mm512_min_epu32(round_magnitude<3, 7>(a), splat(0x7eu));  // saturate at 448
  code = _mm512_mask_mov_epi32(code, nan_lanes(a), splat(0x7fu));
  _mm512_mask_cvtepi32_storeu_epi8(dst, m, _mm512_or_si512(code, sign));
}

void e4m3_decode16(const uint8_t* src, float* dst, __mmask16 m) {
  __m512i b = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, src));
  __m512i mag = _mm512_and_si512(b, splat(0x7fu));
  __m512i sign = _mm512_slli_epi32(_mm512_and_si512(b, splat(0x80u)), 24);
  __m512i bits = _mm512_add_epi32(_mm512_slli_epi32(mag, 20), splat(120u << 23));
  // Subnormals (exponent field 0): mag * 2^-9, exact for mag < 8 whatever MXCSR says.
  __m512i subnormal = _mm512_castps_si512(
      _mm512_mul_ps(_mm512_cvtepi32_ps(mag), _mm512_set1_ps(0x1p-9f)));
  bits = _mm512_mask_mov_epi32(bits, _mm512_cmplt_epu32_mask(mag, splat(8)), subnormal);
  bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epi32_mask(mag, splat(0x7fu)),
                               splat(0x7fc00000u));
  _mm512_mask_storeu_epi32(dst, m, _mm512_or_si512(bits, sign));
}

template <bool kSaturate>
void e5m2_encode16(const float* src, uint8_t* dst, __mmask16 m) {
  __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, src));
  __m512i a = _mm512_and_si512(u, splat(0x7fffffffu));
  __m512i sign = _mm512_and_si512(_mm512_srli_epi32(u, 24), splat(0x80u));
  __m512i code = _mm512_min_epu32(round_magnitude<2, 15>(a), splat(kSaturate ? 0x7bu : 0x7cu));
  __m512i payload = _mm512_and_si512(_mm512_srli_epi32(a, 21), splat(1));
  code = _mm512_mask_or_epi32(code, nan_lanes(a), payload, splat(0x7eu));
  _mm512_mask_cvtepi32_storeu_epi8(dst, m, _mm512_or_si512(code, sign));
}

void e5m2_decode16(const uint8_t* src, float* dst, __mmask16 m) {
  __m256i h = _mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_maskz_loadu_epi8(m, src)), 8);
  _mm512_mask_storeu_ps(dst, m, _mm512_cvtph_ps(h));
}

template <typename Src, typename Dst, void (*kStep)(const Src*, Dst*, __mmask16)>
void run(const Src* src, Dst* dst, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) kStep(src + i, dst + i, __mmask16(0xffff));
  if (i < n) kStep(src + i, dst + i, tail_mask(n - i));
}

}  // namespace

void fp32_to_bf16_avx512(const float* src, uint16_t* dst, size_t n) {
  run<float, uint16_t, bf16_encode16>(src, dst, n);
}
void bf16_to_fp32_avx512(const uint16_t* src, float* dst, size_t n) {
  run<uint16_t, float, bf16_decode16>(src, dst, n);
}
void fp32_to_fp16_avx512(const float* src, uint16_t* dst, size_t n) {
  run<float, uint16_t, fp16_encode16>(src, dst, n);
}
void fp16_to_fp32_avx512(const uint16_t* src, float* dst, size_t n) {
  run<uint16_t, float, fp16_decode16>(src, dst, n);
}
void fp32_to_fp8e4m3_avx512(const float* src, uint8_t* dst, size_t n) {
  run<float, uint8_t, e4m3_encode16>(src, dst, n);
}
void fp8e4m3_to_fp32_avx512(const uint8_t* src, float* dst, size_t n) {
  run<uint8_t, float, e4m3_decode16>(src, dst, n);
}
void fp32_to_fp8e5m2_avx512(const float* src, uint8_t* dst, size_t n) {
  run<float, uint8_t, e5m2_encode16<false>>(src, dst, n);
}
void fp32_to_fp8e5m2_sat_avx512(const float* src, uint8_t* dst, size_t n) {
  run<float, uint8_t, e5m2_encode16<true>>(src, dst, n);
}
void fp8e5m2_to_fp32_avx512(const uint8_t* src, float* dst, size_t n) {
  run<uint8_t, float, e5m2_decode16>(src, dst, n);
}

}  // namespace recur::convert_kernels
