// The KDA cost model: bytes that must cross the memory interface and arithmetic operations,
// as functions of the shape. The roofline fractions of the benchmark divide by these.
//
// Bytes count every tensor read or written once (state read + write for plain decode;
// checkpoint read, buffered entries read and one new entry written for ReplaySSM, plus the
// flush amortized over the window). FLOPs count adds and multiplies (an FMA is 2) of the
// formulas as written; exponentials, logs and square roots are counted apart in `transcend`.
// Thread-safe (pure).
#pragma once

#include "kernels/kda/kda.h"

namespace recur::kda {

struct Cost {
  double bytes = 0;
  double state_bytes = 0;  // the part of `bytes` that is state (checkpoint) traffic
  double flops = 0;
  double transcend = 0;    // exp / log / sqrt evaluations
};

// One plain decode step (shape.tokens == 1).
Cost decode_cost(const Shape& shape, const Params& params);
// One ReplaySSM decode step with `buffered` entries before it and no flush, for the vtile
// prologue repeated nv times or hoisted. Linear in `buffered`, so T steps from F entries cost
// T x replay_step_cost(F + (T - 1) / 2).
Cost replay_step_cost(const Shape& shape, const Params& params, double buffered, bool hoisted);
// One ReplaySSM decode step averaged over a window of L steps (mean buffered entries
// (L - 1) / 2, one flush per L steps), for the vtile prologue repeated nv times or hoisted.
Cost replay_cost(const Shape& shape, const Params& params, int window, bool hoisted);
// A whole prefill of shape.tokens tokens (chunk 0 = recurrent).
Cost prefill_cost(const Shape& shape, const Params& params, int chunk);

}  // namespace recur::kda
