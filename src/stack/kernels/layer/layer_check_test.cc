// Every registered layer kernel passes the check probe (float64 reference on 3 seeds x 4 input
// distributions, partitions where the kernel has them, agreement with its first variant) on
// every variant, at every ISA level this machine runs, on odd shapes (vector tails).
#include <gtest/gtest.h>

#include "core/cpu_features.h"
#include "kernels/registry.h"
#include "probe/check.h"
#include "probe/check_testing.h"

namespace recur::kernels {
namespace {

probe::CheckOptions options(const KernelSpec& spec) {
  probe::CheckOptions o;
  o.seeds = {1, 2, 3};
  if (spec.partitioning) o.partitions = {1, 2, 3};
  o.vs = &spec.variants.front();
  o.peaks = probe::unreachable_peaks();
  return o;
}

void expect_pass(const char* kernel, std::initializer_list<const char*> shapes) {
  const KernelSpec* spec = KernelRegistry::global().find(kernel);
  ASSERT_NE(spec, nullptr) << kernel;
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    for (const char* text : shapes) {
      auto shape = spec->parse_shape(text);
      ASSERT_TRUE(shape) << shape.error().to_string();
      for (const VariantSpec& v : spec->variants) {
        if (!check_runnable(v)) continue;
        const probe::CheckOptions o = options(*spec);
        auto r = probe::check_variant(*spec, v, *shape, o);
        ASSERT_TRUE(r) << r.error().to_string();
        const Feedback f = probe::check_feedback(*r, o);
        EXPECT_EQ(f.verdict, Verdict::kConfirmed)
            << kernel << " " << v.name << " " << text << " cap " << isa_name(isa) << "\n" << render_feedback(f);
      }
    }
  }
}

// rmsnorm and gemv live in recur_kernels (check_test covers them at M64,N1000); here on tails of
// every vector width.
TEST(LayerCheck, RmsNormAndGemvOnOddShapes) {
  expect_pass("rmsnorm", {"M7,N1001", "M3,N33", "M3,N7"});
  expect_pass("gemv", {"M7,N1001", "M33,N17", "M3,N5"});
}
TEST(LayerCheck, RmsNormResidual) { expect_pass("rmsnorm_residual", {"M7,N1000", "M3,N33", "M5,N4096"}); }
TEST(LayerCheck, SwiGlu) { expect_pass("swiglu", {"M3,N1001", "M4,N16"}); }
TEST(LayerCheck, Softmax) { expect_pass("softmax", {"M7,N1000", "M3,N5", "M3,N17"}); }
TEST(LayerCheck, RopeInterleaved) { expect_pass("rope", {"T5,H3,D64,P0,NEOX0", "T3,H2,D22,P1000,NEOX0"}); }
TEST(LayerCheck, RopeHalfSplit) { expect_pass("rope", {"T5,H3,D64,P7,NEOX1", "T3,H2,D38,P100000,NEOX1"}); }
TEST(LayerCheck, RouteTopk) {
  expect_pass("route_topk", {"T9,E64,K8,SIG0,NORM1", "T9,E37,K3,SIG1,NORM0", "T5,E16,K16,SIG1,NORM1",
                             "T4,E8,K1,SIG0,NORM0"});
}
TEST(LayerCheck, GroupedGemm) { expect_pass("grouped_gemm", {"E6,T23,N17,K37", "E3,T9,N8,K64"}); }
TEST(LayerCheck, Embedding) {
  for (const char* k : {"embedding_f32", "embedding_f16", "embedding_bf16"}) expect_pass(k, {"T9,V50,N37"});
  expect_pass("embedding_q8_0", {"T9,V50,N96", "T3,V7,N32"});
}
TEST(LayerCheck, Sample) {
  expect_pass("sample", {"R6,V301,TEMP800,TOPP950,SEED3", "R6,V100,TEMP1000,TOPP1000,SEED9",
                         "R4,V77,TEMP0,TOPP1000,SEED1", "R4,V64,TEMP2500,TOPP300,SEED5"});
}

}  // namespace
}  // namespace recur::kernels
