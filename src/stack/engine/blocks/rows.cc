// Row-wise blocks of the forward: embedding (and RoPE tables), RMSNorm and the residual add. Each runs
// over the rows in claimed chunks (for_rows), one row whole per thread. The norms are the
// registered kernels rmsnorm and rmsnorm_residual at the variants EngineOptions::kernels names.
#include "engine/blocks/block.h"
#include "engine/layers.h"
#include "kernels/layer/layer.h"
#include "kernels/rmsnorm/rmsnorm.h"
#include "trace/trace.h"

namespace recur {

const float* norm_weight(const Step& s, const Weight& w) {
  w.dequantize_row(0, s.r.norm_w.data());
  return s.r.norm_w.data();
}

void embed_rows(const Step& s) {
  const ModelConfig& c = s.c();
  batch_embed_rows(s.p, s.m.token_embedding, c.dim, s.r.x.data());
  s.tap(Op::kEmbed, -1, s.r.x.data(), c.dim);
  if (s.r.rope.empty()) return;  // no attention layer
  if (c.is_mla()) return mla_rope_tables(s);
  const int64_t hd = c.head_dim;
  for (int64_t i = 0; i < s.rows(); ++i) {
    float* cs = s.r.rope.data() + i * 2 * hd;
    kernels::rope_tables(hd, double(s.p.positions[size_t(i)]), double(c.rope_theta), kernels::RopeLayout::kInterleaved,
                         cs, cs + hd);
  }
}

void norm_rows(const Step& s, const Weight& w) {
  const KernelChoice& k = s.o.kernels.rmsnorm;
  RECUR_ZONE("rmsnorm");
  zone.arg("variant", k.variant.data());
  zone.arg("rows", s.rows());
  const kernels::RmsNormFn fn = kernels::rmsnorm_fn(k.isa);
  const int64_t dim = s.c().dim;
  const float eps = s.c().rms_eps;
  const float* wf = norm_weight(s, w);
  const float* x = s.r.x.data();
  float* h = s.r.h.data();
  for_rows(s.intra, s.rows(), [&](int64_t i0, int64_t i1) { fn(x + i0 * dim, wf, h + i0 * dim, i1 - i0, dim, eps); });
}

void add_partial_norm_rows(const Step& s, const Weight& w) {
  const KernelChoice& k = s.o.kernels.rmsnorm_residual;
  RECUR_ZONE("rmsnorm_residual");
  zone.arg("variant", k.variant.data());
  zone.arg("rows", s.rows());
  const kernels::LayerOps& ops = kernels::layer_ops(k.isa);
  const int64_t dim = s.c().dim;
  const float eps = s.c().rms_eps;
  const float* wf = norm_weight(s, w);
  float* x = s.r.x.data();
  float* h = s.r.h.data();
  const float* partial = s.r.partial.data();
  for_rows(s.intra, s.rows(), [&](int64_t i0, int64_t i1) {
    const int64_t at = i0 * dim;
    kernels::rmsnorm_residual(x + at, partial + at, wf, x + at, h + at, i1 - i0, dim, eps, ops);
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
