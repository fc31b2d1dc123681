// The final RMSNorm and the vocabulary-parallel LM head, for the rows with want_logits only, in
// the caller's order: each rank computes its slice of the vocabulary (the all-gather is each
// rank writing its slice of the shared logits; under mpi an all_gather between processes).
#include <cmath>

#include "engine/blocks/block.h"
#include "engine/layers.h"
#include "kernels/rmsnorm/rmsnorm.h"
#include "trace/trace.h"

namespace recur {

namespace {

// Every rank's [n, its vocabulary] slice, gathered across processes, placed into the logits.
void lm_head_gather(const Step& s, int64_t n) {
  const int64_t vocab = s.c().vocab;
  std::vector<int64_t> bytes;
  for (int q = 0; q < s.ranks; ++q) bytes.push_back(n * rank_span(vocab, s.ranks, q).size() * int64_t(sizeof(float)));
  std::vector<float> all(static_cast<size_t>(n * vocab));
  s.comm->all_gather(s.r.w.index, s.r.logits.data(), bytes, all.data());
  const float* from = all.data();
  for (int q = 0; q < s.ranks; ++q) {
    const Span vs = rank_span(vocab, s.ranks, q);
    for (int64_t j = 0; j < n; ++j, from += vs.size()) std::copy_n(from, vs.size(), s.logits + j * vocab + vs.begin);
  }
}

}  // namespace

void lm_head(const Step& s) {
  const ModelConfig& c = s.c();
  ForwardRank& r = s.r;
  const int64_t n = int64_t(s.p.want.size()), dim = c.dim;
  if (n == 0) return;
  {
    const KernelChoice& k = s.o.kernels.rmsnorm;
    RECUR_ZONE("rmsnorm");
    zone.arg("variant", s.o.ggml ? "ggml" : k.variant.data());
    zone.arg("rows", n);
    const kernels::RmsNormFn fn = rmsnorm_for(s);
    const float* wf = norm_weight(s, s.m.output_norm);
    for (int64_t j = 0; j < n; ++j) fn(r.x.data() + s.p.want[size_t(j)] * dim, wf, r.h.data() + j * dim, 1, dim, c.rms_eps);
  }
  const Span vs = r.w.vocab;
  // gemma2's final soft-capping, on the logits this rank wrote.
  auto cap = [&](float* y, int64_t count) {
    if (c.final_softcap <= 0) return;
    if (s.o.ggml) {
      // ggml_scale by 1 / cap, ggml_tanh, ggml_scale by cap: a product with the reciprocal, not a quotient.
      const float inv = 1.0f / c.final_softcap;
      for (int64_t i = 0; i < count; ++i) y[i] = std::tanh(y[i] * inv) * c.final_softcap;
      return;
    }
    for (int64_t i = 0; i < count; ++i) y[i] = c.final_softcap * std::tanh(y[i] / c.final_softcap);
  };
  if (s.o.tp == 1) {
    // Replicated ranks: rank 0 writes the shared logits; under mpi every process has its own.
    if (r.w.index == 0 || s.per_process) {
      r.w.output.apply(r.h.data(), n, s.logits, s.intra);
      cap(s.logits, n * c.vocab);
    }
  } else {
    r.logits.resize(size_t(n * vs.size()));
    r.w.output.apply(r.h.data(), n, r.logits.data(), s.intra);
    cap(r.logits.data(), n * vs.size());
    if (s.per_process) {
      lm_head_gather(s, n);  // the other slices live in other processes
    } else {
      for (int64_t j = 0; j < n; ++j)
        std::copy_n(r.logits.data() + j * vs.size(), vs.size(), s.logits + j * c.vocab + vs.begin);
    }
  }
  s.tap(Op::kOutputNorm, -1, r.h.data(), dim);
  s.tap(Op::kLmHead, -1, s.logits + vs.begin, vs.size(), vs.begin, c.vocab);
}

}  // namespace recur
