// The AVX2 path of attend() (attention_ops.h): attention_ops_impl.h over 8-lane __m256 with
// masked tails (vmaskmovps never touches memory past the end; narrow tails go through a small
// stack copy). Compiled with the AVX2 flags only (recur_isa_sources); reached through kAttend.
#include <immintrin.h>

#include <cstring>

#include "kernels/attention/attention_ops_impl.h"
#include "kernels/kda/kda_vec_math.h"

namespace recur::kernels::attention {
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
  static R load_n(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
  static void store(float* p, R x) { _mm256_storeu_ps(p, x); }
  static void store_n(float* p, R x, int n) { _mm256_maskstore_ps(p, mask(n), x); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static R min(R a, R b) { return _mm256_min_ps(a, b); }
  static R keep_n(R a, int n) { return _mm256_and_ps(a, _mm256_castsi256_ps(mask(n))); }
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
  // What kda_vec_math.h's vec_exp needs.
  static R round_nearest(R a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static I to_int(R a) { return _mm256_cvtps_epi32(a); }
  static R int_as_float(I a) { return _mm256_castsi256_ps(a); }
  static I int_add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I shl23(I a) { return _mm256_slli_epi32(a, 23); }
  static M lt(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static R blend(M m, R if_false, R if_true) { return _mm256_blendv_ps(if_false, if_true, m); }
  static R exp(R a) { return ::recur::kda::vec_exp<Avx2Vec>(a); }

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
  static R deq_fp8(const uint8_t* p) { return fp8_from(load8(p)); }
  static R deq_fp8_n(const uint8_t* p, int n) { return fp8_from(load8_n(p, n)); }
  static R deq_i8(const int8_t* p) { return i8_from(load8(p)); }
  static R deq_i8_n(const int8_t* p, int n) { return i8_from(load8_n(p, n)); }
};

}  // namespace

void attend_avx2(const AttendArgs& args) { attend_impl<Avx2Vec>(args); }

}  // namespace recur::kernels::attention
