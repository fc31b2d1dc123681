// The float64 reference of KDA: the recurrence of kda.h evaluated literally in double.
//
// This is what every fp32 path is judged against (docs/kda.md states the tolerances). It is
// slow on purpose: no tiling, no vectors, every step written as in the formula.
// Thread-safe (pure on its arguments).
#pragma once

#include <vector>

#include "kernels/kda/kda.h"

namespace recur::kda {

// The per-channel log-decay g[K] of one (sequence, token, value head), in double.
void reference_gate(const Shape& shape, const Params& params, const Inputs& in, int64_t b,
                    int64_t t, int64_t h, double* g);

// Runs T = shape.tokens steps. state: [B, HV, K, V] or [B, HV, V, K] as params.layout, in
// double, updated in place; out: [B, T, HV, V].
void reference_forward(const Shape& shape, const Params& params, const Inputs& in,
                       std::vector<double>& state, std::vector<double>& out);

}  // namespace recur::kda
