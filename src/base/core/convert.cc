// The scalar reference for every conversion in convert.h, the scalar array kernels, the span
// entry points (shape checks, then IsaDispatch) and int8 row quantization.
//
// Everything here works on the integer bits of the float, so no result depends on MXCSR; the
// only float arithmetic is int -> float and multiplies by powers of two that are exact.
#include "core/convert.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/convert_kernels.h"

namespace recur {
namespace {

uint32_t bits_of(float x) { return std::bit_cast<uint32_t>(x); }
float float_of(uint32_t u) { return std::bit_cast<float>(u); }

constexpr uint32_t kAbsMask = 0x7fffffffu;
constexpr uint32_t kInfBits = 0x7f800000u;
constexpr uint32_t kQuietBit = 0x00400000u;

// Rounds a finite, non-negative fp32 (its bits `a`) to nearest-even in a binary format with
// `man` mantissa bits and exponent bias `bias`, returning the magnitude code (exponent field
// above `man` mantissa bits). A code past the format's largest finite one means overflow; the
// caller clamps it. The same steps are vectorized in convert_avx2.cc and convert_avx512.cc.
uint32_t round_magnitude(uint32_t a, int man, int bias) {
  const int drop = 23 - man;
  const uint32_t min_normal = uint32_t(128 - bias) << 23;
  if (a >= min_normal) {
    // Round the low `drop` bits away (ties to even), then rebias the exponent. A carry out of
    // the mantissa correctly bumps the exponent.
    uint32_t r = a + ((1u << (drop - 1)) - 1) + ((a >> drop) & 1);
    return (r >> drop) - (uint32_t(127 - bias) << man);
  }
  // The result is a subnormal (or zero): a multiple of 2^(1 - bias - man). With the full
  // 24-bit significand `mant` and value mant * 2^(e - 150), that multiple is mant >> shift.
  uint32_t exp = a >> 23;
  uint32_t mant = (a & 0x7fffffu) | (exp != 0 ? 0x800000u : 0);
  uint32_t e_eff = exp != 0 ? exp : 1;
  // shift >= 1 because a < min_normal; past 25 every 24-bit mant rounds to 0 anyway.
  uint32_t shift = std::min<uint32_t>(uint32_t(151 - bias - man) - e_eff, 25);
  return (mant + ((1u << (shift - 1)) - 1) + ((mant >> shift) & 1)) >> shift;
}

}  // namespace

// ---- single values ----

uint16_t fp32_to_bf16(float x) {
  uint32_t u = bits_of(x);
  if ((u & kAbsMask) > kInfBits) return uint16_t((u >> 16) | 0x0040);  // quiet, sign kept
  // bf16 is the top half of fp32: round the low half away. Overflow carries into inf.
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

float bf16_to_fp32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  if ((u & kAbsMask) > kInfBits) u |= kQuietBit;
  return float_of(u);
}

uint16_t fp32_to_fp16(float x) {
  uint32_t u = bits_of(x);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & kAbsMask;
  if (a > kInfBits) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  return uint16_t(sign | std::min<uint32_t>(round_magnitude(a, 10, 15), 0x7c00u));
}

float fp16_to_fp32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f)
    return float_of(sign | kInfBits | (man << 13) | (man != 0 ? kQuietBit : 0));
  if (exp == 0) return float_of(sign | bits_of(float(man) * 0x1p-24f));
  return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

uint8_t fp32_to_fp8e4m3(float x) {
  uint32_t u = bits_of(x);
  uint32_t sign = (u >> 24) & 0x80u;
  uint32_t a = u & kAbsMask;
  if (a > kInfBits) return uint8_t(sign | 0x7fu);
  return uint8_t(sign | std::min<uint32_t>(round_magnitude(a, 3, 7), 0x7eu));
}

float fp8e4m3_to_fp32(uint8_t b) {
  uint32_t sign = uint32_t(b & 0x80u) << 24;
  uint32_t mag = b & 0x7fu;
  if (mag == 0x7f) return float_of(sign | kInfBits | kQuietBit);
  if (mag < 8) return float_of(sign | bits_of(float(mag) * 0x1p-9f));
  return float_of(sign | ((mag << 20) + (120u << 23)));
}

uint8_t fp32_to_fp8e5m2(float x, Fp8Overflow overflow) {
  uint32_t u = bits_of(x);
  uint32_t sign = (u >> 24) & 0x80u;
  uint32_t a = u & kAbsMask;
  if (a > kInfBits) return uint8_t(sign | 0x7eu | ((a >> 21) & 1));
  uint32_t limit = overflow == Fp8Overflow::kSaturate ? 0x7bu : 0x7cu;
  return uint8_t(sign | std::min<uint32_t>(round_magnitude(a, 2, 15), limit));
}

// e5m2 is the top byte of an fp16 (same bias, same exponent width).
float fp8e5m2_to_fp32(uint8_t b) { return fp16_to_fp32(uint16_t(b << 8)); }

float round_to_tf32(float x) {
  uint32_t u = bits_of(x);
  if ((u & kAbsMask) > kInfBits) return float_of((u & ~0x1fffu) | kQuietBit);
  return float_of((u + 0xfffu + ((u >> 13) & 1)) & ~0x1fffu);
}

// ---- scalar array kernels ----

namespace convert_kernels {

void fp32_to_bf16_scalar(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = fp32_to_bf16(src[i]);
}
void bf16_to_fp32_scalar(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(src[i]);
}
void fp32_to_fp16_scalar(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}
void fp16_to_fp32_scalar(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}
void fp32_to_fp8e4m3_scalar(const float* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = fp32_to_fp8e4m3(src[i]);
}
void fp8e4m3_to_fp32_scalar(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = fp8e4m3_to_fp32(src[i]);
}
void fp32_to_fp8e5m2_scalar(const float* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = fp32_to_fp8e5m2(src[i], Fp8Overflow::kInfinity);
}
void fp32_to_fp8e5m2_sat_scalar(const float* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = fp32_to_fp8e5m2(src[i], Fp8Overflow::kSaturate);
}
void fp8e5m2_to_fp32_scalar(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = fp8e5m2_to_fp32(src[i]);
}

}  // namespace convert_kernels

// ---- arrays ----

namespace {

template <typename Fn, typename Src, typename Dst>
Status run_kernel(const char* what, const IsaDispatch<Fn>& table, std::span<const Src> src,
                  std::span<Dst> dst) {
  if (src.size() != dst.size())
    return invalid_argument("{}: destination holds {} elements but the source has {}", what,
                            dst.size(), src.size());
  if (!src.empty()) table.get()(src.data(), dst.data(), src.size());
  return ok_status();
}

}  // namespace

namespace ck = convert_kernels;

Status fp32_to_bf16(std::span<const float> src, std::span<uint16_t> dst) {
  return run_kernel("fp32_to_bf16", ck::kFp32ToBf16, src, dst);
}
Status bf16_to_fp32(std::span<const uint16_t> src, std::span<float> dst) {
  return run_kernel("bf16_to_fp32", ck::kBf16ToFp32, src, dst);
}
Status fp32_to_fp16(std::span<const float> src, std::span<uint16_t> dst) {
  return run_kernel("fp32_to_fp16", ck::kFp32ToFp16, src, dst);
}
Status fp16_to_fp32(std::span<const uint16_t> src, std::span<float> dst) {
  return run_kernel("fp16_to_fp32", ck::kFp16ToFp32, src, dst);
}
Status fp32_to_fp8e4m3(std::span<const float> src, std::span<uint8_t> dst) {
  return run_kernel("fp32_to_fp8e4m3", ck::kFp32ToFp8e4m3, src, dst);
}
Status fp8e4m3_to_fp32(std::span<const uint8_t> src, std::span<float> dst) {
  return run_kernel("fp8e4m3_to_fp32", ck::kFp8e4m3ToFp32, src, dst);
}
Status fp32_to_fp8e5m2(std::span<const float> src, std::span<uint8_t> dst,
                       Fp8Overflow overflow) {
  return overflow == Fp8Overflow::kSaturate
             ? run_kernel("fp32_to_fp8e5m2", ck::kFp32ToFp8e5m2Sat, src, dst)
             : run_kernel("fp32_to_fp8e5m2", ck::kFp32ToFp8e5m2, src, dst);
}
Status fp8e5m2_to_fp32(std::span<const uint8_t> src, std::span<float> dst) {
  return run_kernel("fp8e5m2_to_fp32", ck::kFp8e5m2ToFp32, src, dst);
}

// ---- int8 rows ----

namespace {

Status check_int8_shape(const char* what, size_t values, size_t rows, size_t cols,
                        size_t other, const char* other_name, size_t scales) {
  if (cols == 0) return invalid_argument("{}: cols is 0; a row needs at least one column", what);
  size_t total = 0;
  if (__builtin_mul_overflow(rows, cols, &total))
    return invalid_argument("{}: rows {} x cols {} overflows size_t", what, rows, cols);
  if (values != total)
    return invalid_argument("{}: input holds {} elements but rows {} x cols {} = {}", what,
                            values, rows, cols, total);
  if (other != total)
    return invalid_argument("{}: {} holds {} elements but rows {} x cols {} = {}", what,
                            other_name, other, rows, cols, total);
  if (scales != rows)
    return invalid_argument("{}: scales holds {} elements but there are {} rows", what, scales,
                            rows);
  return ok_status();
}

// Round half to even for |v| <= 127, whatever the FPU rounding mode.
double round_half_even(double v) {
  double t = std::trunc(v);
  double frac = std::fabs(v - t);
  if (frac > 0.5 || (frac == 0.5 && std::fmod(t, 2.0) != 0.0)) t += v > 0 ? 1.0 : -1.0;
  return t;
}

}  // namespace

Status quantize_int8_rows(std::span<const float> x, size_t rows, size_t cols,
                          std::span<int8_t> q, std::span<float> scales) {
  RECUR_RETURN_IF_ERROR(check_int8_shape("quantize_int8_rows", x.size(), rows, cols, q.size(),
                                         "q", scales.size()));
  for (size_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * cols;
    float max_abs = 0.0f;
    for (size_t c = 0; c < cols; ++c) {
      if (!std::isfinite(row[c]))
        return invalid_argument("quantize_int8_rows: x[{}, {}] is {}; expected a finite value",
                                r, c, row[c]);
      max_abs = std::max(max_abs, std::fabs(row[c]));
    }
    const float scale = max_abs / 127.0f;
    scales[r] = scale;
    int8_t* out = q.data() + r * cols;
    if (scale == 0.0f) {
      std::fill(out, out + cols, int8_t{0});
      continue;
    }
    // The quotient in double is exact enough to decide every tie of the exact x / scale.
    for (size_t c = 0; c < cols; ++c) {
      double v = std::clamp(double(row[c]) / double(scale), -127.0, 127.0);
      out[c] = int8_t(round_half_even(v));
    }
  }
  return ok_status();
}

Status dequantize_int8_rows(std::span<const int8_t> q, std::span<const float> scales,
                            size_t rows, size_t cols, std::span<float> out) {
  RECUR_RETURN_IF_ERROR(check_int8_shape("dequantize_int8_rows", q.size(), rows, cols,
                                         out.size(), "out", scales.size()));
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c)
      out[r * cols + c] = float(q[r * cols + c]) * scales[r];
  return ok_status();
}

}  // namespace recur
