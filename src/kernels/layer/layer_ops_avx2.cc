// The AVX2 + FMA layer loops: layer_ops_impl.h over 8-lane __m256 with masked tails; exp from
// kda_vec_math.h. Compiled with the AVX2 flags only (recur_isa_sources).
#include <immintrin.h>

#include "kernels/kda/kda_vec_math.h"
#include "kernels/layer/layer_ops_impl.h"

namespace recur::kernels {
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
  static R keep_n(R x, int n, float fill) { return _mm256_blendv_ps(_mm256_set1_ps(fill), x, _mm256_castsi256_ps(mask(n))); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R div(R a, R b) { return _mm256_div_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static R min(R a, R b) { return _mm256_min_ps(a, b); }
  static R abs(R a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static R round_nearest(R a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static I to_int(R a) { return _mm256_cvtps_epi32(a); }
  static R int_as_float(I a) { return _mm256_castsi256_ps(a); }
  static I int_add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I shl23(I a) { return _mm256_slli_epi32(a, 23); }
  static M lt(R a, R b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static R blend(M m, R if_false, R if_true) { return _mm256_blendv_ps(if_false, if_true, m); }
  static R exp(R a) { return kda::vec_exp<Avx2Vec>(a); }
  static R swap_pairs(R a) { return _mm256_permute_ps(a, 0xB1); }
  static R load_i8(const int8_t* q) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
  }
  static float hsum(R a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  static float hmax(R a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

const LayerOps kLayerOpsAvx2 = make_layer_ops<Avx2Vec>(Isa::kAvx2);

}  // namespace recur::kernels
