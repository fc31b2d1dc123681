// The AVX2 KDA primitives: kda_ops_impl.h over the shared 8-lane traits (simd/vec_avx2.h).
// Compiled with the AVX2 flags only (recur_isa_sources); reached through kOps.
#include "kernels/kda/kda_ops_impl.h"
#include "kernels/simd/vec_avx2.h"

namespace recur::kda {

const KdaOps kAvx2Ops = make_ops<simd::Avx2Vec>();

}  // namespace recur::kda
