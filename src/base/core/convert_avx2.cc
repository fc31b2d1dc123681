// The AVX2 array kernels of core/convert: 8 lanes per step; the tail runs the same vector step
// on a zero-padded copy, so every element goes through identical arithmetic.
// Compiled with the AVX2 flags only (recur_isa_sources); reached through convert_kernels.h.
//
// fp16 uses F16C (vcvtps2ph with an immediate round-to-nearest-even, vcvtph2ps), which is exact
// IEEE and ignores MXCSR; e5m2 decodes as the top byte of an fp16. bf16 and the fp8 encoders
// are the integer steps of convert.cc's scalar reference, lane by lane.
#include <immintrin.h>

#include <cstring>

#include "core/convert_kernels.h"

namespace recur::convert_kernels {
namespace {

constexpr int kLanes = 8;

__m256i splat(uint32_t v) { return _mm256_set1_epi32(int(v)); }

// Lanes whose fp32 bits (with the sign cleared) are NaN: all ones, else zero.
__m256i nan_lanes(__m256i abs_bits) { return _mm256_cmpgt_epi32(abs_bits, splat(0x7f800000u)); }

// round_magnitude() of convert.cc for 8 finite non-negative fp32 bit patterns.
template <int kMan, int kBias>
__m256i round_magnitude(__m256i a) {
  constexpr int kDrop = 23 - kMan;
  const __m256i one = splat(1);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(a, kDrop), one);
  __m256i r = _mm256_add_epi32(a, _mm256_add_epi32(splat((1u << (kDrop - 1)) - 1), lsb));
  __m256i normal =
      _mm256_sub_epi32(_mm256_srli_epi32(r, kDrop), splat(uint32_t(127 - kBias) << kMan));

  __m256i exp = _mm256_srli_epi32(a, 23);
  __m256i has_exp = _mm256_cmpgt_epi32(exp, _mm256_setzero_si256());
  __m256i mant = _mm256_or_si256(_mm256_and_si256(a, splat(0x7fffffu)),
                                 _mm256_and_si256(has_exp, splat(0x800000u)));
  __m256i e_eff = _mm256_max_epu32(exp, one);
  __m256i shift = _mm256_min_epu32(_mm256_sub_epi32(splat(151 - kBias - kMan), e_eff), splat(25));
  __m256i half_m1 = _mm256_sub_epi32(_mm256_sllv_epi32(one, _mm256_sub_epi32(shift, one)), one);
  __m256i sub_lsb = _mm256_and_si256(_mm256_srlv_epi32(mant, shift), one);
  __m256i subnormal =
      _mm256_srlv_epi32(_mm256_add_epi32(mant, _mm256_add_epi32(half_m1, sub_lsb)), shift);

  __m256i is_normal = _mm256_cmpgt_epi32(a, splat((uint32_t(128 - kBias) << 23) - 1));
  return _mm256_blendv_epi8(subnormal, normal, is_normal);
}

// 8 byte codes held in the low byte of each 32-bit lane, stored in order.
void store_bytes(uint8_t* dst, __m256i codes) {
  __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(codes),
                                   _mm256_extracti128_si256(codes, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), _mm_packus_epi16(words, words));
}

// ---- one 8-lane step per conversion ----

void bf16_encode8(const float* src, uint16_t* dst) {
  __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), splat(1));
  __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(splat(0x7fffu), lsb)), 16);
  __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), splat(0x40u));
  __m256i nan = nan_lanes(_mm256_and_si256(u, splat(0x7fffffffu)));
  __m256i h = _mm256_blendv_epi8(rounded, quiet, nan);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                   _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
}

void bf16_decode8(const uint16_t* src, float* dst) {
  __m256i u = _mm256_slli_epi32(
      _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))), 16);
  __m256i nan = nan_lanes(_mm256_and_si256(u, splat(0x7fffffffu)));
  u = _mm256_or_si256(u, _mm256_and_si256(nan, splat(0x00400000u)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), u);
}

void fp16_encode8(const float* src, uint16_t* dst) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                   _mm256_cvtps_ph(_mm256_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT));
}

void fp16_decode8(const uint16_t* src, float* dst) {
  _mm256_storeu_ps(dst, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))));
}

void e4m3_encode8(const float* src, uint8_t* dst) {
  __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  __m256i a = _mm256_and_si256(u, splat(0x7fffffffu));
  __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), splat(0x80u));
  __m256i code = _mm256_min_epu32(round_magnitude<3, 7>(a), splat(0x7eu));  // saturate at 448
  code = _mm256_blendv_epi8(code, splat(0x7fu), nan_lanes(a));
  store_bytes(dst, _mm256_or_si256(code, sign));
}

void e4m3_decode8(const uint8_t* src, float* dst) {
  __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src)));
  __m256i mag = _mm256_and_si256(b, splat(0x7fu));
  __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, splat(0x80u)), 24);
  __m256i normal = _mm256_add_epi32(_mm256_slli_epi32(mag, 20), splat(120u << 23));
  // Subnormals (exponent field 0): mag * 2^-9, exact for mag < 8 whatever MXCSR says.
  __m256i subnormal = _mm256_castps_si256(
      _mm256_mul_ps(_mm256_cvtepi32_ps(mag), _mm256_set1_ps(0x1p-9f)));
  __m256i bits = _mm256_blendv_epi8(normal, subnormal, _mm256_cmpgt_epi32(splat(8), mag));
  bits = _mm256_blendv_epi8(bits, splat(0x7fc00000u), _mm256_cmpeq_epi32(mag, splat(0x7fu)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_or_si256(bits, sign));
}

template <bool kSaturate>
void e5m2_encode8(const float* src, uint8_t* dst) {
  __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  __m256i a = _mm256_and_si256(u, splat(0x7fffffffu));
  __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), splat(0x80u));
  __m256i code = _mm256_min_epu32(round_magnitude<2, 15>(a), splat(kSaturate ? 0x7bu : 0x7cu));
  __m256i payload = _mm256_and_si256(_mm256_srli_epi32(a, 21), splat(1));
  __m256i quiet_nan = _mm256_or_si256(splat(0x7eu), payload);
  code = _mm256_blendv_epi8(code, quiet_nan, nan_lanes(a));
  store_bytes(dst, _mm256_or_si256(code, sign));
}

void e5m2_decode8(const uint8_t* src, float* dst) {
  __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src));
  __m128i h = _mm_slli_epi16(_mm_cvtepu8_epi16(b), 8);
  _mm256_storeu_ps(dst, _mm256_cvtph_ps(h));
}

// Runs step over n elements: whole steps in place, the tail through zero-padded buffers.
template <typename Src, typename Dst, void (*kStep)(const Src*, Dst*)>
void run(const Src* src, Dst* dst, size_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) kStep(src + i, dst + i);
  if (i == n) return;
  Src in[kLanes] = {};
  Dst out[kLanes];
  std::memcpy(in, src + i, (n - i) * sizeof(Src));
  kStep(in, out);
  std::memcpy(dst + i, out, (n - i) * sizeof(Dst));
}

}  // namespace

void fp32_to_bf16_avx2(const float* src, uint16_t* dst, size_t n) {
  run<float, uint16_t, bf16_encode8>(src, dst, n);
}
void bf16_to_fp32_avx2(const uint16_t* src, float* dst, size_t n) {
  run<uint16_t, float, bf16_decode8>(src, dst, n);
}
void fp32_to_fp16_avx2(const float* src, uint16_t* dst, size_t n) {
  run<float, uint16_t, fp16_encode8>(src, dst, n);
}
void fp16_to_fp32_avx2(const uint16_t* src, float* dst, size_t n) {
  run<uint16_t, float, fp16_decode8>(src, dst, n);
}
void fp32_to_fp8e4m3_avx2(const float* src, uint8_t* dst, size_t n) {
  run<float, uint8_t, e4m3_encode8>(src, dst, n);
}
void fp8e4m3_to_fp32_avx2(const uint8_t* src, float* dst, size_t n) {
  run<uint8_t, float, e4m3_decode8>(src, dst, n);
}
void fp32_to_fp8e5m2_avx2(const float* src, uint8_t* dst, size_t n) {
  run<float, uint8_t, e5m2_encode8<false>>(src, dst, n);
}
void fp32_to_fp8e5m2_sat_avx2(const float* src, uint8_t* dst, size_t n) {
  run<float, uint8_t, e5m2_encode8<true>>(src, dst, n);
}
void fp8e5m2_to_fp32_avx2(const uint8_t* src, float* dst, size_t n) {
  run<uint8_t, float, e5m2_decode8>(src, dst, n);
}

}  // namespace recur::convert_kernels
