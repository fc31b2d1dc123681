// The AVX2 + FMA layer loops: layer_ops_impl.h over the shared 8-lane traits (simd/vec_avx2.h).
// Compiled with the AVX2 flags only (recur_isa_sources).
#include "kernels/layer/layer_ops_impl.h"
#include "kernels/simd/vec_avx2.h"

namespace recur::kernels {

const LayerOps kLayerOpsAvx2 = make_layer_ops<simd::Avx2Vec>(Isa::kAvx2);

}  // namespace recur::kernels
