// F16 in groups of 16 rows (WeightFormat::kF16R16): the regrouping and its inverse, and the
// scalar kernel every ISA path must match bit for bit.
#include <cmath>
#include <cstring>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"

namespace recur::gemm {
namespace {

void scalar_groups(const F16R16Args& a, int64_t g0, int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) {
    const uint16_t* group = a.w + size_t(g) * kQ8R16Rows * size_t(a.k);
    for (int64_t t = 0; t < a.m; ++t) {
      const float* x = a.x + t * a.k;
      for (int r = 0; r < kQ8R16Rows; ++r) {
        float acc[4] = {0, 0, 0, 0};
        for (int64_t c = 0; c < a.k; ++c)
          acc[c % 4] = std::fma(fp16_to_fp32(group[c * kQ8R16Rows + r]), x[c], acc[c % 4]);
        a.y[t * a.ldy + g * kQ8R16Rows + r] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
      }
    }
  }
}

}  // namespace

const F16R16Fn kScalarF16R16 = scalar_groups;

F16R16Fn f16r16_kernel(Isa isa) {
  if (isa >= Isa::kAvx512) return kAvx512F16R16;
  if (isa >= Isa::kAvx2) return kAvx2F16R16;
  return kScalarF16R16;
}

Status repack_f16_r16(const void* f16_rows, int64_t n, int64_t k, void* out) {
  if (n < 1 || n % kQ8R16Rows != 0 || k < 1 || f16_rows == nullptr || out == nullptr)
    return invalid_argument("repack_f16_r16: [{}, {}]: expected n a multiple of 16, k >= 1, and data", n, k);
  const auto* src = static_cast<const uint16_t*>(f16_rows);
  auto* dst = static_cast<uint16_t*>(out);
  for (int64_t r = 0; r < n; ++r) {
    uint16_t* group = dst + size_t(r / kQ8R16Rows) * kQ8R16Rows * size_t(k);
    for (int64_t c = 0; c < k; ++c) group[c * kQ8R16Rows + r % kQ8R16Rows] = src[size_t(r) * size_t(k) + size_t(c)];
  }
  return ok_status();
}

void f16_r16_row(const void* r16, int64_t k, int64_t r, void* f16_row) {
  const uint16_t* group = static_cast<const uint16_t*>(r16) + size_t(r / kQ8R16Rows) * kQ8R16Rows * size_t(k);
  auto* row = static_cast<uint16_t*>(f16_row);
  for (int64_t c = 0; c < k; ++c) row[c] = group[c * kQ8R16Rows + r % kQ8R16Rows];
}

}  // namespace recur::gemm
