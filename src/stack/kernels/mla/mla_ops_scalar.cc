// The scalar path of the blocked MLA kernel (mla_ops.h): mla_ops_impl.h over the one-lane
// traits (simd/vec_scalar.h), libm expf. Reached through kAttendBlock. Also the scratch size
// every path shares.
#include "kernels/mla/mla_ops_impl.h"
#include "kernels/simd/vec_scalar.h"

namespace recur::kernels::mla {

void attend_block_scalar(const BlockArgs& args) { attend_block_impl<simd::ScalarVec>(args); }

int64_t block_scratch_floats(const Dims& d, int64_t block_rows, int64_t len) {
  // Q_abs [rows, rank + rope], scores [rows, <= len], the weighted latents [rows, rank].
  return block_rows * (d.latent_width() + len + d.rank);
}

}  // namespace recur::kernels::mla
