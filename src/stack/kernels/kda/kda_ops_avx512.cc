// The AVX-512 KDA primitives: kda_ops_impl.h over the shared 16-lane traits (simd/vec_avx512.h).
// Compiled with the AVX-512 flags only (recur_isa_sources); reached through kOps.
#include "kernels/kda/kda_ops_impl.h"
#include "kernels/simd/vec_avx512.h"

namespace recur::kda {

const KdaOps kAvx512Ops = make_ops<simd::Avx512Vec>();

}  // namespace recur::kda
