// The hybrid forward pass at each kernel.gemm.precision: the default is f32 bit for bit, and
// against it the split precisions come closer than bf16 does, on F32 weights (packed per
// session) and BF16 weights (read in place).
#include "engine/projection.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>

#include "core/convert.h"

#include "core/thread_pool.h"
#include "engine/model.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"
#include "trace/trace.h"

namespace recur {
namespace {

std::vector<float> logits_after(const Model& model, ThreadPool& pool, const char* precision, int steps) {
  Config knobs;
  if (precision != nullptr) {
    EXPECT_TRUE(knobs.set("kernel.gemm.precision", precision).has_value());
  }
  auto s = model.new_session(pool, steps, knobs);
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
  std::vector<float> out;
  for (int t = 0; t < steps; ++t) {
    auto l = (*s)->step(7 + 13 * t);
    EXPECT_TRUE(l.has_value());
    out.assign(l->begin(), l->end());
  }
  return out;
}

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return diff / scale;
}

TEST(Projection, HybridPrecisionsOrderByAccuracyOnF32AndBf16Weights) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  for (auto dtype : {gguf::TensorType::kF32, gguf::TensorType::kBF16}) {
    auto w = synthetic_model({testing::tiny_hybrid_config(0), dtype, 9});
    ASSERT_TRUE(w.has_value());
    std::vector<std::byte> bytes = w->serialize();
    auto model = model_from_file(std::move(*gguf::parse(bytes, "p.gguf")));
    ASSERT_TRUE(model.has_value()) << model.error().message();
    const auto f32 = logits_after(**model, **pool, "f32", 8);
    EXPECT_EQ(logits_after(**model, **pool, nullptr, 8), f32) << "the default is f32";
    const double bf16 = rel_err(logits_after(**model, **pool, "bf16", 8), f32);
    const double x3 = rel_err(logits_after(**model, **pool, "bf16x3", 8), f32);
    const double x6 = rel_err(logits_after(**model, **pool, "bf16x6", 8), f32);
    EXPECT_GT(bf16, 1e-4) << "bf16 activations do change the logits";
    EXPECT_LT(x3, bf16 / 50) << gguf::tensor_type_name(uint32_t(dtype));
    EXPECT_LT(x6, 1e-5) << gguf::tensor_type_name(uint32_t(dtype));
    EXPECT_GT(x3, 0) << "bf16x3 is not f32";
  }
}

// rows x cols weights of `type` from N(0, 1) values (Q8_0 as the model writer quantizes).
std::vector<std::byte> random_weight_bytes(gguf::TensorType type, int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(size_t(rows * cols));
  for (float& e : v) e = nd(rng);
  if (type == gguf::TensorType::kQ8_0) return quantize_q8_0(v.data(), int64_t(v.size()));
  std::vector<std::byte> out(v.size() * (type == gguf::TensorType::kF32 ? 4 : 2));
  for (size_t i = 0; i < v.size(); ++i) {
    if (type == gguf::TensorType::kF32) {
      std::memcpy(out.data() + 4 * i, &v[i], 4);
    } else {
      const uint16_t h = type == gguf::TensorType::kF16 ? fp32_to_fp16(v[i]) : fp32_to_bf16(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

// matmul over m rows against m matvec calls: within fp32 summation-order error
// (2 (K + 8) 2^-24 sum |x w|; the one-row GEMV, the dot tiles and the prefill GEMM sum in
// different orders); Projection::apply with m rows is matmul, bit for bit, on 1 and 2 threads.
// Every stored format, both Q8_0 activation forms and F16 activations rounded to fp16.
TEST(Matmul, RowsMatchMatvecForEveryFormat) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  const int64_t rows = 75, cols = 320;
  for (auto type : {gguf::TensorType::kF32, gguf::TensorType::kF16, gguf::TensorType::kBF16, gguf::TensorType::kQ8_0}) {
    const auto bytes = random_weight_bytes(type, rows, cols, 5);
    const Weight w{"w", type, rows, cols, bytes.data()};
    std::vector<float> row(cols);
    for (gemm::Activations act : {gemm::Activations(gemm::Q8Activations::kF32), gemm::Activations(gemm::Q8Activations::kQ8_0),
                                  gemm::Activations(gemm::Q8Activations::kF32, gemm::F16Activations::kF16)}) {
      auto proj = Projection::create(w, gemm::Precision::kF32, act);
      ASSERT_TRUE(proj.has_value());
      for (int64_t m : {1, 3, 8, 13, 70}) {
        std::mt19937_64 rng{uint64_t(m)};
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float> x(size_t(m * cols));
        for (float& e : x) e = nd(rng);
        std::vector<float> y(size_t(m * rows)), y1(size_t(m * rows)), yp(size_t(m * rows));
        matmul(w, x.data(), m, y.data(), pool->get(), act);
        matmul(w, x.data(), m, y1.data(), nullptr, act);
        proj->apply(x.data(), m, yp.data(), pool->get());
        EXPECT_EQ(y, y1) << "thread count changed the bits, m=" << m;
        EXPECT_EQ(y, yp) << "Projection::apply is matmul, m=" << m;
        for (int64_t i = 0; i < m; ++i) {
          std::vector<float> want(rows);
          matvec(w, x.data() + i * cols, want.data(), pool->get(), act);
          for (int64_t r = 0; r < rows; ++r) {
            w.dequantize_row(r, row.data());
            double mag = 0;
            for (int64_t c = 0; c < cols; ++c) mag += std::fabs(double(x[i * cols + c]) * row[c]);
            const double got = y[i * rows + r];
            ASSERT_LE(std::fabs(got - want[r]), 2 * double(cols + 8) * std::ldexp(1.0, -24) * mag)
                << gguf::tensor_type_name(uint32_t(type)) << " q8=" << gemm::q8_activations_name(act.q8)
                << " f16=" << gemm::f16_activations_name(act.f16) << " m=" << m
                << " at [" << i << ", " << r << "]";
          }
        }
      }
    }
  }
}

// The registered kernels' variant knobs on the projections (engine_kernels.h ProjectionKernels):
// a named gemv runs the M = 1 products of F32 weights, a named gemm the M > 1 ones, each within
// fp32 summation-order error of the stored kernels and named in its zone; Q8_0 weights keep the
// stored GEMV bit for bit, the zone saying so; and a tiled gemm's zone carries the knobs' tiles.
struct ProjectionRun {
  std::vector<float> logits;
  std::set<std::string> zones;  // "gemv variant=scalar", "gemm variant=f32_tiled kc=32", ...
};

ProjectionRun run_with(const Model& model, ThreadPool& pool, const std::map<std::string, std::string>& set) {
  Config knobs;
  for (const auto& [k, v] : set) EXPECT_TRUE(knobs.set(k, v).has_value()) << k;
  ProjectionRun r;
  trace::reset();
  trace::set_enabled(true);
  auto s = model.new_session(pool, 12, knobs);
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
  if (s) {
    auto l = (*s)->prefill(std::vector<TokenId>{3, 5, 7, 11, 13, 17, 19, 23, 29, 31});  // M = 10 > 8
    EXPECT_TRUE(l.has_value());
    l = (*s)->step(37);
    EXPECT_TRUE(l.has_value());
    if (l) r.logits.assign(l->begin(), l->end());
  }
  trace::set_enabled(false);
  const trace::EventTable t = trace::capture();
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.name(i) != "gemv" && t.name(i) != "gemm") continue;
    std::string z(t.name(i));
    for (const char* key : {"variant", "requested"})
      if (const trace::Arg* a = t.find_arg(i, key)) z += fmt::format(" {}={}", key, t.strings().str(a->s));
    if (const trace::Arg* a = t.find_arg(i, "kc")) z += fmt::format(" kc={}", a->i);
    r.zones.insert(z);
  }
  return r;
}

TEST(Projection, RegisteredGemvAndGemmVariantsRunTheProjectionsAndSaySo) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  for (auto dtype : {gguf::TensorType::kF32, gguf::TensorType::kQ8_0}) {
    auto w = synthetic_model({testing::tiny_llama_config(), dtype, 4});
    ASSERT_TRUE(w.has_value());
    std::vector<std::byte> bytes = w->serialize();
    auto model = model_from_file(std::move(*gguf::parse(bytes, "p.gguf")));
    ASSERT_TRUE(model.has_value()) << model.error().message();
    const ProjectionRun base = run_with(**model, **pool, {});
    EXPECT_TRUE(base.zones.empty()) << "auto keeps the stored kernels: " << *base.zones.begin();
    const ProjectionRun gemv = run_with(**model, **pool, {{"kernel.gemv.variant", "scalar"}});
    if (dtype == gguf::TensorType::kF32) {
      EXPECT_EQ(gemv.zones, (std::set<std::string>{"gemv variant=scalar"}));
      EXPECT_NE(gemv.logits, base.logits) << "the scalar gemv sums in another order";
      EXPECT_LT(rel_err(gemv.logits, base.logits), 1e-5);
    } else {
      EXPECT_EQ(gemv.zones, (std::set<std::string>{"gemv variant=stored requested=scalar"}));
      EXPECT_EQ(gemv.logits, base.logits) << "Q8_0 keeps the stored GEMV";
    }
    const ProjectionRun gemm = run_with(**model, **pool, {{"kernel.gemm.variant", "f32"}});
    EXPECT_EQ(gemm.zones, (std::set<std::string>{"gemm variant=f32"}));
    EXPECT_LT(rel_err(gemm.logits, base.logits), dtype == gguf::TensorType::kF32 ? 1e-5 : 2e-2)
        << "Q8_0's stored kernels meet Q8_0 activations; the packed f32 gemm does not";
    if (active_isa() >= Isa::kAvx512) {
      const ProjectionRun tiled = run_with(**model, **pool, {{"kernel.gemm.variant", "f32_tiled"}, {"kernel.gemm.kc", "32"}});
      EXPECT_EQ(tiled.zones, (std::set<std::string>{"gemm variant=f32_tiled kc=32"}));
      EXPECT_LT(rel_err(tiled.logits, gemm.logits), 1e-5);
    }
  }
}

// kernel.gemm.algo against a named kernel.gemm.variant of another algorithm is refused, naming the knob.
TEST(Projection, AGemmAlgorithmThatContradictsTheVariantIsRefused) {
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  ASSERT_TRUE(pool.has_value());
  auto w = synthetic_model({testing::tiny_llama_config(), gguf::TensorType::kF32, 4});
  ASSERT_TRUE(w.has_value());
  std::vector<std::byte> bytes = w->serialize();
  auto model = model_from_file(std::move(*gguf::parse(bytes, "p.gguf")));
  ASSERT_TRUE(model.has_value()) << model.error().message();
  Config knobs;
  ASSERT_TRUE(knobs.set("kernel.gemm.variant", "f32").has_value());
  ASSERT_TRUE(knobs.set("kernel.gemm.algo", "tiled").has_value());
  auto s = (*model)->new_session(**pool, 4, knobs);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("kernel.gemm.algo"), std::string::npos) << s.error().message();
}

}  // namespace
}  // namespace recur
