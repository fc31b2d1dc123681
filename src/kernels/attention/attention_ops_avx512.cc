// The AVX-512 path of attend() (attention_ops.h): attention_ops_impl.h over 16-lane __m512 with
// masked tails (masked loads never touch memory past the end). Needs AVX512F/BW/VL.
// Compiled with the AVX-512 flags only (recur_isa_sources); reached through kAttend.
// GCC 12's AVX-512 header builds _mm512_undefined_* as `__m512 __Y = __Y;`, which
// -Wuninitialized reports at every inlined use; silencing it around the include is enough.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "kernels/attention/attention_ops_impl.h"
#include "kernels/kda/kda_vec_math.h"

namespace recur::kernels::attention {
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
  static R load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store(float* p, R x) { _mm512_storeu_ps(p, x); }
  static void store_n(float* p, R x, int n) { _mm512_mask_storeu_ps(p, mask(n), x); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static R min(R a, R b) { return _mm512_min_ps(a, b); }
  static R keep_n(R a, int n) { return _mm512_maskz_mov_ps(mask(n), a); }
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
  // What kda_vec_math.h's vec_exp needs.
  static R round_nearest(R a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static I to_int(R a) { return _mm512_cvtps_epi32(a); }
  static R int_as_float(I a) { return _mm512_castsi512_ps(a); }
  static I int_add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I shl23(I a) { return _mm512_slli_epi32(a, 23); }
  static M lt(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static R blend(M m, R if_false, R if_true) { return _mm512_mask_blend_ps(m, if_false, if_true); }
  static R exp(R a) { return ::recur::kda::vec_exp<Avx512Vec>(a); }

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
  static R deq_fp8(const uint8_t* p) { return fp8_from(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static R deq_fp8_n(const uint8_t* p, int n) { return fp8_from(_mm_maskz_loadu_epi8(mask(n), p)); }
  static R deq_i8(const int8_t* p) { return i8_from(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static R deq_i8_n(const int8_t* p, int n) { return i8_from(_mm_maskz_loadu_epi8(mask(n), p)); }
};

}  // namespace

void attend_avx512(const AttendArgs& args) { attend_impl<Avx512Vec>(args); }

}  // namespace recur::kernels::attention
