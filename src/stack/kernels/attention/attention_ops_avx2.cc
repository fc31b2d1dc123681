// The AVX2 path of attend() (attention_ops.h): attention_ops_impl.h over the shared 8-lane traits
// (simd/vec_avx2.h) with masked tails (vmaskmovps never touches memory past the end; narrow tails go through a small
// stack copy). Compiled with the AVX2 flags only (recur_isa_sources); reached through kAttend.
#include <cstring>

#include "kernels/attention/attention_ops_impl.h"
#include "kernels/simd/vec_avx2.h"

namespace recur::kernels::attention {
namespace {

// The shared traits plus the KV cache's dequantizers.
struct Avx2Vec : simd::Avx2Vec {
  // 8 bytes (or fewer, zero-padded) into the low half of an xmm register.
  static __m128i load8(const void* p) { return _mm_loadl_epi64(static_cast<const __m128i*>(p)); }
  static __m128i load8_n(const void* p, int bytes) {
    alignas(16) unsigned char buf[16] = {};
    std::memcpy(buf, p, size_t(bytes));
    return _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
  }
  static R bf16_from(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  static R fp8_from(__m128i b) {
    // As the scalar path: magnitude bits at the fp32 exponent boundary, then * 2^120 (exact).
    const I x = _mm256_cvtepu8_epi32(b);
    const I mag = _mm256_slli_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7F)), 20);
    const I sign = _mm256_slli_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x80)), 24);
    return _mm256_mul_ps(_mm256_castsi256_ps(_mm256_or_si256(mag, sign)), _mm256_set1_ps(0x1p120f));
  }
  static R i8_from(__m128i b) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)); }
  static R deq_bf16(const uint16_t* p) { return bf16_from(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static R deq_bf16_n(const uint16_t* p, int n) { return bf16_from(load8_n(p, 2 * n)); }
  static R deq_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static R deq_f16_n(const uint16_t* p, int n) { return _mm256_cvtph_ps(load8_n(p, 2 * n)); }
  static R deq_fp8(const uint8_t* p) { return fp8_from(load8(p)); }
  static R deq_fp8_n(const uint8_t* p, int n) { return fp8_from(load8_n(p, n)); }
  static R deq_i8(const int8_t* p) { return i8_from(load8(p)); }
  static R deq_i8_n(const int8_t* p, int n) { return i8_from(load8_n(p, n)); }
};

}  // namespace

void attend_avx2(const AttendArgs& args) { attend_impl<Avx2Vec>(args); }

}  // namespace recur::kernels::attention
