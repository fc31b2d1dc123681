// The per-(sequence, token, value head) prologue shared by the KDA drivers, and the plain
// state-tile step built on it.
//
// token_prologue computes, for one token of one value head: the normalized and scaled q, the
// normalized k, the log-decay g, d = exp(g), kd = k*d, qd = q*d, beta = sigmoid(b) and
// kq = k.q. plain_tile applies one recurrence step to the columns [v0, v0 + bv) of one head's
// state from that prologue: 2 passes over the tile (the second hits L1). Internal to
// src/stack/kernels/kda. Thread-safe: pure on arguments and the scratch the caller owns.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kda/kda.h"
#include "kernels/kda/kda_ops.h"

namespace recur::kda {

inline constexpr int kPrologueArrays = 6;  // floats needed: kPrologueArrays * K

struct Prologue {
  float* qn = nullptr;
  float* kn = nullptr;
  float* g = nullptr;
  float* d = nullptr;
  float* kd = nullptr;
  float* qd = nullptr;
  float beta = 0;
  float kq = 0;
};

// Everything a driver needs about the call, resolved once.
struct CallInfo {
  int K = 0, V = 0, HV = 0, HK = 0, T = 0, group = 1;
  float scale = 0;
  int layout = 0;  // StateLayout as int
};
CallInfo call_info(const Shape& shape, const Params& params);

// Fills p (its arrays point into scratch, kPrologueArrays * K floats) for token t of (b, h).
// recip: rsqrt / reciprocal + Newton instead of divisions. with_decayed: also kd and qd.
void token_prologue(const KdaOps& ops, const CallInfo& ci, const Params& params,
                    const Inputs& in, int64_t b, int64_t t, int64_t h, bool recip,
                    bool with_decayed, float* scratch, Prologue& p);

// One plain step on the tile of head state S (its [K][V] or [V][K] block): v_in and o point
// at column v0 of this token's v and output rows; tmp holds 3 * bv floats.
void plain_tile(const KdaOps& ops, const CallInfo& ci, float* S, int v0, int bv,
                const Prologue& p, const float* v_in, float* o, float* tmp);

inline float sigmoidf(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace recur::kda
