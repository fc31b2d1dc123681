// Shared helpers of the GEMM tests: random matrices and error measures against a reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/convert.h"
#include "kernels/gemm/gemm.h"

namespace recur::gemm::testing {

// n values: dist 0 = normal(0, 1), 1 = uniform(-1, 1) + 0.5 (a non-zero mean, so sums grow),
// 2 = normal with magnitudes spread over 2^-8 .. 2^8.
inline std::vector<float> random_values(size_t n, uint64_t seed, int dist = 0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  std::uniform_real_distribution<float> ed(-8.0f, 8.0f);
  std::vector<float> v(n);
  for (auto& e : v) {
    if (dist == 0) e = nd(rng);
    else if (dist == 1) e = ud(rng) + 0.5f;
    else e = nd(rng) * std::exp2(ed(rng));
  }
  return v;
}

// w [n, k] in format f, from fp32 values (Q8_0 quantized per block of 32 as llama.cpp does:
// d = max |w| / 127, q = round(w / d)).
inline std::vector<std::byte> encode(WeightFormat f, const std::vector<float>& w, int64_t n, int64_t k) {
  std::vector<std::byte> out(row_bytes(f, k) * size_t(n));
  for (int64_t r = 0; r < n; ++r) {
    std::byte* row = out.data() + size_t(r) * row_bytes(f, k);
    const float* src = w.data() + r * k;
    for (int64_t c = 0; c < k; ++c) {
      if (f == WeightFormat::kF32) std::memcpy(row + 4 * c, &src[c], 4);
      if (f == WeightFormat::kF16 || f == WeightFormat::kBf16) {
        uint16_t h = f == WeightFormat::kF16 ? fp32_to_fp16(src[c]) : fp32_to_bf16(src[c]);
        std::memcpy(row + 2 * c, &h, 2);
      }
    }
    if (f == WeightFormat::kQ8_0) {
      for (int64_t b = 0; b < k / kQ8Block; ++b) {
        float amax = 0;
        for (int i = 0; i < kQ8Block; ++i) amax = std::max(amax, std::fabs(src[b * kQ8Block + i]));
        const float d = amax / 127;
        const uint16_t d16 = fp32_to_fp16(d);
        std::byte* blk = row + b * kQ8BlockBytes;
        std::memcpy(blk, &d16, 2);
        for (int i = 0; i < kQ8Block; ++i) {
          const float q = d > 0 ? std::nearbyint(src[b * kQ8Block + i] / d) : 0.0f;
          blk[2 + i] = std::byte(uint8_t(int8_t(std::clamp(q, -127.0f, 127.0f))));
        }
      }
    }
  }
  return out;
}

// A random [n, k] matrix in row form (kQ8_0 or kF16) and regrouped (kQ8_0R16 / kF16R16),
// with view over the regrouped bytes.
struct RegroupedMatrix {
  std::vector<std::byte> rows, r16;
  WeightView view;
};
inline RegroupedMatrix regrouped_matrix(WeightFormat rows_format, int64_t n, int64_t k, uint64_t seed) {
  const bool q8 = rows_format == WeightFormat::kQ8_0;
  RegroupedMatrix m;
  m.rows = encode(rows_format, random_values(size_t(n * k), seed, 0), n, k);
  m.r16.resize(m.rows.size());
  const Status st = q8 ? repack_q8_0_r16(m.rows.data(), n, k, m.r16.data())
                       : repack_f16_r16(m.rows.data(), n, k, m.r16.data());
  if (!st) std::abort();  // the shapes are the tests' own
  m.view = {.format = q8 ? WeightFormat::kQ8_0R16 : WeightFormat::kF16R16, .n = n, .k = k, .data = m.r16.data()};
  return m;
}

struct ErrorStats {
  double max_rel = 0;  // max |y - ref| / mag
  double rms_rel = 0;  // sqrt(mean((|y - ref| / mag)^2))
  size_t worst = 0;    // index of the max
};

inline ErrorStats error_stats(std::span<const float> y, std::span<const double> ref, std::span<const double> mag) {
  ErrorStats s;
  double sq = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double e = mag[i] > 0 ? std::fabs(double(y[i]) - ref[i]) / mag[i] : std::fabs(double(y[i]) - ref[i]);
    sq += e * e;
    if (e > s.max_rel) {
      s.max_rel = e;
      s.worst = i;
    }
  }
  s.rms_rel = y.empty() ? 0 : std::sqrt(sq / double(y.size()));
  return s;
}

}  // namespace recur::gemm::testing
