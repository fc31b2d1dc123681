// The AVX2 path of the blocked MLA kernel (mla_ops.h): mla_ops_impl.h over the 8-lane AVX2 + FMA
// traits (simd/vec_avx2.h). Compiled with the AVX2 flags only (recur_isa_sources); reached
// through kAttendBlock.
#include "kernels/mla/mla_ops_impl.h"
#include "kernels/simd/vec_avx2.h"

namespace recur::kernels::mla {

void attend_block_avx2(const BlockArgs& args) { attend_block_impl<simd::Avx2Vec>(args); }

}  // namespace recur::kernels::mla
