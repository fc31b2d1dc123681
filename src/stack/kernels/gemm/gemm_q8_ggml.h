// Q8_0 weights against Q8_0 activations in ggml's summation order (Q8Activations::kQ8_0Ggml,
// gemm.h): llama.cpp's bits for every Q8_0 matmul, one token (ggml_vec_dot_q8_0_q8_0) or many
// (llamafile's tinyBLAS_Q0_AVX), which share the arithmetic on x86 (c392e50, AVX2 / AVX-512):
//   per output, eight fp32 lanes; for each 32-weight block b in order,
//     lane j += (d_w,b * d_x,b) * float(sum of the 4 int8 products 4j .. 4j+3)   (one fma)
//   then y = ((l4 + l0) + (l6 + l2)) + ((l5 + l1) + (l7 + l3))  (hsum_float_8's order).
// The integer lane sums are exact (|sum| <= 4 * 127 * 128) and d_w * d_x, a product of two fp16
// values, is exact in fp32, so each output's bits depend only on this order, which the scalar and
// AVX2 paths share. x is quantized per row by quantize_q8_0_rows (ggml's quantizer, byte for byte).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dispatch.h"

namespace recur::gemm {

struct Q8GgmlArgs {
  int64_t m = 0, k = 0;             // rows of x, columns (k % 32 == 0)
  const int8_t* xq = nullptr;       // [m, k] quantized activations
  const float* xd = nullptr;        // [m, k / 32] their block scales (fp16 values)
  const std::byte* w = nullptr;     // Q8_0 rows [n, k]: per block an fp16 scale then 32 int8
  size_t w_row_bytes = 0;
  float* y = nullptr;               // [m, ldy]
  int64_t ldy = 0;
};
// Outputs y[:, n0 .. n1).
using Q8GgmlFn = void (*)(const Q8GgmlArgs& a, int64_t n0, int64_t n1);

void q8_0_ggml_rows_scalar(const Q8GgmlArgs& a, int64_t n0, int64_t n1);
void q8_0_ggml_rows_avx2(const Q8GgmlArgs& a, int64_t n0, int64_t n1);

// AVX-512 machines run the AVX2 path: the order is ggml's 8-lane one whatever the vector width.
inline constexpr IsaDispatch<Q8GgmlFn> kQ8Ggml{.scalar = q8_0_ggml_rows_scalar, .avx2 = q8_0_ggml_rows_avx2};

}  // namespace recur::gemm
