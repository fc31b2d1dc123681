// Row-wise blocks of the forward: embedding (and RoPE tables), RMSNorm and the residual add. Each runs
// over the rows in claimed chunks (for_rows), one row whole per thread.
#include "engine/blocks/block.h"
#include "engine/layers.h"

namespace recur {

void embed_rows(const Step& s) {
  const ModelConfig& c = s.c();
  batch_embed_rows(s.p, s.m.token_embedding, c.dim, s.r.x.data());
  s.tap(Op::kEmbed, -1, s.r.x.data(), c.dim);
  if (s.r.rope.empty()) return;  // no attention layer
  for (int64_t i = 0; i < s.rows(); ++i)
    rope_cos_sin(c.head_dim, s.p.positions[size_t(i)], c.rope_theta, s.r.rope.data() + i * c.head_dim);
}

void norm_rows(const Step& s, const Weight& w) {
  const ModelConfig& c = s.c();
  const int64_t dim = c.dim;
  for_rows(s.intra, s.rows(), [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> norm_w;
    norm_w.resize(size_t(dim));
    for (int64_t i = i0; i < i1; ++i)
      rmsnorm(s.r.h.data() + i * dim, s.r.x.data() + i * dim, w, c.dim, c.rms_eps, norm_w.data());
  });
}

void add_partial_rows(const Step& s) {
  const int64_t dim = s.c().dim;
  float* x = s.r.x.data();
  const float* partial = s.r.partial.data();
  for_rows(s.intra, s.rows(), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0 * dim; i < i1 * dim; ++i) x[i] += partial[i];
  });
}

}  // namespace recur
