// The AVX-512 path of the blocked MLA kernel (mla_ops.h): mla_ops_impl.h over the 16-lane
// traits (simd/vec_avx512.h). Compiled with the AVX-512 flags only (recur_isa_sources); reached
// through kAttendBlock.
#include "kernels/mla/mla_ops_impl.h"
#include "kernels/simd/vec_avx512.h"

namespace recur::kernels::mla {

void attend_block_avx512(const BlockArgs& args) { attend_block_impl<simd::Avx512Vec>(args); }

}  // namespace recur::kernels::mla
