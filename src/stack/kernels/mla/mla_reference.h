// The float64 reference of MLA attention (mla.h) in its unabsorbed form, as DeepSeek-V2's
// modeling code computes it: every cached latent decompressed into a per-head key
// [W_UK c_t ; k_rope_t] and value W_UV c_t, then softmax attention. The error scale
// ("magnitude", registry.h) bounds fp32 rounding in either order of summation:
// sum_t p_t sum_r |W_UV[v][r] c_t[r]| plus sum_t p_t |v_t - out| S_t, S_t the sum of the
// score's terms |q_i W_UK[i][r] c_t[r]|, so the absorbed form's reassociation is judged
// against the terms. Pure; thread-safe.
#pragma once

#include <cstdint>

#include "kernels/mla/mla.h"

namespace recur::kernels::mla {

// One head of one query row: q [nope + rope], lat [n, rank + rope], wk the head's [rank, nope],
// wv the head's [v_dim, rank]; out and magnitude (may be null) [v_dim].
void reference_row(const double* q, const double* lat, int64_t n, const double* wk, const double* wv, const Dims& d,
                   double scale, double* out, double* magnitude);

}  // namespace recur::kernels::mla
