// gemm_w8a8_stored(): W8A8 weights as a model file stores them (int8 rows and a scale per row,
// read in place) against fp32 activations quantized per token here, on the dot kernels' int8
// path (gemm()'s kW8A8 arithmetic without PackedWeights owning a converted copy).
#include <algorithm>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"

namespace recur::gemm {

void w8a8_compensation(const int8_t* q, int64_t n, int64_t k, int32_t* comp) {
  for (int64_t r = 0; r < n; ++r) {
    int32_t s = 0;
    for (int64_t c = 0; c < k; ++c) s += q[r * k + c];
    comp[r] = 128 * s;
  }
}

Status gemm_w8a8_stored(const W8A8View& w, const float* x, int64_t m, float* y, ThreadPool* pool, Workspace* ws) {
  if (m < 1 || w.n < 1 || w.k < 1 || w.k > 65536 || x == nullptr || y == nullptr || w.q == nullptr ||
      w.scales == nullptr || w.comp == nullptr)
    return invalid_argument("gemm_w8a8_stored: m={} n={} k={}: expected m, n >= 1, 1 <= k <= 65536 (int32 sums) "
                            "and every pointer set",
                            m, w.n, w.k);
  thread_local Workspace local;
  Workspace& s = ws != nullptr ? *ws : local;
  const size_t mk = size_t(m * w.k);
  auto* xq = reinterpret_cast<int8_t*>(s.bytes(0, mk));
  auto* xs = reinterpret_cast<float*>(s.bytes(1, size_t(m) * sizeof(float)));
  RECUR_RETURN_IF_ERROR(
      quantize_int8_rows(std::span(x, mk), size_t(m), size_t(w.k), std::span(xq, mk), std::span(xs, size_t(m))));
  const DotArgs a{.k = w.k, .x = xq, .w = w.q, .x_scale = xs, .w_scale = w.scales, .w_comp = w.comp, .y = y,
                  .ldy = w.n};
  // run_dot's loop, with two differences: K is never split (the VNNI compensation covers whole
  // rows, as gemm()'s kW8A8), and decode (m <= 8) always takes one-row tiles. int8 matrices of a
  // model are 1-3 MB, below run_dot's streaming threshold, and 4 interleaved 1 KiB rows per tile
  // ran at 6.6 GB/s where one sequential stream per row runs at Q8_0's GEMV speed (~16 GB/s;
  // docs/performance.md "W8A8 decode"). Integer sums are exact, so the bits do not change.
  const DotFn fn = dot_kernels(active_isa()).i8;
  auto body = [&](int64_t b0, int64_t b1, int) {
    DotArgs t = a;
    t.one_row_tiles = m <= 8;
    t.n0 = b0 * 4;
    t.n1 = std::min(w.n, b1 * 4);
    t.k0 = 0;
    t.k1 = w.k;
    for (t.m0 = 0; t.m0 < m; t.m0 += 64) {
      t.m1 = std::min(m, t.m0 + 64);
      fn(t);
    }
  };
  const int64_t blocks = (w.n + 3) / 4;
  if (pool != nullptr) pool->parallel_for(blocks, body);
  else body(0, blocks, 0);
  return ok_status();
}

}  // namespace recur::gemm
