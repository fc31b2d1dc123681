// Q8_0 activations are ggml's: every quantizer recur has (the scalar quantize_q8_0_rows, the
// AVX2 one of the AVX2 GEMV / small-M / prefill GEMM, the AVX-512 one of the GEMV, small-M,
// prefill GEMMs) gives the bytes and fp16 scales of llama.cpp c392e50's quantize_row_q8_0 on
// crafted blocks (ties, zero, tiny, huge, subnormal amax) and random ones, and the GEMMs that
// consume them (with the int8 values ggml gives for an overflowing 127 / amax) stay within the
// fp32 accumulation bound of the float64 sum over the dequantized operands on every ISA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_reference.h"
#include "kernels/gemm/gemm_test_util.h"

namespace recur::gemm {
namespace {

using testing::encode;
using testing::random_values;

// ggml-cpu-quants.c quantize_row_q8_0, the `__AVX2__ || __AVX__` branch (what llama.cpp's x86
// build quantizes every Q8_0 matmul's activations with), written out per element:
//   d  = maxScalar / 127.f, stored as fp16 (F16C, nearest even)
//   id = maxScalar != 0 ? 127.f / maxScalar : 0
//   q  = packs_epi16(packs_epi32(cvtps_epi32(round_ps(x * id, nearest))))
// cvtps_epi32 gives INT32_MIN for NaN and |v| >= 2^31, which the saturating packs make -128.
struct GgmlBlock {
  int8_t q[kQ8Block];
  uint16_t d;
};

GgmlBlock ggml_quantize_block(const float* x) {
  GgmlBlock out{};
  float max_scalar = 0;
  for (int i = 0; i < kQ8Block; ++i) max_scalar = std::max(max_scalar, std::fabs(x[i]));
  out.d = fp32_to_fp16(max_scalar / 127.f);
  const float id = max_scalar != 0.0f ? 127.f / max_scalar : 0.0f;
  for (int i = 0; i < kQ8Block; ++i) {
    const float v = std::nearbyint(x[i] * id);
    const int32_t i32 = std::isnan(v) || std::fabs(v) >= 2147483648.0f ? std::numeric_limits<int32_t>::min() : int32_t(v);
    out.q[i] = int8_t(std::clamp<int32_t>(i32, -128, 127));
  }
  return out;
}

// Crafted blocks, each 32 floats, then random ones; k = 32 * blocks (an odd count).
std::vector<float> crafted_row() {
  std::vector<std::vector<float>> blocks;
  auto block = [](auto f) {
    std::vector<float> b(kQ8Block);
    for (int i = 0; i < kQ8Block; ++i) b[size_t(i)] = f(i);
    return b;
  };
  // Exact halves at scale 1 (amax 127): round half to even, both signs.
  blocks.push_back(block([](int i) { return i == 0 ? 127.0f : float(i) - 15.5f; }));
  // Products x * (127 / amax) near .5 where 127 / amax is inexact: x / d in exact arithmetic
  // and x * id in fp32 part there (amax 100: id = 1.27f, rounded).
  blocks.push_back(block([](int i) { return i == 0 ? -100.0f : (float(i) + 0.5f) / 1.27f; }));
  blocks.push_back(block([](int) { return 0.0f; }));                                     // zero block
  blocks.push_back(block([](int i) { return i % 2 ? -0.0f : 0.0f; }));                   // signed zeros
  blocks.push_back(block([](int i) { return 1e-5f * float(i - 16) / 16.0f; }));          // d an fp16 subnormal
  blocks.push_back(block([](int i) { return 1e-30f * float(i - 7); }));                  // d underflows to 0
  blocks.push_back(block([](int i) { return i == 3 ? 1e-39f : 0.0f; }));                 // subnormal amax: 127 / amax = inf
  blocks.push_back(block([](int i) { return i == 5 ? -3e-37f : 1e-38f * float(i); }));   // 127 / amax overflows
  blocks.push_back(block([](int i) { return 1e6f * float(i - 11) / 21.0f; }));           // d near the fp16 top
  blocks.push_back(block([](int i) { return 1e7f * float(i - 11) / 21.0f; }));           // d overflows fp16 to inf
  // amax / 127 on fp16 ties: 1 + 2^-11 rounds to 1, 1 + 3 * 2^-11 to 1 + 4 * 2^-11.
  blocks.push_back(block([](int i) { return i == 9 ? 127.0f * (1.0f + 0x1p-11f) : float(i) * 0.7f; }));
  blocks.push_back(block([](int i) { return i == 9 ? -127.0f * (1.0f + 0x3p-11f) : -float(i) * 1.3f; }));
  std::vector<float> row;
  for (const auto& b : blocks) row.insert(row.end(), b.begin(), b.end());
  for (int dist = 0; dist < 3; ++dist) {
    const auto r = random_values(size_t(40 * kQ8Block), uint64_t(11 + dist), dist);
    row.insert(row.end(), r.begin(), r.end());
  }
  row.resize(row.size() + kQ8Block, 0.0f);  // an odd block count: 12 + 120 + 1
  return row;
}

struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> d;
};

Quantized ggml_quantize(const std::vector<float>& x) {
  Quantized g{std::vector<int8_t>(x.size()), std::vector<float>(x.size() / kQ8Block)};
  for (size_t b = 0; b < g.d.size(); ++b) {
    const GgmlBlock blk = ggml_quantize_block(x.data() + b * kQ8Block);
    std::copy(blk.q, blk.q + kQ8Block, g.q.begin() + std::ptrdiff_t(b * kQ8Block));
    g.d[b] = fp16_to_fp32(blk.d);
  }
  return g;
}

void expect_equal(const Quantized& want, const Quantized& got, const char* who) {
  for (size_t b = 0; b < want.d.size(); ++b) {
    // Bits, not ==: inf scales compare, and -0 vs 0 would show.
    uint32_t wb, gb;
    std::memcpy(&wb, &want.d[b], 4);
    std::memcpy(&gb, &got.d[b], 4);
    EXPECT_EQ(wb, gb) << who << ": scale of block " << b << " " << want.d[b] << " vs " << got.d[b];
  }
  for (size_t i = 0; i < want.q.size(); ++i)
    ASSERT_EQ(int(want.q[i]), int(got.q[i])) << who << ": q at " << i << " (block " << i / kQ8Block << ")";
}

TEST(Q8Activations, CraftedBlocksCheckTheReference) {
  const auto x = crafted_row();
  const Quantized g = ggml_quantize(x);
  auto q_at = [&](size_t b, size_t i) { return int(g.q[b * kQ8Block + i]); };
  EXPECT_EQ(g.d[0], 1.0f);
  for (int i = 1; i < kQ8Block; ++i) EXPECT_EQ(q_at(0, size_t(i)), int(std::nearbyint(float(i) - 15.5f))) << i;
  EXPECT_EQ(q_at(0, 15), 0);   // -0.5
  EXPECT_EQ(q_at(0, 17), 2);   // 1.5
  EXPECT_EQ(q_at(0, 18), 2);   // 2.5
  EXPECT_EQ(g.d[2], 0.0f);
  EXPECT_EQ(g.d[4], 0x1p-24f);  // 1e-5 / 127 = 7.9e-8: the smallest fp16 subnormal
  EXPECT_EQ(g.d[5], 0.0f);
  for (size_t i = 0; i < kQ8Block; ++i) EXPECT_EQ(q_at(6, i), -128) << i;  // ggml's bytes for an inf 127 / amax
  EXPECT_EQ(g.d[6], 0.0f);
  EXPECT_TRUE(std::isfinite(g.d[8]));
  EXPECT_TRUE(std::isinf(g.d[9]));
  EXPECT_EQ(g.d[10], 1.0f);
  EXPECT_EQ(g.d[11], 1.0f + 0x1p-9f);
  EXPECT_EQ(q_at(11, 9), -127);
}

TEST(Q8Activations, EveryQuantizerGivesGgmlsBytesAndScales) {
  const auto x = crafted_row();
  const int64_t k = int64_t(x.size());
  const Quantized want = ggml_quantize(x);
  Quantized scalar{std::vector<int8_t>(x.size()), std::vector<float>(want.d.size())};
  quantize_q8_0_rows(x.data(), 1, k, scalar.q.data(), scalar.d.data());
  expect_equal(want, scalar, "scalar");
  if (detected_isa() >= Isa::kAvx2) {
    Quantized avx2 = scalar;
    kAvx2Gemv.q8_quantize(x.data(), k, avx2.q.data(), avx2.d.data());
    expect_equal(want, avx2, "avx2");
  }
  if (detected_isa() >= Isa::kAvx512) {
    const int64_t blocks = k / kQ8Block, pairs = (blocks + 1) / 2;
    std::vector<int8_t> abs(static_cast<size_t>(pairs * 64));
    std::vector<float> scale16(static_cast<size_t>(pairs * 16));
    std::vector<uint64_t> neg(static_cast<size_t>(pairs));
    Quantized avx512 = scalar;
    GemvQ8X out{.abs = abs.data(), .neg = neg.data(), .scale16 = scale16.data(), .d = avx512.d.data()};
    kAvx512Gemv.q8_prepare(x.data(), k, out);
    for (int64_t i = 0; i < k; ++i) {
      // |q| as an unsigned byte (|-128| = 128) and the sign bit.
      const int mag = int(uint8_t(abs[size_t(i)]));
      avx512.q[size_t(i)] = int8_t((neg[size_t(i / 64)] >> (i % 64)) & 1 ? -mag : mag);
      ASSERT_EQ(scale16[size_t(i / 64 * 16 + (i % 64) / 32 * 8)], avx512.d[size_t(i / kQ8Block)]) << i;
    }
    expect_equal(want, avx512, "avx512");
  }
}

// The GEMMs on every path (M = 1 GEMV, 2..8 small-M, > 8 prefill; scalar dot tiles; AVX2;
// AVX-512 VNNI) over rows holding the crafted blocks (except the inf-scale one: ggml's output
// is then inf or NaN) against the float64 sum over ggml's dequantized x (q d) and the weights:
// within fp32 accumulation, (K + 8) 2^-24 sum |x w|, so any two paths within twice that.
TEST(Q8Activations, GemmsOnEveryPathSumGgmlsQuantizedX) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  auto row = crafted_row();
  for (int i = 0; i < kQ8Block; ++i) row[size_t(9 * kQ8Block + i)] = 0.5f;  // no inf scale
  const int64_t k = int64_t(row.size()), n = 21;
  const auto bytes = encode(WeightFormat::kQ8_0, random_values(size_t(n * k), 5, 0), n, k);
  const WeightView view{.format = WeightFormat::kQ8_0, .n = n, .k = k, .data = bytes.data()};
  for (int64_t m : {1, 3, 8, 17}) {
    std::vector<float> x;
    for (int64_t t = 0; t < m; ++t) {
      // Row t: the crafted row scaled by (t + 1) / 4 (scales, ties and tiny blocks move).
      for (float v : row) x.push_back(v * float(t + 1) * 0.25f);
    }
    const Quantized g = ggml_quantize(x);
    std::vector<float> seen(x.size());
    for (size_t i = 0; i < x.size(); ++i) seen[i] = float(g.q[i]) * g.d[i / kQ8Block];
    std::vector<double> ref(size_t(m * n)), mag(ref.size());
    reference_stored(view, seen.data(), m, ref, mag);
    for (Isa isa : runnable_isas()) {
      std::vector<float> y(ref.size());
      {
        ScopedIsaCap cap(isa);
        ASSERT_TRUE(gemm_stored(view, x.data(), m, y.data(), pool->get(), nullptr, Q8Activations::kQ8_0).has_value());
      }
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_LE(std::fabs(y[i] - ref[i]), double(k + 8) * std::ldexp(1.0, -24) * mag[i])
            << isa_name(isa) << " M" << m << " at " << i;
    }
  }
}

}  // namespace
}  // namespace recur::gemm

namespace recur::gemm {
namespace {

// ggml's x86 Q8_0 dot (ggml_vec_dot_q8_0_q8_0's __AVX2__ branch, and llamafile's tinyBLAS_Q0_AVX
// for many tokens) written out per lane: lane j of a block is vpmaddubsw's pairs (|w|, x with w's
// sign) summed by vpmaddwd, the block's d = fp16(d_w) * d_x; lanes accumulate by fma; then
// hsum_float_8: extract the high half, add the low, movehl, movehdup.
float ggml_dot(const std::byte* w_row, const int8_t* xq, const float* xd, int64_t k) {
  float acc[8] = {};
  for (int64_t b = 0; b < k / kQ8Block; ++b) {
    const std::byte* blk = w_row + b * kQ8BlockBytes;
    uint16_t dw;
    std::memcpy(&dw, blk, 2);
    const auto* wq = reinterpret_cast<const int8_t*>(blk + 2);
    const int8_t* x = xq + b * kQ8Block;
    int16_t pairs[16];
    for (int p = 0; p < 16; ++p) {
      int32_t s = 0;
      for (int t = 2 * p; t < 2 * p + 2; ++t) s += std::abs(int32_t(wq[t])) * (wq[t] < 0 ? -int32_t(x[t]) : wq[t] == 0 ? 0 : x[t]);
      pairs[p] = int16_t(std::clamp<int32_t>(s, -32768, 32767));
    }
    const float d = fp16_to_fp32(dw) * xd[b];
    for (int j = 0; j < 8; ++j) acc[j] = std::fma(d, float(int32_t(pairs[2 * j]) + int32_t(pairs[2 * j + 1])), acc[j]);
  }
  float res[4];
  for (int j = 0; j < 4; ++j) res[j] = acc[j + 4] + acc[j];        // _mm_add_ps(high, low)
  const float t0 = res[0] + res[2], t1 = res[1] + res[3];          // + movehl
  return t0 + t1;                                                  // add_ss with movehdup
}

TEST(Q8Activations, TheGgmlOrderGivesGgmlsBitsOnEveryPathAndPool) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  const int64_t k = 32 * 37, n = 45;
  const auto bytes = encode(WeightFormat::kQ8_0, random_values(size_t(n * k), 21, 1), n, k);
  const WeightView view{.format = WeightFormat::kQ8_0, .n = n, .k = k, .data = bytes.data()};
  const size_t row_bytes = size_t(k / kQ8Block) * kQ8BlockBytes;
  for (int64_t m : {1, 2, 9, 20}) {
    const auto x = random_values(size_t(m * k), uint64_t(30 + m), 2);
    std::vector<int8_t> q(x.size());
    std::vector<float> d(x.size() / kQ8Block);
    quantize_q8_0_rows(x.data(), m, k, q.data(), d.data());
    std::vector<float> want(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t r = 0; r < n; ++r)
        want[size_t(i * n + r)] = ggml_dot(bytes.data() + r * row_bytes, q.data() + i * k, d.data() + i * (k / kQ8Block), k);
    std::vector<float> plain(want.size());
    ASSERT_TRUE(gemm_stored(view, x.data(), m, plain.data(), nullptr, nullptr, Q8Activations::kQ8_0).has_value());
    for (Isa isa : runnable_isas())
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool->get()}) {
        std::vector<float> y(want.size());
        {
          ScopedIsaCap cap(isa);
          ASSERT_TRUE(gemm_stored(view, x.data(), m, y.data(), p, nullptr, Q8Activations::kQ8_0Ggml).has_value());
        }
        ASSERT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0) << isa_name(isa) << " M" << m;
      }
    int differ = 0;  // the default order sums differently: the option is not a no-op
    for (size_t i = 0; i < want.size(); ++i) differ += plain[i] != want[i];
    EXPECT_GT(differ, 0) << "M" << m;
  }
  // 16-row groups have no ggml order: refused, naming what to do.
  std::vector<std::byte> r16(bytes.size());
  const int64_t n16 = 32;
  ASSERT_TRUE(repack_q8_0_r16(bytes.data(), n16, k, r16.data()).has_value());
  std::vector<float> x(static_cast<size_t>(k), 1.0f), y(static_cast<size_t>(n16));
  const auto st = gemm_stored({.format = WeightFormat::kQ8_0R16, .n = n16, .k = k, .data = r16.data()}, x.data(), 1,
                              y.data(), nullptr, nullptr, Q8Activations::kQ8_0Ggml);
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().message().find("need Q8_0 rows"), std::string::npos) << st.error().message();
}

}  // namespace
}  // namespace recur::gemm
