#include "kernels/kda/kda_prologue.h"

#include <cmath>

namespace recur::kda {

CallInfo call_info(const Shape& s, const Params& p) {
  CallInfo ci;
  ci.K = int(s.k);
  ci.V = int(s.v);
  ci.HV = int(s.hv);
  ci.HK = int(s.hk);
  ci.T = int(s.tokens);
  ci.group = int(s.hv / s.hk);
  ci.scale = p.scale > 0 ? p.scale : 1.0f / std::sqrt(float(s.k));
  ci.layout = int(p.layout);
  return ci;
}

void token_prologue(const KdaOps& ops, const CallInfo& ci, const Params& params,
                    const Inputs& in, int64_t b, int64_t t, int64_t h, bool recip,
                    bool with_decayed, float* scratch, Prologue& p) {
  const int K = ci.K;
  p.qn = scratch;
  p.kn = scratch + K;
  p.g = scratch + 2 * K;
  p.d = scratch + 3 * K;
  p.kd = scratch + 4 * K;
  p.qd = scratch + 5 * K;
  const int64_t row = b * ci.T + t;
  const int64_t hk = h / ci.group;
  ops.l2norm(in.q + (row * ci.HK + hk) * K, p.qn, K, params.eps, ci.scale, recip);
  ops.l2norm(in.k + (row * ci.HK + hk) * K, p.kn, K, params.eps, 1.0f, recip);
  const float* graw = in.g + (row * ci.HV + h) * K;
  if (params.gate == GateForm::kPrecomputed) {
    ops.gate(0, graw, nullptr, 0.0f, 0.0f, p.g, K, recip);
  } else {
    const float* bias = in.dt_bias != nullptr ? in.dt_bias + h * K : nullptr;
    ops.gate(int(params.gate), graw, bias, std::exp(in.a_log[h]), params.lower_bound, p.g, K,
             recip);
  }
  ops.exp(p.g, p.d, K);
  if (with_decayed) {
    ops.mul(p.kn, p.d, p.kd, K);
    ops.mul(p.qn, p.d, p.qd, K);
  }
  p.beta = sigmoidf(in.b[row * ci.HV + h]);
  p.kq = ops.dot(p.kn, p.qn, K);
}

void plain_tile(const KdaOps& ops, const CallInfo& ci, float* S, int v0, int bv,
                const Prologue& p, const float* v_in, float* o, float* tmp) {
  float* u = tmp;            // (diag(d) S)^T k
  float* w = tmp + bv;       // (diag(d) S)^T q
  float* vd = tmp + 2 * bv;  // v' = beta (v - u)
  ops.reduce2(S, ci.layout, ci.K, ci.V, v0, bv, p.kd, p.qd, u, w);
  ops.delta_out(v_in, u, w, p.beta, p.kq, vd, o, bv);  // o = w + (k.q) v'
  ops.update(S, ci.layout, ci.K, ci.V, v0, bv, p.d, 1, p.kn, 0, vd, 0);  // S = d S + k v'^T
}

}  // namespace recur::kda
