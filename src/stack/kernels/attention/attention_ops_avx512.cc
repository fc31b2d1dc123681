// The AVX-512 path of attend() (attention_ops.h): attention_ops_impl.h over the shared 16-lane
// traits (simd/vec_avx512.h) with masked tails (masked loads never touch memory past the end).
// Needs AVX512F/BW/VL. Compiled with the AVX-512 flags only (recur_isa_sources); reached through
// kAttend.
#include "kernels/attention/attention_ops_impl.h"
#include "kernels/simd/vec_avx512.h"

namespace recur::kernels::attention {
namespace {

// The shared traits plus the KV cache's dequantizers.
struct Avx512Vec : simd::Avx512Vec {
  static R bf16_from(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static R fp8_from(__m128i b) {
    // As the scalar path: magnitude bits at the fp32 exponent boundary, then * 2^120 (exact).
    const I x = _mm512_cvtepu8_epi32(b);
    const I mag = _mm512_slli_epi32(_mm512_and_si512(x, _mm512_set1_epi32(0x7F)), 20);
    const I sign = _mm512_slli_epi32(_mm512_and_si512(x, _mm512_set1_epi32(0x80)), 24);
    return _mm512_mul_ps(_mm512_castsi512_ps(_mm512_or_si512(mag, sign)), _mm512_set1_ps(0x1p120f));
  }
  static R i8_from(__m128i b) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)); }
  static R deq_bf16(const uint16_t* p) { return bf16_from(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static R deq_bf16_n(const uint16_t* p, int n) { return bf16_from(_mm256_maskz_loadu_epi16(mask(n), p)); }
  static R deq_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static R deq_f16_n(const uint16_t* p, int n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), p)); }
  static R deq_fp8(const uint8_t* p) { return fp8_from(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static R deq_fp8_n(const uint8_t* p, int n) { return fp8_from(_mm_maskz_loadu_epi8(mask(n), p)); }
  static R deq_i8(const int8_t* p) { return i8_from(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static R deq_i8_n(const int8_t* p, int n) { return i8_from(_mm_maskz_loadu_epi8(mask(n), p)); }
};

}  // namespace

void attend_avx512(const AttendArgs& args) { attend_impl<Avx512Vec>(args); }

}  // namespace recur::kernels::attention
