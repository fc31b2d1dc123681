// The AVX-512 layer loops: layer_ops_impl.h over 16-lane __m512 with masked tails; exp from
// kda_vec_math.h. Compiled with the AVX-512 flags only (recur_isa_sources). GCC 12's header
// trips -Wuninitialized inside itself (see kda_ops_avx512.cc): silenced for the include only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "kernels/kda/kda_vec_math.h"
#include "kernels/layer/layer_ops_impl.h"

namespace recur::kernels {
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
  static void store(float* p, R x) { _mm512_storeu_ps(p, x); }
  static R load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store_n(float* p, R x, int n) { _mm512_mask_storeu_ps(p, mask(n), x); }
  static R keep_n(R x, int n, float fill) { return _mm512_mask_blend_ps(mask(n), _mm512_set1_ps(fill), x); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R div(R a, R b) { return _mm512_div_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static R min(R a, R b) { return _mm512_min_ps(a, b); }
  static R abs(R a) { return _mm512_abs_ps(a); }
  static R round_nearest(R a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static I to_int(R a) { return _mm512_cvtps_epi32(a); }
  static R int_as_float(I a) { return _mm512_castsi512_ps(a); }
  static I int_add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I shl23(I a) { return _mm512_slli_epi32(a, 23); }
  static M lt(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static R blend(M m, R if_false, R if_true) { return _mm512_mask_blend_ps(m, if_false, if_true); }
  static R exp(R a) { return kda::vec_exp<Avx512Vec>(a); }
  static R swap_pairs(R a) { return _mm512_permute_ps(a, 0xB1); }
  static R load_i8(const int8_t* q) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
  }
  // Through memory, not _mm512_reduce_*: GCC 12 warns inside its header for those.
  static float hsum(R a) {
    alignas(64) float l[16];
    _mm512_store_ps(l, a);
    float s0 = 0, s1 = 0;
    for (int i = 0; i < 16; i += 2) {
      s0 += l[i];
      s1 += l[i + 1];
    }
    return s0 + s1;
  }
  static float hmax(R a) {
    alignas(64) float l[16];
    _mm512_store_ps(l, a);
    float m = l[0];
    for (int i = 1; i < 16; ++i) m = l[i] > m ? l[i] : m;
    return m;
  }
};

}  // namespace

const LayerOps kLayerOpsAvx512 = make_layer_ops<Avx512Vec>(Isa::kAvx512);

}  // namespace recur::kernels
