// ReplaySSM cache and step (kda_replay.h). Per step and (sequence, head):
//
//   prologue: q, k normalized, g, beta; G_p = G_{p-1} + g for the new entry p; for every
//     buffered j < p the scalars a_j = (k_j * exp(G_p - G_j)) . k and b_j = the same . q;
//     kt = exp(G_p) * k, qt = exp(G_p) * q. A flush first also builds E = exp(G_last) and
//     C_j = k_j * exp(G_last - G_j).
//   tile (columns [v0, v0 + bv)): [flush: S0 = diag(E) S0 + sum_j C_j v'_j^T]
//     u = S0^T kt + sum_j a_j v'_j;  w = S0^T qt + sum_j b_j v'_j
//     v'_p = beta (v - u) (stored in the buffer);  o = w + (k.q) v'_p
//
// vtile/vtile_recip: every tile item computes the prologue itself, keeping this call's new
// entries private (tile 0 stores them), so no item reads what another writes. hoisted and
// hoisted_recip: one prologue pass per (sequence, head) writes the new entries and coefficients, then the tiles.
#include "kernels/kda/kda_replay.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/thread_pool.h"
#include "kernels/kda/kda_parallel.h"
#include "kernels/kda/kda_prologue.h"

namespace recur::kda {
namespace {


// What each sequence does this step, fixed before any work item runs.
struct SeqPlan {
  bool flush = false;
  int n_old = 0;     // entries before the step
  int half_old = 0;  // half holding them
  int n0 = 0;        // position of the first new entry (0 after a flush)
  int half_new = 0;  // half receiving the new entries
};

// The coefficients of one (sequence, head): carved from a float block.
struct ReplayPro {
  float *E, *C, *kt, *qt, *a, *b, *beta, *kq, *knew, *gnew;
  static size_t floats(int K, int L, int T) {
    return round16(K) + round16(size_t(L) * K) + 4 * round16(size_t(T) * K) +
           2 * round16(size_t(T) * L) + 2 * round16(T);
  }
  ReplayPro(float* p, int K, int L, int T) {
    auto take = [&](size_t n) { float* r = p; p += round16(n); return r; };
    E = take(K); C = take(size_t(L) * K);
    kt = take(size_t(T) * K); qt = take(size_t(T) * K);
    knew = take(size_t(T) * K); gnew = take(size_t(T) * K);
    a = take(size_t(T) * L); b = take(size_t(T) * L);
    beta = take(T); kq = take(T);
  }
};

// Fills pro for head (b, h). The new entries' k and G go to pro.knew / pro.gnew. Never inlined,
// like replay_tile, so instruction counts attribute to the kernel's regions (kda_register.cc).
[[gnu::noinline]] void replay_prologue(const KdaOps& ops, const CallInfo& ci, const Params& params,
                     const Inputs& in, ReplayCache& cache, int64_t b, int64_t h,
                     const SeqPlan& plan, bool recip, const ReplayPro& pro, float* scratch) {
  const int K = ci.K, L = cache.window();
  const int64_t head = b * ci.HV + h;
  auto old_k = [&](int j) { return cache.key(head, plan.half_old * L + j); };
  auto old_g = [&](int j) { return cache.cum_decay(head, plan.half_old * L + j); };
  if (plan.flush) {
    const float* glast = old_g(plan.n_old - 1);
    ops.exp(glast, pro.E, K);
    for (int j = 0; j < plan.n_old; ++j) {
      float d1, d2;
      ops.decay_dots(old_k(j), glast, old_g(j), old_k(j), old_k(j), K, pro.C + j * K, &d1, &d2);
    }
  }
  // Entry j of this step's buffer (old entries stay in their half when there is no flush).
  auto entry_k = [&](int j) { return j < plan.n0 ? old_k(j) : pro.knew + (j - plan.n0) * K; };
  auto entry_g = [&](int j) { return j < plan.n0 ? old_g(j) : pro.gnew + (j - plan.n0) * K; };
  float* e = scratch + kPrologueArrays * K;
  for (int i = 0; i < ci.T; ++i) {
    const int p = plan.n0 + i;
    Prologue pr;
    token_prologue(ops, ci, params, in, b, i, h, recip, false, scratch, pr);
    std::memcpy(pro.knew + i * K, pr.kn, K * sizeof(float));
    float* G = pro.gnew + i * K;
    std::memcpy(G, pr.g, K * sizeof(float));
    if (p > 0) ops.axpy(1.0f, entry_g(p - 1), G, K);
    for (int j = 0; j < p; ++j) {
      ops.decay_dots(entry_k(j), G, entry_g(j), pr.kn, pr.qn, K, nullptr, pro.a + i * L + j,
                     pro.b + i * L + j);
    }
    ops.exp(G, e, K);
    ops.mul(e, pr.kn, pro.kt + i * K, K);
    ops.mul(e, pr.qn, pro.qt + i * K, K);
    pro.beta[i] = pr.beta;
    pro.kq[i] = pr.kq;
  }
}

void store_entries(ReplayCache& cache, int64_t head, const SeqPlan& plan, const ReplayPro& pro,
                   int K, int T) {
  const int L = cache.window();
  for (int i = 0; i < T; ++i) {
    const int s = plan.half_new * L + plan.n0 + i;
    std::memcpy(cache.key(head, s), pro.knew + i * K, K * sizeof(float));
    std::memcpy(cache.cum_decay(head, s), pro.gnew + i * K, K * sizeof(float));
  }
}

[[gnu::noinline]] void replay_tile(const KdaOps& ops, const CallInfo& ci, ReplayCache& cache, int64_t head,
                 const SeqPlan& plan, const ReplayPro& pro, const float* v_head_t0,
                 float* o_head_t0, int v0, int bv, float* tmp) {
  const int K = ci.K, V = ci.V, L = cache.window();
  float* S0 = cache.checkpoint(head);
  if (plan.flush) {
    ops.update(S0, ci.layout, K, V, v0, bv, pro.E, plan.n_old, pro.C, K,
               cache.delta(head, plan.half_old * L) + v0, V);
  }
  const float* vbase = cache.delta(head, plan.half_new * L) + v0;  // entry j at vbase + j V
  float* u = tmp;
  float* w = tmp + bv;
  const int64_t row_stride = int64_t(ci.HV) * V;  // next token, same head
  for (int i = 0; i < ci.T; ++i) {
    const int p = plan.n0 + i;
    ops.reduce2(S0, ci.layout, K, V, v0, bv, pro.kt + i * K, pro.qt + i * K, u, w);
    for (int j = 0; j < p; ++j) {
      ops.axpy(pro.a[i * L + j], vbase + int64_t(j) * V, u, bv);
      ops.axpy(pro.b[i * L + j], vbase + int64_t(j) * V, w, bv);
    }
    ops.delta_out(v_head_t0 + i * row_stride + v0, u, w, pro.beta[i], pro.kq[i],
                  const_cast<float*>(vbase) + int64_t(p) * V, o_head_t0 + i * row_stride + v0, bv);
  }
}

}  // namespace

Result<ReplayCache> ReplayCache::create(const Shape& shape, StateLayout layout, int window) {
  if (shape.batch < 1 || shape.hv < 1 || shape.hk < 1 || shape.k < 1 || shape.v < 1 ||
      shape.hv % shape.hk != 0) {
    return invalid_argument("kda::ReplayCache: shape B={} HK={} HV={} K={} V={}: dimensions >= 1, HV % HK == 0",
                            shape.batch, shape.hk, shape.hv, shape.k, shape.v);
  }
  if (window < 1 || window > 1024) {
    return invalid_argument("kda::ReplayCache: window={}: expected 1..1024", window);
  }
  ReplayCache c;
  c.shape_ = shape;
  c.shape_.tokens = 1;
  c.layout_ = layout;
  c.window_ = window;
  const size_t heads = size_t(shape.batch * shape.hv);
  c.ckpt_ = make_aligned<float>(heads * shape.k * shape.v, true);
  c.k_ = make_aligned<float>(heads * 2 * window * shape.k, true);
  c.g_ = make_aligned<float>(heads * 2 * window * shape.k, true);
  c.v_ = make_aligned<float>(heads * 2 * window * shape.v, true);
  c.count_.assign(size_t(shape.batch), 0);
  c.half_.assign(size_t(shape.batch), 0);
  return c;
}

void ReplayCache::reset(const float* state) {
  std::memcpy(ckpt_.data(), state, ckpt_.size());
  std::fill(count_.begin(), count_.end(), 0);
  std::fill(half_.begin(), half_.end(), 0);
}

Status ReplayCache::rollback(int64_t seq, int steps) {
  if (seq < 0 || seq >= shape_.batch) {
    return invalid_argument("kda::ReplayCache::rollback: sequence {} of {}", seq, shape_.batch);
  }
  if (steps < 0 || steps > count_[size_t(seq)]) {
    return invalid_argument("kda::ReplayCache::rollback: sequence {}: {} steps, but only {} since the checkpoint",
                            seq, steps, count_[size_t(seq)]);
  }
  count_[size_t(seq)] -= steps;
  return ok_status();
}

void ReplayCache::advance(int64_t seq, int tokens, bool flushed) {
  if (flushed) {
    half_[size_t(seq)] ^= 1;
    count_[size_t(seq)] = tokens;
    ++flushes_;
  } else {
    count_[size_t(seq)] += tokens;
  }
}

void ReplayCache::materialize(float* out) const {
  const int64_t K = shape_.k, V = shape_.v;
  auto* self = const_cast<ReplayCache*>(this);
  std::vector<double> acc(size_t(K * V));
  for (int64_t b = 0; b < shape_.batch; ++b) {
    const int n = count_[size_t(b)], half = half_[size_t(b)];
    for (int64_t h = 0; h < shape_.hv; ++h) {
      const int64_t head = b * shape_.hv + h;
      const float* S0 = self->checkpoint(head);
      const float* glast = n > 0 ? self->cum_decay(head, half * window_ + n - 1) : nullptr;
      for (int64_t c = 0; c < K; ++c) {
        const double e = glast ? std::exp(double(glast[c])) : 1.0;
        for (int64_t j = 0; j < V; ++j) {
          const int64_t idx = layout_ == StateLayout::kKV ? c * V + j : j * K + c;
          acc[size_t(c * V + j)] = e * S0[idx];
        }
      }
      for (int i = 0; i < n; ++i) {
        const float* kj = self->key(head, half * window_ + i);
        const float* gj = self->cum_decay(head, half * window_ + i);
        const float* vj = self->delta(head, half * window_ + i);
        for (int64_t c = 0; c < K; ++c) {
          const double coef = double(kj[c]) * std::exp(double(glast[c]) - double(gj[c]));
          for (int64_t j = 0; j < V; ++j) acc[size_t(c * V + j)] += coef * vj[j];
        }
      }
      float* o = out + head * K * V;
      for (int64_t c = 0; c < K; ++c) {
        for (int64_t j = 0; j < V; ++j) {
          o[layout_ == StateLayout::kKV ? c * V + j : j * K + c] = float(acc[size_t(c * V + j)]);
        }
      }
    }
  }
}

Status replay_step(ReplayCache& cache, const Shape& shape, const Params& params,
                   const Inputs& in, float* out, DecodeVariant variant, ThreadPool* pool,
                   Workspace& ws) {
  RECUR_RETURN_IF_ERROR(validate(shape, params, in));
  const Shape& cs = cache.shape();
  if (shape.batch != cs.batch || shape.hk != cs.hk || shape.hv != cs.hv || shape.k != cs.k ||
      shape.v != cs.v || params.layout != cache.layout()) {
    return invalid_argument("kda::replay_step: shape or layout differs from the cache's (B={} HK={} HV={} K={} V={})",
                            cs.batch, cs.hk, cs.hv, cs.k, cs.v);
  }
  const int L = cache.window();
  if (shape.tokens > L) {
    return invalid_argument("kda::replay_step: {} tokens do not fit a window of {}", shape.tokens, L);
  }
  if (out == nullptr) return invalid_argument("kda::replay_step: out must be given");
  const KdaOps& ops = *kOps.get();
  const CallInfo ci = call_info(shape, params);
  const int K = ci.K, V = ci.V, T = ci.T;
  const int bv = std::min(params.block_v, V);
  const int nv = (V + bv - 1) / bv;
  const int64_t heads = shape.batch * shape.hv;
  const int workers = pool ? pool->size() : 1;
  const bool hoisted = hoists_prologue(variant);
  const bool recip = uses_reciprocals(variant);

  std::vector<SeqPlan> plans(size_t(shape.batch));
  for (int64_t b = 0; b < shape.batch; ++b) {
    SeqPlan& p = plans[size_t(b)];
    p.n_old = cache.count(b);
    p.half_old = cache.half(b);
    p.flush = p.n_old + T > L;
    p.n0 = p.flush ? 0 : p.n_old;
    p.half_new = p.flush ? p.half_old ^ 1 : p.half_old;
  }

  const size_t pro_floats = ReplayPro::floats(K, L, T);
  const size_t scratch_floats = round16((kPrologueArrays + 1) * size_t(K));
  const size_t per_worker = scratch_floats + round16(2 * size_t(bv)) + (hoisted ? 0 : pro_floats);
  float* base = ws.floats(per_worker * workers + (hoisted ? pro_floats * heads : 0));
  float* shared = base + per_worker * workers;

  if (hoisted) {
    run(pool, heads, [&](int64_t begin, int64_t end, int worker) {
      float* scratch = base + per_worker * worker;
      for (int64_t head = begin; head < end; ++head) {
        const int64_t b = head / ci.HV;
        ReplayPro pro(shared + pro_floats * head, K, L, T);
        replay_prologue(ops, ci, params, in, cache, b, head % ci.HV, plans[size_t(b)], recip, pro,
                        scratch);
        store_entries(cache, head, plans[size_t(b)], pro, K, T);
      }
    });
  }
  run(pool, heads * nv, [&](int64_t begin, int64_t end, int worker) {
    float* scratch = base + per_worker * worker;
    float* tmp = scratch + scratch_floats;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t head = item / nv, b = head / ci.HV, h = head % ci.HV;
      const int tile = int(item % nv);
      const SeqPlan& plan = plans[size_t(b)];
      float* pro_mem = hoisted ? shared + pro_floats * head : tmp + round16(2 * size_t(bv));
      ReplayPro pro(pro_mem, K, L, T);
      if (!hoisted) {
        replay_prologue(ops, ci, params, in, cache, b, h, plan, recip, pro, scratch);
      }
      const int v0 = tile * bv;
      const int64_t row0 = b * T * ci.HV + h;  // token 0 of (b, h)
      replay_tile(ops, ci, cache, head, plan, pro, in.v + row0 * V, out + row0 * V, v0,
                  std::min(bv, V - v0), tmp);
      if (!hoisted && tile == 0) store_entries(cache, head, plan, pro, K, T);
    }
  });
  for (int64_t b = 0; b < shape.batch; ++b) cache.advance(b, T, plans[size_t(b)].flush);
  return ok_status();
}

}  // namespace recur::kda
