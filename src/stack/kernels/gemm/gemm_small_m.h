// Small-M GEMM (2 <= M <= 8 rows of x, batched decode) over stored weights: each W row is
// loaded and widened (or, for Q8_0, its blocks and scales read) once and applied to every x
// row from registers, instead of once per x row as the dot tiles do. Per x row the arithmetic
// is the one-row GEMV's (gemm_gemv_avx512.cc / gemm_gemv_avx2.cc: the same accumulators, the
// same order, the same final sum), so row i of y has the bits m = 1 gives for x row i.
// x rows go in passes of up to kSmallMPass* rows per W row (the accumulators of a pass fill
// the registers); a later pass re-reads the W row from L1.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/gemm/gemm_internal.h"

namespace recur::gemm {

inline constexpr int kSmallMMax = 8;
inline constexpr int kSmallMPassAvx512 = 4;      // 4 rows x 4 zmm accumulators + 4 weight vectors
inline constexpr int kSmallMPassAvx2Widen = 2;   // 2 rows x 4 ymm accumulators + 4 weight vectors (16 ymm)
inline constexpr int kSmallMPassAvx2Q8 = 4;      // 4 rows x 2 ymm accumulators

// One call: rows [r0, r1) of W against x rows 0 .. m - 1. row[i] is the GemvArgs the same ISA's
// m = 1 GEMV would get for x row i (fp32 x, or its Q8_0 form from q8_prepare; y = that row's
// outputs); k, w and w_row_bytes are the same in every row[i].
struct SmallMArgs {
  int64_t m = 0;
  GemvArgs row[kSmallMMax];
};
using SmallMFn = void (*)(const SmallMArgs&, int64_t r0, int64_t r1);
struct SmallMKernels {
  SmallMFn f32 = nullptr;
  SmallMFn f16w = nullptr;
  SmallMFn bf16w = nullptr;
  SmallMFn q8_0q8 = nullptr;  // AVX-512: needs avx512vnni
  // Quantizes x rows row[i].x (k % 32 == 0) into the GEMV's Q8_0 form, in the workspace.
  void (*q8_prepare)(SmallMArgs& a, Workspace& s) = nullptr;
};
// pass(std::integral_constant<int, M>, rows) over x rows [0, m) in passes of kPass (the last
// pass takes what is left), so the kernels are instantiated for M = 1 .. kPass only.
template <int kPass, class Pass>
inline void smallm_passes(int64_t m, const GemvArgs* rows, const Pass& pass) {
  for (int64_t i0 = 0; i0 < m; i0 += kPass) {
    const int64_t left = m - i0;
    if (left == 1) pass(std::integral_constant<int, 1>{}, rows + i0);
    else if constexpr (kPass > 2) {
      if (left == 2) pass(std::integral_constant<int, 2>{}, rows + i0);
      else if (left == 3) pass(std::integral_constant<int, 3>{}, rows + i0);
      else pass(std::integral_constant<int, kPass>{}, rows + i0);
    } else {
      pass(std::integral_constant<int, kPass>{}, rows + i0);
    }
  }
}

extern const SmallMKernels kAvx512SmallM;
extern const SmallMKernels kAvx2SmallM;

}  // namespace recur::gemm
