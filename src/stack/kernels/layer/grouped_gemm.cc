// Grouped expert GEMM: one gemm_nt (layer_ops.h) per expert's contiguous group of tokens.
#include "kernels/layer/layer.h"

namespace recur::kernels {

Status grouped_gemm(const float* x, const float* w, float* y, std::span<const int64_t> offsets, int64_t n, int64_t k,
                    const LayerOps& ops) {
  if (offsets.empty() || offsets[0] != 0) return invalid_argument("grouped_gemm: offsets must start at 0");
  for (size_t e = 1; e < offsets.size(); ++e)
    if (offsets[e] < offsets[e - 1])
      return invalid_argument("grouped_gemm: offsets[{}]={} < offsets[{}]={}", e, offsets[e], e - 1, offsets[e - 1]);
  for (size_t e = 0; e + 1 < offsets.size(); ++e) {
    const int64_t m = offsets[e + 1] - offsets[e];
    if (m > 0) ops.gemm_nt(x + offsets[e] * k, w + int64_t(e) * n * k, y + offsets[e] * n, m, n, k, n);
  }
  return ok_status();
}

}  // namespace recur::kernels
