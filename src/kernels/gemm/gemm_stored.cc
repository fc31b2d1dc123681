// gemm_stored(): fp32 activations against F32 / F16 / BF16 / Q8_0 weights read in place.
#include <algorithm>

#include "core/cpu_features.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"

namespace recur::gemm {

size_t row_bytes(WeightFormat f, int64_t k) {
  switch (f) {
    case WeightFormat::kF32: return size_t(k) * 4;
    case WeightFormat::kF16:
    case WeightFormat::kBf16: return size_t(k) * 2;
    case WeightFormat::kQ8_0: return size_t(k / kQ8Block) * kQ8BlockBytes;
  }
  return 0;
}

Status gemm_stored(const WeightView& w, const float* x, int64_t m, float* y, ThreadPool* pool) {
  if (w.n < 1 || w.k < 1 || w.data == nullptr)
    return invalid_argument("gemm_stored: weights {} [{}, {}]: expected n, k >= 1 and data", weight_format_name(w.format),
                            w.n, w.k);
  if (w.format == WeightFormat::kQ8_0 && w.k % kQ8Block != 0)
    return invalid_argument("gemm_stored: q8_0 weights need k % 32 == 0, got k = {}", w.k);
  if (m < 1 || x == nullptr || y == nullptr)
    return invalid_argument("gemm_stored: m={}: expected m >= 1 and x, y set", m);
  const DotKernels& kern = dot_kernels(active_isa());
  DotFn fn = nullptr;
  int64_t kc = 1024;
  switch (w.format) {
    case WeightFormat::kF32: fn = kern.f32; break;
    case WeightFormat::kF16: fn = kern.f16w; kc = 2048; break;
    case WeightFormat::kBf16: fn = kern.bf16w; kc = 2048; break;
    case WeightFormat::kQ8_0: fn = kern.q8_0w; kc = 2048; break;
  }
  if (m <= 8) kc = w.k;
  const DotArgs a{.k = w.k, .x = x, .w = w.data, .y = y, .ldy = w.n};
  run_dot(fn, a, m, w.n, kc, 64, pool);
  return ok_status();
}

}  // namespace recur::gemm
