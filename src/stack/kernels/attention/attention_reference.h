// The float64 reference of one attention row, and its error scale.
//
// out[i] = sum_t p_t v[t][i] with p = softmax(scale * q . k[t]) in double. The error scale
// ("magnitude", registry.h) of out[i] bounds what fp32 rounding can do to it:
//   mag[i] = sum_t p_t |v[t][i]|  +  sum_t p_t |v[t][i] - out[i]| * S_t,   S_t = scale * sum_j |q_j k[t][j]|
// The first term covers the weighted sum of V, the second a score error of relative size
// eps * S_t (a score perturbation ds_t moves out[i] by p_t (v[t][i] - out[i]) ds_t), so dot
// products that cancel are judged against their terms. Pure; thread-safe.
#pragma once

#include <cstdint>

namespace recur::kernels::attention {

// k and v rows t live at k + t * stride (stride >= head_dim); n >= 1 rows.
void reference_attention(const double* q, const double* k, const double* v, int64_t n, int64_t stride, int head_dim,
                         double scale, double* out, double* magnitude);

}  // namespace recur::kernels::attention
