// The AVX-512 layer loops: layer_ops_impl.h over the shared 16-lane traits (simd/vec_avx512.h).
// Compiled with the AVX-512 flags only (recur_isa_sources).
#include "kernels/layer/layer_ops_impl.h"
#include "kernels/simd/vec_avx512.h"

namespace recur::kernels {
namespace {

// The layer loops keep their own horizontal sum and max (pairwise through memory): the norms'
// and softmax's bits were fixed against them, and the reference tests compare bits.
struct Avx512Vec : simd::Avx512Vec {
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
