// The scalar path of the ggml-order Q8_0 dot (gemm_q8_ggml.h): eight lanes emulated in an array,
// each with one fused multiply-add per block.
#include <cmath>
#include <cstring>

#include "core/convert.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_q8_ggml.h"

namespace recur::gemm {

void q8_0_ggml_rows_scalar(const Q8GgmlArgs& a, int64_t n0, int64_t n1) {
  const int64_t blocks = a.k / kQ8Block;
  for (int64_t r = n0; r < n1; ++r) {
    const std::byte* wr = a.w + size_t(r) * a.w_row_bytes;
    for (int64_t i = 0; i < a.m; ++i) {
      const int8_t* xq = a.xq + i * a.k;
      const float* xd = a.xd + i * blocks;
      float lane[8] = {};
      for (int64_t b = 0; b < blocks; ++b) {
        const std::byte* blk = wr + size_t(b) * kQ8BlockBytes;
        uint16_t dw;
        std::memcpy(&dw, blk, sizeof dw);
        const auto* wq = reinterpret_cast<const int8_t*>(blk + 2);
        const int8_t* xb = xq + b * kQ8Block;
        const float d = fp16_to_fp32(dw) * xd[b];
        for (int j = 0; j < 8; ++j) {
          int32_t s = 0;
          for (int t = 4 * j; t < 4 * j + 4; ++t) s += int32_t(wq[t]) * int32_t(xb[t]);
          lane[j] = std::fma(d, float(s), lane[j]);
        }
      }
      float r4[4];
      for (int j = 0; j < 4; ++j) r4[j] = lane[j + 4] + lane[j];
      a.y[i * a.ldy + r] = (r4[0] + r4[2]) + (r4[1] + r4[3]);
    }
  }
}

}  // namespace recur::gemm
