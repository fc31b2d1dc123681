// The registered GEMM kernels pass the check probe against float64 on every variant, every ISA
// path this machine runs and several shard counts, on shapes that are not tile multiples; the
// split precisions are far more accurate than their one-term forms; and the packed-weight cache
// never serves weights that changed.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/cpu_features.h"
#include "core/feedback.h"
#include "kernels/registry.h"
#include "probe/check.h"
#include "probe/check_testing.h"

namespace recur::kernels {
namespace {

probe::CheckOptions options() {
  probe::CheckOptions o;
  o.seeds = {1, 2};
  o.partitions = {1, 2, 3};
  o.peaks = probe::unreachable_peaks();
  return o;
}

// The worst relative error (times magnitude) of one variant, asserting it passes check.
double check_passes(const char* kernel, const char* variant, const char* shape_text) {
  const KernelSpec* spec = KernelRegistry::global().find(kernel);
  EXPECT_NE(spec, nullptr) << kernel;
  if (!spec) return NAN;
  auto shape = spec->parse_shape(shape_text);
  EXPECT_TRUE(shape) << shape.error().to_string();
  const VariantSpec* v = spec->find_variant(variant);
  EXPECT_NE(v, nullptr) << variant;
  if (!shape || !v || !check_runnable(*v)) return NAN;
  probe::CheckOptions o = options();
  auto r = probe::check_variant(*spec, *v, *shape, o);
  EXPECT_TRUE(r) << r.error().to_string();
  if (!r) return NAN;
  Feedback f = probe::check_feedback(*r, o);
  EXPECT_EQ(f.verdict, Verdict::kConfirmed) << kernel << " " << variant << " " << shape_text << " isa "
                                            << isa_name(active_isa()) << "\n" << render_feedback(f);
  const Metric* m = f.find_metric("max_rel");
  return m ? m->value : NAN;
}

TEST(GemmRegister, EveryVariantPassesOnEveryIsa) {
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    for (const char* shape : {"M1,N67,K300", "M7,N130,K515", "M13,N64,K64"}) {
      for (const char* v : {"f32", "f32_tiled", "bf16", "bf16x3", "bf16x6", "tf32", "tf32x3"}) check_passes("gemm", v, shape);
      check_passes("gemm_w8a8", "w8a8", shape);
    }
  }
}

// The AMX variants (on the tile emulator here, or the hardware under kernel.gemm.amx=on)
// pass the same check, N split over shards included.
TEST(GemmRegister, AmxVariantsPassCheck) {
  for (const char* shape : {"M1,N67,K300", "M17,N33,K515"}) {
    for (const char* v : {"bf16", "bf16x3", "bf16x6"}) check_passes("gemm_amx", v, shape);
    check_passes("gemm_w8a8_amx", "w8a8", shape);
  }
  for (const char* shape : {"M1,N67,B3", "M17,N33,B33"}) check_passes("gemm_q8_0", "amx", shape);
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    check_passes("gemm_q8_0", "stored", "M17,N33,B33");
  }
}

TEST(GemmRegister, SplitPrecisionsRecoverAccuracy) {
  const char* shape = "M4,N96,K2048";
  const double bf16 = check_passes("gemm", "bf16", shape);
  const double bf16x3 = check_passes("gemm", "bf16x3", shape);
  const double tf32 = check_passes("gemm", "tf32", shape);
  const double tf32x3 = check_passes("gemm", "tf32x3", shape);
  const double f32 = check_passes("gemm", "f32", shape);
  // bf16 keeps 8 mantissa bits, its split ~16; tf32 keeps 11, its split ~22 (close to fp32's 24).
  EXPECT_LT(bf16x3 * 50, bf16);
  EXPECT_LT(tf32x3 * 100, tf32);
  EXPECT_LT(tf32x3, 4 * f32 + 1e-9);
  EXPECT_GT(bf16x3, f32);  // two bf16 terms cannot hold 24 bits: docs/gemm.md
  const double bf16x6 = check_passes("gemm", "bf16x6", shape);
  EXPECT_LT(bf16x6, 2 * f32 + 1e-9);  // three can
}

TEST(GemmRegister, NewWeightsAtTheSameAddressArePackedAgain) {
  const KernelSpec* spec = KernelRegistry::global().find("gemm");
  ASSERT_NE(spec, nullptr);
  auto shape = spec->parse_shape("M2,N5,K70");
  ASSERT_TRUE(shape);
  std::vector<float> x(2 * 70), w(5 * 70), y(2 * 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * float(i % 9) + 0.1f;  // all positive: no sum cancels
  for (const char* name : {"f32", "bf16x3"}) {
    const VariantSpec* v = spec->find_variant(name);
    ASSERT_NE(v, nullptr);
    for (float scale : {1.0f, -2.0f, 0.5f}) {
      for (size_t i = 0; i < w.size(); ++i) w[i] = scale * float(i % 5);
      TensorView in[2] = {TensorView::of(x.data(), {2, 70}), TensorView::of(w.data(), {5, 70})};
      TensorView out[1] = {TensorView::of(y.data(), {2, 5})};
      v->run(KernelCall{*shape, in, out});
      for (int m = 0; m < 2; ++m) {
        for (int n = 0; n < 5; ++n) {
          double want = 0;
          for (int k = 0; k < 70; ++k) want += double(x[m * 70 + k]) * double(w[n * 70 + k]);
          EXPECT_NEAR(y[m * 5 + n], want, 1e-3 * (std::fabs(want) + 1)) << name << " scale " << scale;
        }
      }
    }
  }
}

TEST(GemmRegister, VariantsAreKnobsWithTheirOwnTolerances) {
  const KernelSpec* spec = KernelRegistry::global().find("gemm");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->partitioning->param, "N");
  const VariantSpec* bf16 = spec->find_variant("bf16");
  const VariantSpec* f32 = spec->find_variant("f32");
  ASSERT_TRUE(bf16 && f32);
  EXPECT_GT(bf16->tolerances.at(DType::kF32).rtol, 100 * f32->tolerances.at(DType::kF32).rtol);
  EXPECT_EQ(bf16->params.at("precision"), "bf16");
}

}  // namespace
}  // namespace recur::kernels
