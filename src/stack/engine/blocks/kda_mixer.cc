// The KDA mixer (hybrid.h): q/k/v/f/b projections, each sequence's convolutions and recurrence
// (hybrid_kda.h: a decode step for a run of one token, kda::prefill for longer runs), the gated
// RMSNorm per value head and the output projection. qwen3next's gated DeltaNet is the same mixer
// with one decay logit per head (kda_scalar_decay: broadcast over the head's K channels, which the
// kernel then decays alike) and a SiLU gate in the norm (kda_gate_silu).
#include <algorithm>
#include <cmath>

#include "engine/blocks/block.h"
#include "trace/trace.h"

namespace recur {

namespace {

float kda_mixer_sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// g holds n per-head values packed at its start; each becomes K copies ([n, K]). Backwards, so
// value i is read before the copies of any later value (which start at or after i) land on it.
void broadcast_heads(float* g, int64_t n, int64_t K) {
  for (int64_t i = n - 1; i >= 0; --i) {
    const float v = g[i];
    std::fill_n(g + i * K, K, v);
  }
}

}  // namespace

void kda_mixer(const Step& s, int l) {
  RECUR_ZONE("kda_mixer");
  zone.arg("layer", l);
  const ModelConfig& c = s.c();
  ForwardRank& r = s.r;
  const LayerShard& S = r.w.layers[size_t(l)];
  const int64_t M = s.rows(), K = c.kda_head_dim, hv = S.v_heads.size();
  const int64_t qk = S.k_heads.size() * K, vd = hv * K;
  const int64_t q_off = S.k_heads.begin * K, v_off = S.v_heads.begin * K;
  const int64_t qk_all = int64_t(c.kda_key_heads) * K, v_all = int64_t(c.kda_heads) * K;
  const float* h = r.h.data();
  if (!S.wf_a) {
    // Every projection of h, the output gate's included (the KDA core leaves r.gate alone).
    const ProjectionOut in[] = {{&S.wq, r.q.data()}, {&S.wk, r.k.data()}, {&S.wv, r.v.data()},
                                {&S.wf, r.g.data()}, {&S.wb, r.b.data()}, {&S.out_gate, r.gate.data()}};
    project_rows(s, h, M, in);
  } else {
    // Low-rank gates (kimi-linear): each through its first factor into r.low_rank, then the
    // second; the full-rank projections of h share one region.
    const ProjectionOut in[] = {{&S.wq, r.q.data()}, {&S.wk, r.k.data()}, {&S.wv, r.v.data()}, {&S.wb, r.b.data()}};
    project_rows(s, h, M, in);
    S.wf_a->apply(h, M, r.low_rank.data(), s.intra);
    S.wf.apply(r.low_rank.data(), M, r.g.data(), s.intra);
    S.out_gate_a->apply(h, M, r.low_rank.data(), s.intra);
    S.out_gate.apply(r.low_rank.data(), M, r.gate.data(), s.intra);
  }
  if (c.kda_scalar_decay) broadcast_heads(r.g.data(), M * hv, K);
  s.tap(Op::kKdaQProj, l, r.q.data(), qk, q_off, qk_all);
  s.tap(Op::kKdaKProj, l, r.k.data(), qk, q_off, qk_all);
  s.tap(Op::kKdaVProj, l, r.v.data(), vd, v_off, v_all);
  s.tap(Op::kKdaFProj, l, r.g.data(), vd, v_off, v_all);
  s.tap(Op::kKdaBProj, l, r.b.data(), hv, S.v_heads.begin, c.kda_heads);
  for (const BatchPlan::Run& run : s.p.runs) {
    const int64_t f = run.first;
    hybrid::KdaRows rows{.q = r.q.data() + f * qk, .k = r.k.data() + f * qk, .v = r.v.data() + f * vd,
                         .g = r.g.data() + f * vd, .b = r.b.data() + f * hv, .tokens = run.count};
    r.fail(r.kda[size_t(l)][size_t(run.seq)]->run(S, rows, r.o.data() + f * vd, s.intra, r.ws, r.scratch));
  }
  s.tap(Op::kKdaCore, l, r.o.data(), vd, v_off, v_all);
  s.tap(Op::kKdaGateProj, l, r.gate.data(), vd, v_off, v_all);
  // Gated RMSNorm per value head, in claimed chunks of (row, head) pairs; a decode step's few
  // heads on the caller (a parallel region costs more than their work).
  for_rows(M > 1 ? s.intra : nullptr, M * hv, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      float* o = r.o.data() + i * K;
      const float* gate = r.gate.data() + i * K;
      double ss = 0;
      for (int64_t j = 0; j < K; ++j) ss += double(o[j]) * o[j];
      const float inv = 1.0f / std::sqrt(float(ss / double(K)) + c.rms_eps);
      if (c.kda_gate_silu)
        for (int64_t j = 0; j < K; ++j) o[j] = o[j] * inv * S.out_norm[size_t(j)] * (gate[j] * kda_mixer_sigmoid(gate[j]));
      else
        for (int64_t j = 0; j < K; ++j) o[j] = o[j] * inv * S.out_norm[size_t(j)] * kda_mixer_sigmoid(gate[j]);
    }
  });
  s.tap(Op::kKdaGatedNorm, l, r.o.data(), vd, v_off, v_all);
  S.wo.apply(r.o.data(), M, r.partial.data(), s.intra);
  s.tap(Op::kKdaOutProj, l, r.partial.data(), c.dim);
}

}  // namespace recur
