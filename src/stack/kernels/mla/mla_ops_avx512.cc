// The avx512 path of the blocked MLA kernel (mla_ops.h): mla_ops_impl.h over the 16-lane AVX-512 traits (simd/vec_avx512.h); compiled with the AVX-512 flags only (recur_isa_sources).
// Reached through kAttendBlock.
#include "kernels/mla/mla_ops_impl.h"
#include "kernels/simd/vec_avx512.h"

namespace recur::kernels::mla {

void attend_block_avx512(const BlockArgs& args) { attend_block_impl<simd::Avx512Vec>(args); }

}  // namespace recur::kernels::mla
