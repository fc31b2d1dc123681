#include "kernels/kda/kda_cost.h"

#include <algorithm>

namespace recur::kda {
namespace {

// Per (sequence, token, value head): q, k (counted per value head: they are re-read),
// v, g, b, out; and the prologue's arithmetic.
struct TokenIo {
  double bytes, flops, transcend;
};
TokenIo token_io(const Shape& s, const Params& p) {
  const double K = double(s.k), V = double(s.v);
  TokenIo io{};
  io.bytes = 4.0 * (2 * K + V + K + 1 + V);
  // norms (2 dots, 2 scales), gate (about 6 ops per channel), kd, qd, k.q
  io.flops = 4 * K + 3 * K + 6 * K + 2 * K + 2 * K;
  io.transcend = 2 + K * (p.gate == GateForm::kSoftplus ? 3 : p.gate == GateForm::kSigmoidBounded ? 2 : 1);
  return io;
}

int tiles(const Shape& s, const Params& p) {
  const int bv = int(std::min<int64_t>(p.block_v, s.v));
  return int((s.v + bv - 1) / bv);
}

}  // namespace

Cost decode_cost(const Shape& s, const Params& p) {
  const double heads = double(s.batch * s.hv), K = double(s.k), V = double(s.v);
  const TokenIo io = token_io(s, p);
  Cost c;
  c.state_bytes = heads * 2 * 4 * K * V;  // read + write
  c.bytes = c.state_bytes + heads * io.bytes;
  // decay K V, S^T k 2 K V, k v'^T 2 K V, S^T q 2 K V, v' and o 4 V
  c.flops = heads * (7 * K * V + 4 * V + io.flops);
  c.transcend = heads * io.transcend;
  return c;
}

Cost replay_step_cost(const Shape& s, const Params& p, double buffered, bool hoisted) {
  const double heads = double(s.batch * s.hv), K = double(s.k), V = double(s.v);
  const double n = buffered;
  const double reps = hoisted ? 1 : tiles(s, p);
  const TokenIo io = token_io(s, p);
  Cost c;
  c.state_bytes = heads * 4 * K * V;  // the checkpoint, read
  const double entry = 4 * (2 * K + V);
  c.bytes = c.state_bytes + heads * (io.bytes + n * entry + entry);
  // S0^T kt, S0^T qt: 4 K V; buffer terms: per entry 4 K (coefficients) + 4 V; v', o 4 V;
  // kt, qt, G: 3 K
  c.flops = heads * (4 * K * V + reps * (n * 4 * K + io.flops + 3 * K) + n * 4 * V + 4 * V);
  c.transcend = heads * reps * (io.transcend + n * K + K);
  return c;
}

Cost replay_cost(const Shape& s, const Params& p, int window, bool hoisted) {
  const double heads = double(s.batch * s.hv), K = double(s.k), V = double(s.v);
  const double L = window;
  Cost c = replay_step_cost(s, p, (L - 1) / 2, hoisted);  // mean entries before a step
  // The checkpoint is written once per window (its flush read is the same tile): (2 L + 1) K V
  // FLOPs and K exponentials per flush.
  c.state_bytes += heads * 4 * K * V / L;
  c.bytes += heads * 4 * K * V / L;
  c.flops += heads * (2 * L + 1) * K * V / L;
  c.transcend += heads * K;
  return c;
}

Cost prefill_cost(const Shape& s, const Params& p, int chunk) {
  const double heads = double(s.batch * s.hv), K = double(s.k), V = double(s.v);
  const double T = double(s.tokens);
  const TokenIo io = token_io(s, p);
  Cost c;
  c.state_bytes = heads * 2 * 4 * K * V;
  c.bytes = c.state_bytes + heads * T * io.bytes;
  if (chunk <= 0) {
    c.flops = heads * T * (7 * K * V + 4 * V + io.flops);
    c.transcend = heads * T * io.transcend;
    return c;
  }
  const double C = chunk;
  // per token: Kt S, Qt S (4 K V), state update (2 K V), A and M (C/2 entries of 5 K),
  // forward substitution and M V' (C/2 entries of 4 V)
  c.flops = heads * T * (6 * K * V + C / 2 * 5 * K + C / 2 * 4 * V + io.flops + 6 * K);
  c.transcend = heads * T * (io.transcend + C / 2 * K + 2 * K);
  return c;
}

}  // namespace recur::kda
