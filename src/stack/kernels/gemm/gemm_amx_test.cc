// The AMX GEMM kernels (gemm_amx.h) on the tile emulator, always: Q8_0 x Q8_0 gives the VNNI
// prefill's bits, W8A8 gemm_w8a8_stored's bits, the bf16 family meets its float64 bounds; ragged
// M / N / K, with and without a pool. On the hardware only where the CPU has AMX and
// RECUR_TEST_AMX_HW=1 (docs/gemm.md, "AMX": what an AMX session runs).
#include "kernels/gemm/gemm_amx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_reference.h"
#include "kernels/gemm/gemm_round.h"
#include "kernels/gemm/gemm_test_util.h"

namespace recur::gemm {
namespace {

using testing::encode;
using testing::random_values;

constexpr TileBackend kEmu = TileBackend::kEmulator;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The VNNI prefill's arithmetic (gemm_prefill_q8_avx512.cc), written out: per K block of 1024,
// fma(float(block dot), d_x * d_w, acc) over its 32-blocks in order, the blocks' sums added to y.
std::vector<float> q8_vnni_order(const std::vector<std::byte>& w, int64_t n, int64_t k, const std::vector<float>& x,
                                 int64_t m) {
  const int64_t blocks = k / kQ8Block;
  std::vector<int8_t> xq(size_t(m * k));
  std::vector<float> dx(size_t(m * blocks)), y(size_t(m * n));
  quantize_q8_0_rows(x.data(), m, k, xq.data(), dx.data());
  for (int64_t t = 0; t < m; ++t)
    for (int64_t r = 0; r < n; ++r) {
      float out = 0;
      for (int64_t b0 = 0; b0 < blocks; b0 += 32) {
        float acc = 0;
        for (int64_t b = b0; b < std::min(blocks, b0 + 32); ++b) {
          const std::byte* blk = w.data() + (r * blocks + b) * kQ8BlockBytes;
          uint16_t h;
          std::memcpy(&h, blk, 2);
          int32_t dot = 0;
          for (int i = 0; i < kQ8Block; ++i) dot += int32_t(xq[size_t(t * k + b * 32 + i)]) * int32_t(int8_t(blk[2 + i]));
          acc = std::fma(float(dot), dx[size_t(t * blocks + b)] * fp16_to_fp32(h), acc);
        }
        out = b0 == 0 ? acc : out + acc;
      }
      y[size_t(t * n + r)] = out;
    }
  return y;
}

bool has_vnni_prefill() {
  return active_isa() == Isa::kAvx512 && cpu_features().avx512vnni;
}

struct Shape {
  int64_t m, n, k;
};
// Ragged M (partial token tiles, one and two per pair), N (partial groups, odd group counts),
// K (one block, a K block boundary at 1024 with a tail, several blocks).
constexpr Shape kQ8Shapes[] = {{1, 1, 32},     {9, 13, 96},    {16, 16, 32},   {17, 48, 1056}, {33, 17, 64},
                               {40, 67, 2080}, {64, 32, 1024}, {130, 40, 160}, {48, 5, 3104}};

TEST(AmxQ8, GivesTheVnniPrefillBitsOnTheEmulator) {
  auto pool_owner = ThreadPool::create({.threads = 2, .pin = false});
  ThreadPool& pool = **pool_owner;
  for (const Shape& s : kQ8Shapes) {
    const auto w = encode(WeightFormat::kQ8_0, random_values(size_t(s.n * s.k), 11 + s.n, 0), s.n, s.k);
    const auto x = random_values(size_t(s.m * s.k), 5 + s.m, s.m % 2 == 0 ? 0 : 2);
    auto packed = AmxQ8Weights::repack(w.data(), s.n, s.k);
    ASSERT_TRUE(packed.has_value()) << packed.error().message();
    std::vector<float> y(size_t(s.m * s.n)), y_pool(y.size());
    ASSERT_TRUE(gemm_q8_0_amx(*packed, x.data(), s.m, y.data(), nullptr, kEmu));
    EXPECT_TRUE(same_bits(y, q8_vnni_order(w, s.n, s.k, x, s.m))) << s.m << "x" << s.n << "x" << s.k;
    // x is quantized by the ISA's vectorized quantizer, in parallel over tokens: every one gives
    // the scalar quantize_q8_0_rows' bits, with and without a pool.
    for (Isa isa : runnable_isas()) {
      ScopedIsaCap cap(isa);
      ASSERT_TRUE(gemm_q8_0_amx(*packed, x.data(), s.m, y_pool.data(), &pool, kEmu));
      EXPECT_TRUE(same_bits(y, y_pool)) << isa_name(isa) << " quantizer or the pool changed the bits at " << s.m
                                        << "x" << s.n << "x" << s.k;
    }
    if (has_vnni_prefill() && s.m > 8) {  // gemm_stored's prefill (M > 8) on AVX-512 VNNI itself
      std::vector<float> vnni(y.size());
      const WeightView view{.format = WeightFormat::kQ8_0, .n = s.n, .k = s.k, .data = w.data()};
      ASSERT_TRUE(gemm_stored(view, x.data(), s.m, vnni.data(), &pool, nullptr, Activations(Q8Activations::kQ8_0)));
      EXPECT_TRUE(same_bits(y, vnni)) << "VNNI prefill differs at " << s.m << "x" << s.n << "x" << s.k;
    }
  }
  if (!has_vnni_prefill()) std::printf("[ note ] no AVX-512 VNNI here: compared with its arithmetic written out only\n");
}

// In the 16-row groups' order (one fp32 chain over the whole K) the tiles give gemm_stored's
// bits on kQ8_0R16 weights, on every ISA path: the engine's prefill under engine.weight_layout=r16.
TEST(AmxQ8, GivesTheSixteenRowGroupsBitsInTheirOrder) {
  auto pool_owner = ThreadPool::create({.threads = 2, .pin = false});
  ThreadPool& pool = **pool_owner;
  for (const Shape& s : {Shape{16, 16, 32}, Shape{17, 48, 1056}, Shape{40, 64, 2080}, Shape{33, 32, 3104}}) {
    const auto w = encode(WeightFormat::kQ8_0, random_values(size_t(s.n * s.k), 11 + s.n, 0), s.n, s.k);
    const auto x = random_values(size_t(s.m * s.k), 5 + s.m, 2);
    std::vector<std::byte> grouped(w.size());
    ASSERT_TRUE(repack_q8_0_r16(w.data(), s.n, s.k, grouped.data()));
    auto packed = AmxQ8Weights::repack(w.data(), s.n, s.k);
    ASSERT_TRUE(packed.has_value()) << packed.error().message();
    std::vector<float> y(size_t(s.m * s.n)), rows_order(y.size());
    ASSERT_TRUE(gemm_q8_0_amx(*packed, x.data(), s.m, y.data(), &pool, kEmu, AmxQ8Order::kR16));
    ASSERT_TRUE(gemm_q8_0_amx(*packed, x.data(), s.m, rows_order.data(), &pool, kEmu, AmxQ8Order::kRowPrefill));
    if (s.k > 1024) {
      EXPECT_FALSE(same_bits(y, rows_order)) << "the two orders should differ past K = 1024";
    }
    const WeightView view{.format = WeightFormat::kQ8_0R16, .n = s.n, .k = s.k, .data = grouped.data()};
    for (Isa isa : runnable_isas()) {
      ScopedIsaCap cap(isa);
      std::vector<float> ref(y.size());
      ASSERT_TRUE(gemm_stored(view, x.data(), s.m, ref.data(), &pool, nullptr, Activations(Q8Activations::kQ8_0)));
      EXPECT_TRUE(same_bits(y, ref)) << isa_name(isa) << " " << s.m << "x" << s.n << "x" << s.k;
    }
  }
}

TEST(AmxQ8, RepackRefusesBadShapes) {
  std::vector<std::byte> w(34);
  EXPECT_FALSE(AmxQ8Weights::repack(w.data(), 1, 33).has_value());
  EXPECT_FALSE(AmxQ8Weights::repack(w.data(), 0, 32).has_value());
  EXPECT_FALSE(AmxQ8Weights::repack(nullptr, 1, 32).has_value());
  auto ok = AmxQ8Weights::repack(w.data(), 1, 32);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->bytes(), size_t(512 + 64));  // one group of 16 rows, one block: tile + 16 fp32 scales
  std::vector<float> x(32), y(1);
  EXPECT_FALSE(gemm_q8_0_amx(*ok, x.data(), 0, y.data(), nullptr, kEmu));
}

TEST(AmxW8A8, GivesTheStoredW8A8Bits) {
  auto pool_owner = ThreadPool::create({.threads = 2, .pin = false});
  ThreadPool& pool = **pool_owner;
  for (const Shape& s : {Shape{1, 1, 1}, Shape{9, 13, 63}, Shape{16, 16, 64}, Shape{33, 47, 200}, Shape{40, 67, 1000},
                         Shape{17, 32, 2049}}) {
    const auto wf = random_values(size_t(s.n * s.k), 3 + s.k, 0);
    std::vector<int8_t> q(wf.size());
    std::vector<float> scales(size_t(s.n));
    ASSERT_TRUE(quantize_int8_rows(wf, size_t(s.n), size_t(s.k), q, scales));
    q[0] = -127;  // the extreme the symmetric quantizer allows
    std::vector<int32_t> comp(size_t(s.n));
    w8a8_compensation(q.data(), s.n, s.k, comp.data());
    auto x = random_values(size_t(s.m * s.k), 9 + s.m, 2);
    auto packed = AmxI8Weights::repack(q.data(), scales.data(), s.n, s.k);
    ASSERT_TRUE(packed.has_value());
    std::vector<float> y(size_t(s.m * s.n)), y_pool(y.size());
    ASSERT_TRUE(gemm_w8a8_amx(*packed, x.data(), s.m, y.data(), nullptr, kEmu));
    ASSERT_TRUE(gemm_w8a8_amx(*packed, x.data(), s.m, y_pool.data(), &pool, kEmu));
    EXPECT_TRUE(same_bits(y, y_pool));
    const W8A8View view{.n = s.n, .k = s.k, .q = q.data(), .scales = scales.data(), .comp = comp.data()};
    for (Isa isa : runnable_isas()) {
      ScopedIsaCap cap(isa);
      std::vector<float> ref(y.size());
      ASSERT_TRUE(gemm_w8a8_stored(view, x.data(), s.m, ref.data(), &pool));
      EXPECT_TRUE(same_bits(y, ref)) << isa_name(isa) << " " << s.m << "x" << s.n << "x" << s.k;
    }
  }
}

TEST(AmxW8A8, RefusesNonFiniteActivations) {
  std::vector<int8_t> q(64, 1);
  std::vector<float> scales(1, 1.0f), x(64, 1.0f), y(1);
  auto packed = AmxI8Weights::repack(q.data(), scales.data(), 1, 64);
  ASSERT_TRUE(packed.has_value());
  x[5] = std::nanf("");
  EXPECT_FALSE(gemm_w8a8_amx(*packed, x.data(), 1, y.data(), nullptr, kEmu));
  EXPECT_FALSE(AmxI8Weights::repack(q.data(), scales.data(), 1, 65537).has_value());
}

// The input error per product of each precision (docs/gemm.md, "Precisions").
double input_error(Precision p) {
  return p == Precision::kBf16 ? std::exp2(-7) : p == Precision::kBf16x3 ? 4 * std::exp2(-16) : 8 * std::exp2(-24);
}

// x, w with cancellation: pairs of terms of opposite sign and nearly equal size, so |y| << sum |x w|,
// and values at bf16 rounding ties (1 + 2^-8 (2j + 1)).
std::vector<float> adversarial(size_t count, uint64_t seed) {
  auto v = random_values(count, seed, 2);
  for (size_t i = 0; i + 1 < count; i += 2) v[i + 1] = -v[i] * (1.0f + 0x1p-12f);
  for (size_t i = 0; i < count; i += 7) v[i] = 1.0f + std::ldexp(float(2 * (i % 64) + 1), -8 - int(i % 3));
  return v;
}

struct Bf16Run {
  double max_rel = 0;  // max |y - y64| / sum |x w|
};

// y against the float64 product of the fp32 inputs; fails the test where the bound is broken.
Bf16Run check_bf16(Precision p, const Shape& s, const std::vector<float>& x, const std::vector<float>& w,
                   const AmxBf16Weights& packed, ThreadPool* pool) {
  std::vector<float> y(size_t(s.m * s.n));
  EXPECT_TRUE(gemm_bf16_amx(packed, x.data(), s.m, y.data(), pool, kEmu));
  std::vector<double> ref(y.size()), mag(y.size());
  reference_exact(x, w, s.m, s.n, s.k, ref, mag);
  const double bound = double(s.k + 8) * std::exp2(-24) + input_error(p);
  Bf16Run run;
  for (size_t i = 0; i < y.size(); ++i) {
    const double rel = std::fabs(double(y[i]) - ref[i]) / mag[i];
    run.max_rel = std::max(run.max_rel, rel);
    EXPECT_LE(rel, bound) << precision_name(p) << " " << s.m << "x" << s.n << "x" << s.k << " output " << i;
  }
  return run;
}

TEST(AmxBf16, SplitPrecisionsMeetTheirFloat64Bounds) {
  auto pool_owner = ThreadPool::create({.threads = 2, .pin = false});
  ThreadPool& pool = **pool_owner;
  for (Precision p : {Precision::kBf16, Precision::kBf16x3, Precision::kBf16x6}) {
    double worst[2] = {0, 0};  // random, adversarial
    for (const Shape& s : {Shape{1, 1, 1}, Shape{17, 13, 37}, Shape{33, 40, 300}, Shape{16, 16, 1024}}) {
      for (int data = 0; data < 2; ++data) {
        const auto x = data == 0 ? random_values(size_t(s.m * s.k), 21 + s.k, 2) : adversarial(size_t(s.m * s.k), 4);
        const auto w = data == 0 ? random_values(size_t(s.n * s.k), 22 + s.n, 0) : adversarial(size_t(s.n * s.k), 6);
        auto packed = AmxBf16Weights::pack(w, s.n, s.k, p);
        ASSERT_TRUE(packed.has_value());
        worst[data] = std::max(worst[data], check_bf16(p, s, x, w, *packed, data == 0 ? &pool : nullptr).max_rel);
      }
    }
    std::printf("[ measured ] %s on tiles: max |y - y64| / sum|x w| random %.3g adversarial %.3g\n",
                std::string(precision_name(p)).c_str(), worst[0], worst[1]);
  }
  EXPECT_FALSE(AmxBf16Weights::pack(std::vector<float>(4), 2, 2, Precision::kF32).has_value());
}

// The row-wise split (the one the drivers apply to x too) gives each element's hi / mid / lo as
// gemm_round.h defines them: x6's three parts, x3's two (hi, then bf16 of the residual).
TEST(AmxBf16, PackedPartsAreTheElementwiseSplit) {
  const int64_t n = 16, k = 32;  // one group, one 32-k step: part p at [k / 2][16 rows][2]
  const auto w = random_values(size_t(n * k), 41, 2);
  for (Precision p : {Precision::kBf16, Precision::kBf16x3, Precision::kBf16x6}) {
    auto packed = AmxBf16Weights::pack(w, n, k, p);
    ASSERT_TRUE(packed.has_value());
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) {
        const float v = w[size_t(r * k + c)];
        const uint16_t hi = bf16_round(v), mid = bf16_round(v - bf16_value(hi));
        const uint16_t lo = bf16_round(v - bf16_value(hi) - bf16_value(mid));
        const size_t at = size_t(c / 2 * 32 + r * 2 + c % 2);
        ASSERT_EQ(packed->part(0)[at], hi) << precision_name(p) << " " << r << "," << c;
        if (packed->parts() > 1) {
          ASSERT_EQ(packed->part(1)[at], mid) << precision_name(p);
        }
        if (packed->parts() > 2) {
          ASSERT_EQ(packed->part(2)[at], lo) << precision_name(p);
        }
      }
  }
}

TEST(AmxBf16, Bf16WeightsSplitOnlyTheActivations) {
  const Shape s{20, 19, 77};
  const auto wf = random_values(size_t(s.n * s.k), 31, 0);
  std::vector<uint16_t> wb(wf.size());
  std::vector<float> w_exact(wf.size());
  for (size_t i = 0; i < wf.size(); ++i) wb[i] = fp32_to_bf16(wf[i]), w_exact[i] = bf16_to_fp32(wb[i]);
  const auto x = random_values(size_t(s.m * s.k), 32, 2);
  for (Precision p : {Precision::kBf16, Precision::kBf16x3, Precision::kBf16x6}) {
    auto packed = AmxBf16Weights::pack_bf16(wb.data(), s.n, s.k, p);
    ASSERT_TRUE(packed.has_value());
    EXPECT_EQ(packed->parts(), 1);
    check_bf16(p, s, x, w_exact, *packed, nullptr);
  }
}

TEST(AmxDispatch, HardwarePathIsOptInAndChecked) {
  set_amx_mode(AmxMode::kOff);
  EXPECT_EQ(amx_backend(), TileBackend::kEmulator);
  EXPECT_NE(amx_backend_reason().find("kernel.gemm.amx is not on"), std::string::npos);
  set_amx_mode(AmxMode::kOn);
  if (!amx_support().usable()) {
    EXPECT_EQ(amx_backend(), TileBackend::kEmulator);
    EXPECT_EQ(amx_backend_reason(), amx_support().reason);
    EXPECT_FALSE(amx_self_check());
  }
  set_amx_mode(AmxMode::kOff);
}

// kernel.gemm.amx: off gives no tiles, emulate the emulator on any CPU, on the hardware or a
// refusal that names the knob and the reason (never a silent fall-back to the emulator).
TEST(AmxDispatch, TheKnobPicksTheTilesOrRefusesOn) {
  Config config;
  for (const char* v : {"off", "on", "emulate"}) {
    ASSERT_TRUE(config.set("kernel.gemm.amx", v).has_value());
    auto mode = amx_mode_from_config(config);
    ASSERT_TRUE(mode.has_value()) << mode.error().message();
    EXPECT_EQ(amx_mode_name(*mode), v);
  }
  EXPECT_FALSE(config.set("kernel.gemm.amx", "auto").has_value());
  auto off = amx_tiles_for(AmxMode::kOff);
  ASSERT_TRUE(off.has_value());
  EXPECT_FALSE(off->has_value());
  auto emulate = amx_tiles_for(AmxMode::kEmulate);
  ASSERT_TRUE(emulate.has_value());
  EXPECT_EQ(**emulate, TileBackend::kEmulator);
  auto on = amx_tiles_for(AmxMode::kOn);
  if (amx_support().usable()) {
    if (on.has_value()) EXPECT_EQ(**on, TileBackend::kHardware);
    else EXPECT_NE(on.error().message().find("self-check"), std::string::npos) << on.error().message();
  } else {
    ASSERT_FALSE(on.has_value());
    EXPECT_NE(on.error().message().find("kernel.gemm.amx=on: " + amx_support().reason), std::string::npos)
        << on.error().message();
  }
}

TEST(AmxDispatch, TheEnvironmentOverrideIsCheckedByName) {
  ASSERT_EQ(setenv("RECUR_AMX", "emulate", 1), 0);
  auto mode = amx_mode_from_env();
  ASSERT_TRUE(mode.has_value());
  EXPECT_EQ(*mode, AmxMode::kEmulate);
  ASSERT_EQ(setenv("RECUR_AMX", "yes", 1), 0);
  mode = amx_mode_from_env();
  ASSERT_FALSE(mode.has_value());
  EXPECT_NE(mode.error().message().find("RECUR_AMX='yes'"), std::string::npos) << mode.error().message();
  ASSERT_EQ(unsetenv("RECUR_AMX"), 0);
  mode = amx_mode_from_env();
  ASSERT_TRUE(mode.has_value());
  EXPECT_FALSE(mode->has_value());
}

// Real tiles: only on an AMX CPU and when asked for (RECUR_TEST_AMX_HW=1).
TEST(AmxHardware, KernelsMatchTheEmulator) {
  if (!amx_support().usable()) GTEST_SKIP() << "no AMX hardware path here: " << amx_support().reason;
  const char* env = std::getenv("RECUR_TEST_AMX_HW");
  if (env == nullptr || std::string(env) != "1")
    GTEST_SKIP() << "this CPU has AMX; set RECUR_TEST_AMX_HW=1 to test the hardware path (docs/gemm.md, AMX)";
  ASSERT_TRUE(amx_self_check());
  auto pool_owner = ThreadPool::create({.threads = 2, .pin = false});
  ThreadPool& pool = **pool_owner;
  for (const Shape& s : kQ8Shapes) {
    const auto w = encode(WeightFormat::kQ8_0, random_values(size_t(s.n * s.k), 11 + s.n, 0), s.n, s.k);
    const auto x = random_values(size_t(s.m * s.k), 5 + s.m, 0);
    auto packed = AmxQ8Weights::repack(w.data(), s.n, s.k);
    ASSERT_TRUE(packed.has_value());
    std::vector<float> hw(size_t(s.m * s.n)), emu(hw.size());
    ASSERT_TRUE(gemm_q8_0_amx(*packed, x.data(), s.m, hw.data(), &pool, TileBackend::kHardware));
    ASSERT_TRUE(gemm_q8_0_amx(*packed, x.data(), s.m, emu.data(), nullptr, kEmu));
    EXPECT_TRUE(same_bits(hw, emu)) << s.m << "x" << s.n << "x" << s.k;
    for (Precision p : {Precision::kBf16, Precision::kBf16x3, Precision::kBf16x6}) {
      const auto wf = random_values(size_t(s.n * s.k), 7, 0);
      auto bf = AmxBf16Weights::pack(wf, s.n, s.k, p);
      ASSERT_TRUE(bf.has_value());
      ASSERT_TRUE(gemm_bf16_amx(*bf, x.data(), s.m, hw.data(), &pool, TileBackend::kHardware));
      std::vector<double> ref(hw.size()), mag(hw.size());
      reference_exact(x, wf, s.m, s.n, s.k, ref, mag);
      for (size_t i = 0; i < hw.size(); ++i)
        EXPECT_LE(std::fabs(double(hw[i]) - ref[i]), (double(s.k + 8) * std::exp2(-24) + input_error(p)) * mag[i])
            << precision_name(p) << " output " << i;
    }
  }
}

}  // namespace
}  // namespace recur::gemm
