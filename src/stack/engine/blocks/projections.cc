// Several projections of the same input rows (block.h, project_rows). A decode step (one row,
// fp32 weights on the pool) computes them in one parallel region: their rows in 16-row blocks,
// chunks claimed from one counter across all of them, so the step waits for the pool once per
// input instead of once per weight (a KDA layer's six input projections, attention's q/k/v,
// the FFN's gate and up). Each row is still computed whole by one thread with the same GEMV
// as Projection::apply, so the bits are the same.
#include <algorithm>

#include "engine/blocks/block.h"
#include "trace/trace.h"

namespace recur {

namespace {

constexpr int64_t kBlockRows = 16;  // the GEMV's row block: one cache line of y

bool fusable(const Step& s, std::span<const ProjectionOut> outs, int64_t m) {
  if (m != 1 || s.intra == nullptr || s.intra->size() == 1 || outs.size() < 2) return false;
  if (s.o.precision != gemm::Precision::kF32) return false;  // Projection::apply is then matmul
  if (s.o.ggml) return false;  // F32 weights then multiply in ggml's order (matmul_ggml)
  return std::all_of(outs.begin(), outs.end(), [&](const ProjectionOut& o) {
    const Weight& w = o.p->weight();
    return w.type == gguf::TensorType::kF32 && w.scale == nullptr && w.cols == outs[0].p->weight().cols;
  });
}

}  // namespace

void project_rows(const Step& s, const float* x, int64_t m, std::span<const ProjectionOut> outs) {
  if (!fusable(s, outs, m)) {
    for (const ProjectionOut& o : outs) o.p->apply(x, m, o.y, s.intra);
    return;
  }
  const int64_t cols = outs[0].p->weight().cols;
  int64_t blocks = 0, rows = 0;
  for (const ProjectionOut& o : outs) {
    rows += o.p->rows();
    blocks += (o.p->rows() + kBlockRows - 1) / kBlockRows;
  }
  RECUR_ZONE("matvec");
  zone.arg("rows", rows);
  zone.arg("m", m);
  zone.arg("dtype", "f32");
  zone.arg("fused", int64_t(outs.size()));
  // About 8 chunks per thread over all the weights, as one GEMV claims them; a chunk stays
  // within one weight.
  const int64_t per_chunk = std::max<int64_t>(1, blocks / (8 * int64_t(s.intra->size())));
  int64_t chunks = 0;
  for (const ProjectionOut& o : outs) chunks += ((o.p->rows() + kBlockRows - 1) / kBlockRows + per_chunk - 1) / per_chunk;
  s.intra->parallel_claim(chunks, [&](int64_t c, int) {
    size_t i = 0;
    for (;; ++i) {
      const int64_t n = ((outs[i].p->rows() + kBlockRows - 1) / kBlockRows + per_chunk - 1) / per_chunk;
      if (c < n) break;
      c -= n;
    }
    const Weight& w = outs[i].p->weight();
    const int64_t r0 = c * per_chunk * kBlockRows, r1 = std::min(w.rows, r0 + per_chunk * kBlockRows);
    const gemm::WeightView view{.format = gemm::WeightFormat::kF32, .n = r1 - r0, .k = cols,
                                .data = w.data + r0 * int64_t(w.row_bytes())};
    // The shapes were checked when the weights were bound: this cannot fail.
    (void)gemm::gemm_stored(view, x, 1, outs[i].y + r0, nullptr, nullptr, s.o.act);
  });
}

}  // namespace recur
