// ggml's vector exp and the loops built on it (ggml_arith.h): SiLU, sigmoid, softmax.
#include <bit>
#include <cmath>

#include "kernels/ggml_arith/ggml_arith.h"

namespace recur::ggml_arith {

namespace {

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }
uint32_t to_bits(float f) { return std::bit_cast<uint32_t>(f); }

// The shared head of both forms: n = round(x / ln 2) by the 1.5 * 2^23 shift, b = x - n ln 2 in
// two parts, and the polynomial's odd-even split (u = b^2).
struct ExpHead {
  float z, n, b, u;
};
ExpHead exp_head(float x) {
  const float r = 0x1.8p23f;
  ExpHead h;
  h.z = std::fma(x, 0x1.715476p+0f, r);
  h.n = h.z - r;
  h.b = std::fma(-h.n, 0x1.7f7d1cp-20f, std::fma(-h.n, 0x1.62e4p-1f, x));
  h.u = h.b * h.b;
  return h;
}

float expf_avx512(float x) {
  const ExpHead h = exp_head(x);
  // j includes the constant term; scalef(j, n) = j * 2^n, one rounding (subnormal results too).
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, h.b, 0x1.573e2ep-5f), h.u,
                                    std::fma(0x1.555e66p-3f, h.b, 0x1.fffdb6p-2f)),
                           h.u, std::fma(0x1.ffffecp-1f, h.b, 1.0f));
  if (std::fabs(h.n) > 192.0f) return h.n <= 0.0f ? 0.0f : INFINITY;
  if (std::isnan(h.n)) return j;  // scalef's NaN propagation (x NaN)
  return std::ldexp(j, int(h.n));
}

float expf_avx2(float x) {
  const ExpHead h = exp_head(x);
  // 2^n built in the exponent bits of z (its low bits hold n), k = 2^n as a float.
  const uint32_t e = to_bits(h.z) << 23;
  const float k = from_bits(e + to_bits(1.0f));
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, h.b, 0x1.573e2ep-5f), h.u,
                                    std::fma(0x1.555e66p-3f, h.b, 0x1.fffdb6p-2f)),
                           h.u, 0x1.ffffecp-1f * h.b);
  const float an = std::fabs(h.n);
  if (!(an > 126.0f)) return std::fma(j, k, k);
  // Beyond 2^±126 the scale is split in two factors s1 * s2 so neither overflows.
  const uint32_t g = h.n <= 0.0f ? 0x82000000u : 0u;
  const float s1 = from_bits(g + 0x7f000000u);
  const float s2 = from_bits(e - g);
  if (an > 192.0f) return s1 * s1;
  return std::fma(s2, j, s2) * s1;
}

}  // namespace

int lanes(GgmlIsa isa) { return isa == GgmlIsa::kAvx512 ? 16 : 8; }

float v_expf(GgmlIsa isa, float x) { return isa == GgmlIsa::kAvx512 ? expf_avx512(x) : expf_avx2(x); }

void silu_span(GgmlIsa isa, int64_t row_len, int64_t begin, int64_t count, float* y, const float* x) {
  const int64_t vectors_end = row_len - row_len % lanes(isa) - begin;  // this span's first tail column
  for (int64_t i = 0; i < count; ++i)
    y[i] = x[i] / (1.0f + (i < vectors_end ? v_expf(isa, 0.0f - x[i]) : std::exp(-x[i])));
}

void silu_row(GgmlIsa isa, int64_t n, float* y, const float* x) { silu_span(isa, n, 0, n, y, x); }

void sigmoid_row(int64_t n, float* y, const float* x) {
  for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
}

double softmax_exp_row(GgmlIsa isa, int64_t n, float* y, const float* x, float max) {
  const int l = lanes(isa);
  const int64_t whole = n - n % l;
  double sum = 0.0;
  for (int64_t i = 0; i < whole; i += l) {
    for (int j = 0; j < l; ++j) y[i + j] = v_expf(isa, x[i + j] - max);
    sum += double(isa == GgmlIsa::kAvx512 ? reduce_add_16(y + i) : hsum_8(y + i));
  }
  for (int64_t i = whole; i < n; ++i) {
    y[i] = std::exp(x[i] - max);
    sum += double(y[i]);
  }
  return sum;
}

void soft_max_row(GgmlIsa isa, int64_t n, float* y, const float* x, float scale, const float* mask) {
  // ggml scales into a work row, adds the mask (slope 1 without ALiBi: exact), then exps into y.
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = x[i] * scale;
    if (mask != nullptr) y[i] += mask[i];
    max = max > y[i] ? max : y[i];  // ggml's MAX(max, x)
  }
  const double sum = softmax_exp_row(isa, n, y, y, max);
  const float inv = float(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

}  // namespace recur::ggml_arith
