// The blocked absorbed form of MLA attention (mla.h, variant "blocked"), one function per ISA
// (mla_ops_{scalar,avx2,avx512}.cc, all instantiated from mla_ops_impl.h), picked with
// IsaDispatch.
//
// One block is rows [j0, j1) of one run and heads [h0, h1), all reading the same latents: a
// block of M = (h1 - h0)(j1 - j0) query rows runs as GEMM-shaped steps, so each cached latent
// is read once per micro-block of query rows, not once per query:
//   Q_abs[M, rank + rope] = scale [q_nope W_UK[h] ; q_rope]        (per head, [rows x nope] x [nope x rank])
//   S[M, n]               = Q_abs · latent[n, rank + rope]^T        (n: what the block's last row sees)
//   P                     = softmax of each row over its causal prefix (the rest exactly 0)
//   C[M, rank]            = P · latent[n, rank]
//   out                   = C W_UV[h]^T                             (per head, [rows x rank] x [rank x v_dim])
// Every output element is summed the same way whatever block it falls in (one accumulator
// along the reduction, the masked tail zero), so results do not depend on the blocking or the
// pool size, only on the ISA path. Pure on its arguments; thread-safe for distinct outputs
// and scratch.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "kernels/mla/mla.h"

namespace recur::kernels::mla {

struct BlockArgs {
  const Dims* dims = nullptr;
  const Weights* weights = nullptr;  // all heads (the block picks [h0, h1))
  float scale = 1;
  const float* lat = nullptr;        // [len, rank + rope] fp32 latents of the sequence
  int64_t len = 0;                   // positions cached; the run's rows are the last `count`
  int64_t count = 0;
  const float* q = nullptr;          // the run's first row: [count, heads, nope + rope]
  float* out = nullptr;              // the run's first row: [count, heads, v_dim]
  int64_t j0 = 0, j1 = 0;            // the block's rows of the run
  int h0 = 0, h1 = 0;                // and heads
  float* scratch = nullptr;          // block_scratch_floats() floats
};

// Floats of scratch one block needs.
int64_t block_scratch_floats(const Dims& d, int64_t block_rows, int64_t len);

using BlockFn = void (*)(const BlockArgs& args);

void attend_block_scalar(const BlockArgs& args);
void attend_block_avx2(const BlockArgs& args);
void attend_block_avx512(const BlockArgs& args);

inline constexpr IsaDispatch<BlockFn> kAttendBlock{
    .scalar = attend_block_scalar, .avx2 = attend_block_avx2, .avx512 = attend_block_avx512};

}  // namespace recur::kernels::mla
