// kda::prefill: T tokens per sequence.
//
// recurrent: work items (sequence, head, V-tile); each runs every token on its tile, so the
// tile (K x BV floats) stays in L1 for the whole sequence. The prologue uses the reciprocal
// forms and is recomputed per tile (it is small next to T tile steps).
//
// chunked (chunk C = 64 or 16): work items (sequence, head). Per chunk, with Gam_r the
// in-chunk cumulative log-decay, kt_r = exp(Gam_r) k_r, qt_r = exp(Gam_r) q_r, and for j < r
//   A[r][j] = beta_r sum_c k_r[c] k_j[c] exp(Gam_r[c] - Gam_j[c])
//   M[r][j] =        sum_c q_r[c] k_j[c] exp(Gam_r[c] - Gam_j[c]),   M[r][r] = k_r . q_r
// the UT form (I + A) V' = beta (V - Kt S) is solved by forward substitution, then
//   O = Qt S + M V',   S <- diag(exp Gam_C) S + sum_r (exp(Gam_C - Gam_r) k_r) v'_r^T.
// Exponents are always differences Gam_r - Gam_j <= 0 (never exp(-Gam)), so nothing overflows
// however strong the decay (docs/kda.md). [V][K] states are transposed into scratch.
#include <algorithm>
#include <cstring>

#include "core/thread_pool.h"
#include "kernels/kda/kda.h"
#include "kernels/kda/kda_parallel.h"
#include "kernels/kda/kda_prologue.h"

namespace recur::kda {
namespace {


void prefill_recurrent(const KdaOps& ops, const CallInfo& ci, const Shape& shape,
                       const Params& params, const Inputs& in, float* state, float* out,
                       ThreadPool* pool, Workspace& ws) {
  const int K = ci.K, V = ci.V;
  const int bv = std::min(params.block_v, V);
  const int nv = (V + bv - 1) / bv;
  const int workers = pool ? pool->size() : 1;
  const size_t per_worker = round16(kPrologueArrays * size_t(K)) + round16(3 * size_t(bv));
  float* base = ws.floats(per_worker * workers);
  run(pool, shape.batch * shape.hv * nv, [&](int64_t begin, int64_t end, int worker) {
    float* scratch = base + per_worker * worker;
    float* tmp = scratch + round16(kPrologueArrays * size_t(K));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t head = item / nv, b = head / ci.HV, h = head % ci.HV;
      const int v0 = int(item % nv) * bv;
      const int w = std::min(bv, V - v0);
      float* S = state + head * int64_t(K) * V;
      for (int64_t t = 0; t < ci.T; ++t) {
        Prologue p;
        token_prologue(ops, ci, params, in, b, t, h, true, true, scratch, p);
        const int64_t row = (b * ci.T + t) * ci.HV + h;
        plain_tile(ops, ci, S, v0, w, p, in.v + row * V + v0, out + row * V + v0, tmp);
      }
    }
  });
}

// Per-worker scratch of the chunked path, carved from one block.
struct ChunkScratch {
  float *kn, *qn, *gam, *kt, *qt, *kh, *A, *M, *U, *O, *S, *pro, *e, *beta, *kq;
  static size_t floats(int C, int K, int V) {
    return 6 * round16(size_t(C) * K) + 2 * round16(size_t(C) * C) + 2 * round16(size_t(C) * V) +
           round16(size_t(K) * V) + round16(kPrologueArrays * size_t(K)) + round16(K) +
           2 * round16(C);
  }
  ChunkScratch(float* p, int C, int K, int V) {
    auto take = [&](size_t n) { float* r = p; p += round16(n); return r; };
    kn = take(size_t(C) * K); qn = take(size_t(C) * K); gam = take(size_t(C) * K);
    kt = take(size_t(C) * K); qt = take(size_t(C) * K); kh = take(size_t(C) * K);
    A = take(size_t(C) * C); M = take(size_t(C) * C);
    U = take(size_t(C) * V); O = take(size_t(C) * V);
    S = take(size_t(K) * V); pro = take(kPrologueArrays * size_t(K)); e = take(K);
    beta = take(C); kq = take(C);
  }
};

void transpose(const float* src, float* dst, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) dst[int64_t(c) * rows + r] = src[int64_t(r) * cols + c];
  }
}

void chunk_step(const KdaOps& ops, const CallInfo& ci, const Params& params, const Inputs& in,
                int64_t b, int64_t h, int64_t t0, int n, float* S, float* out,
                const ChunkScratch& w) {
  const int K = ci.K, V = ci.V;
  // Prologue of every token; gam is the in-chunk cumulative log-decay.
  for (int r = 0; r < n; ++r) {
    Prologue p;
    token_prologue(ops, ci, params, in, b, t0 + r, h, true, false, w.pro, p);
    std::memcpy(w.kn + r * K, p.kn, K * sizeof(float));
    std::memcpy(w.qn + r * K, p.qn, K * sizeof(float));
    float* gr = w.gam + r * K;
    std::memcpy(gr, p.g, K * sizeof(float));
    if (r > 0) ops.axpy(1.0f, w.gam + (r - 1) * K, gr, K);
    w.beta[r] = p.beta;
    w.kq[r] = p.kq;
    ops.exp(gr, w.e, K);
    ops.mul(w.e, p.kn, w.kt + r * K, K);
    ops.mul(w.e, p.qn, w.qt + r * K, K);
  }
  // Intra-chunk matrices from exp of cumulative-decay differences.
  for (int r = 0; r < n; ++r) {
    for (int j = 0; j < r; ++j) {
      float a, m;
      ops.decay_dots(w.kn + j * K, w.gam + r * K, w.gam + j * K, w.kn + r * K, w.qn + r * K, K,
                     nullptr, &a, &m);
      w.A[r * n + j] = w.beta[r] * a;
      w.M[r * n + j] = m;
    }
  }
  // U = Kt S, O = Qt S; then v'_r = beta_r (v_r - U_r) - sum_j A[r][j] v'_j, in place in U.
  const float* last_gam = w.gam + (n - 1) * K;
  for (int r = 0; r < n; ++r) {
    float* ur = w.U + r * V;
    float* orow = w.O + r * V;
    ops.reduce2(S, 0, K, V, 0, V, w.kt + r * K, w.qt + r * K, ur, orow);
    const float* vr = in.v + ((b * ci.T + t0 + r) * ci.HV + h) * V;
    // ur <- beta (v - ur) - sum_j A[r][j] v'_j = v'_r   (delta_out with kq = 0 leaves orow)
    ops.delta_out(vr, ur, orow, w.beta[r], 0.0f, ur, orow, V);
    for (int j = 0; j < r; ++j) ops.axpy(-w.A[r * n + j], w.U + j * V, ur, V);
    // orow <- orow + sum_{j <= r} M[r][j] v'_j, with M[r][r] = k_r . q_r
    ops.axpy(w.kq[r], ur, orow, V);
    for (int j = 0; j < r; ++j) ops.axpy(w.M[r * n + j], w.U + j * V, orow, V);
    float* o = out + ((b * ci.T + t0 + r) * ci.HV + h) * V;
    std::memcpy(o, orow, V * sizeof(float));
    // kh_r = exp(Gam_C - Gam_r) k_r for the state update (c output of decay_dots).
    float d1, d2;
    ops.decay_dots(w.kn + r * K, last_gam, w.gam + r * K, w.kn + r * K, w.qn + r * K, K,
                   w.kh + r * K, &d1, &d2);
  }
  ops.exp(last_gam, w.e, K);
  ops.update(S, 0, K, V, 0, V, w.e, n, w.kh, K, w.U, V);
}

void prefill_chunked(const KdaOps& ops, const CallInfo& ci, const Shape& shape,
                     const Params& params, const Inputs& in, float* state, float* out, int chunk,
                     ThreadPool* pool, Workspace& ws) {
  const int K = ci.K, V = ci.V;
  const int workers = pool ? pool->size() : 1;
  const size_t per_worker = ChunkScratch::floats(chunk, K, V);
  float* base = ws.floats(per_worker * workers);
  run(pool, shape.batch * shape.hv, [&](int64_t begin, int64_t end, int worker) {
    ChunkScratch w(base + per_worker * worker, chunk, K, V);
    for (int64_t head = begin; head < end; ++head) {
      float* Sh = state + head * int64_t(K) * V;
      float* S = Sh;
      if (ci.layout == int(StateLayout::kVK)) {
        transpose(Sh, w.S, V, K);
        S = w.S;
      }
      for (int64_t t0 = 0; t0 < ci.T; t0 += chunk) {
        const int n = int(std::min<int64_t>(chunk, ci.T - t0));
        chunk_step(ops, ci, params, in, head / ci.HV, head % ci.HV, t0, n, S, out, w);
      }
      if (ci.layout == int(StateLayout::kVK)) transpose(w.S, Sh, K, V);
    }
  });
}

}  // namespace

Status prefill(const Shape& shape, const Params& params, const Inputs& in, float* state,
               float* out, PrefillVariant variant, ThreadPool* pool, Workspace& ws) {
  RECUR_RETURN_IF_ERROR(validate(shape, params, in));
  if (state == nullptr || out == nullptr) return invalid_argument("kda::prefill: state and out must be given");
  const KdaOps& ops = *kOps.get();
  const CallInfo ci = call_info(shape, params);
  switch (variant) {
    case PrefillVariant::kRecurrent:
      prefill_recurrent(ops, ci, shape, params, in, state, out, pool, ws);
      break;
    case PrefillVariant::kChunked64:
      prefill_chunked(ops, ci, shape, params, in, state, out, 64, pool, ws);
      break;
    case PrefillVariant::kChunked16:
      prefill_chunked(ops, ci, shape, params, in, state, out, 16, pool, ws);
      break;
  }
  return ok_status();
}

}  // namespace recur::kda
