// Conversions between fp32 and recur's narrow element types: bf16, fp16, fp8 (E4M3FN, E5M2),
// tf32 rounding, and symmetric int8 quantization with one scale per row.
//
// Every conversion rounds to nearest, ties to even. The rules at the edges:
//   bf16, fp16     IEEE: subnormals kept, overflow -> ±inf.
//   fp8 e4m3       OCP E4M3FN: bias 7, max 448, no infinity, NaN = S.1111.111.
//                  Overflow and ±inf saturate to ±448.
//   fp8 e5m2       OCP E5M2: bias 15, max 57344, has infinity. Fp8Overflow chooses IEEE
//                  (overflow -> ±inf) or saturation (overflow and ±inf -> ±57344).
//   NaN            stays NaN with its sign, in both directions. Encoding keeps the top payload
//                  bits and sets the quiet bit (so a NaN never becomes inf); decoding returns a
//                  quiet fp32 NaN with the payload shifted up, as F16C's vcvtph2ps does.
//   ±0             keeps its sign; values that round to zero keep theirs.
//
// The span functions convert arrays through IsaDispatch (AVX-512, AVX2, scalar; see
// core/dispatch.h). Every path returns the same bits as the single-value functions, and none
// depends on MXCSR (rounding mode, FTZ, DAZ). Source and destination must not overlap.
//
// The single-value functions are deliberately out of line: an inline definition called from a
// translation unit compiled with -mavx512f could be emitted with AVX-512 instructions and then
// picked by the linker for baseline callers. Use the span functions for arrays.
//
// Thread-safety: every function is pure; call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/status.h"

namespace recur {

// What fp32 -> fp8 e5m2 does with values beyond ±57344 and with ±inf.
enum class Fp8Overflow : uint8_t {
  kInfinity,  // IEEE: round to nearest, so values >= 61440 (and inf) become ±inf
  kSaturate,  // clamp every finite overflow and ±inf to ±57344 (NaN stays NaN)
};

// ---- single values ----

uint16_t fp32_to_bf16(float x);
float bf16_to_fp32(uint16_t h);

uint16_t fp32_to_fp16(float x);
float fp16_to_fp32(uint16_t h);

uint8_t fp32_to_fp8e4m3(float x);
float fp8e4m3_to_fp32(uint8_t b);

uint8_t fp32_to_fp8e5m2(float x, Fp8Overflow overflow);
float fp8e5m2_to_fp32(uint8_t b);

// x rounded to tf32 precision (a 10-bit mantissa, fp32's 8-bit exponent), returned as fp32 with
// the low 13 mantissa bits zero. Max finite values round up to ±inf; NaN stays (quiet) NaN.
float round_to_tf32(float x);

// ---- arrays (run-time ISA dispatch) ----
// Each converts src.size() elements and fails with kInvalidArgument, writing nothing, when
// dst.size() != src.size().

[[nodiscard]] Status fp32_to_bf16(std::span<const float> src, std::span<uint16_t> dst);
[[nodiscard]] Status bf16_to_fp32(std::span<const uint16_t> src, std::span<float> dst);

[[nodiscard]] Status fp32_to_fp16(std::span<const float> src, std::span<uint16_t> dst);
[[nodiscard]] Status fp16_to_fp32(std::span<const uint16_t> src, std::span<float> dst);

[[nodiscard]] Status fp32_to_fp8e4m3(std::span<const float> src, std::span<uint8_t> dst);
[[nodiscard]] Status fp8e4m3_to_fp32(std::span<const uint8_t> src, std::span<float> dst);

[[nodiscard]] Status fp32_to_fp8e5m2(std::span<const float> src, std::span<uint8_t> dst,
                                     Fp8Overflow overflow);
[[nodiscard]] Status fp8e5m2_to_fp32(std::span<const uint8_t> src, std::span<float> dst);

// ---- int8, symmetric, one scale per row ----

// x is a row-major [rows, cols] fp32 matrix. For each row r:
//   scales[r] = max_c |x[r, c]| / 127                      (fp32 division)
//   q[r, c]   = round_half_even(x[r, c] / scales[r])       (exact quotient), clamped to ±127
// A row whose scale is 0 (all zeros, or so tiny that max/127 underflows) gets q = 0.
// Fails with kInvalidArgument when cols == 0, x.size() != rows * cols, q.size() != x.size() or
// scales.size() != rows, writing nothing; and when x holds inf or NaN, naming the element
// (rows before it are already written).
[[nodiscard]] Status quantize_int8_rows(std::span<const float> x, size_t rows, size_t cols,
                                        std::span<int8_t> q, std::span<float> scales);

// out[r, c] = float(q[r, c]) * scales[r]. Same shape rules as quantize_int8_rows.
[[nodiscard]] Status dequantize_int8_rows(std::span<const int8_t> q,
                                          std::span<const float> scales, size_t rows,
                                          size_t cols, std::span<float> out);

}  // namespace recur
