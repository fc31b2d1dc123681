// The registered attention kernels pass the check probe (reference, partitions over B, each
// other) for every cache dtype C, every variant and every ISA level this machine runs, on odd
// shapes; and the check refutes a variant that mis-scales its output.
#include <gtest/gtest.h>

#include <string>

#include "core/cpu_features.h"
#include "kernels/attention/attention.h"
#include "kernels/registry.h"
#include "probe/check.h"
#include "probe/check_testing.h"

namespace recur::kernels {
namespace {

probe::CheckOptions options() {
  probe::CheckOptions o;
  o.seeds = {1, 2};
  o.partitions = {1, 3};
  o.peaks = probe::unreachable_peaks();
  return o;
}

void expect_all_variants_pass(const char* kernel, const std::string& shape_base) {
  const KernelSpec* spec = KernelRegistry::global().find(kernel);
  ASSERT_NE(spec, nullptr) << kernel;
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    for (int c = 0; c < attention::kNumKvDTypes; ++c) {
      const std::string shape_text = shape_base + ",C" + std::to_string(c);
      auto shape = spec->parse_shape(shape_text);
      ASSERT_TRUE(shape) << shape.error().to_string();
      for (const VariantSpec& v : spec->variants) {
        if (!check_runnable(v)) continue;
        probe::CheckOptions o = options();
        o.vs = &spec->variants.front();
        auto r = probe::check_variant(*spec, v, *shape, o);
        ASSERT_TRUE(r) << r.error().to_string();
        Feedback f = probe::check_feedback(*r, o);
        EXPECT_EQ(f.verdict, Verdict::kConfirmed)
            << kernel << " " << v.name << " " << shape_text << " isa " << isa_name(isa) << "\n" << render_feedback(f);
      }
    }
  }
}

TEST(AttentionRegister, DecodeVariantsPassCheck) {
  expect_all_variants_pass("attention_decode", "B4,HQ6,HKV2,D67,L90,P16");
}

TEST(AttentionRegister, PrefillVariantsPassCheck) {
  expect_all_variants_pass("attention_prefill", "B3,HQ4,HKV2,D40,T37,P8");
}

// A sliding window shorter than most sequences, not a multiple of the page: windows start
// inside pages, and whole pages fall before them.
TEST(AttentionRegister, WindowedDecodeVariantsPassCheck) {
  expect_all_variants_pass("attention_decode", "B3,HQ4,HKV2,D40,L60,P8,W13");
}

TEST(AttentionRegister, WindowedPrefillVariantsPassCheck) {
  expect_all_variants_pass("attention_prefill", "B3,HQ4,HKV2,D24,T30,P8,W7");
}

TEST(AttentionRegister, CheckRefutesAVariantThatMisScalesItsOutput) {
  KernelRegistry reg;
  ASSERT_TRUE(reg.add(*KernelRegistry::global().find("attention_decode")));
  const KernelFn honest = reg.find("attention_decode")->find_variant("scalar")->run;
  // Halves every output: what a kernel that mis-scales V (e.g. a wrong int8 token scale) does.
  ASSERT_TRUE(reg.add_variant("attention_decode", {.name = "bad_scale", .isa = Isa::kScalar, .run = [honest](const KernelCall& c) {
    honest(c);
    float* o = c.outputs[0].ptr<float>();
    for (int64_t i = 0; i < c.outputs[0].numel(); ++i) o[i] *= 0.5f;
  }}));
  const KernelSpec* spec = reg.find("attention_decode");
  probe::CheckOptions o = options();
  auto r = probe::check_variant(*spec, *spec->find_variant("bad_scale"), *spec->parse_shape("B3,HQ2,HKV1,D16,L20,P4,C3"), o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(probe::check_feedback(*r, o).verdict, Verdict::kRefuted);
}

TEST(AttentionRegister, VariantsAreKnobsWithParameters) {
  const KernelSpec* spec = KernelRegistry::global().find("attention_decode");
  ASSERT_NE(spec, nullptr);
  const VariantSpec* v = spec->find_variant("avx512_split4");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->params.at("split_k"), "4");
  EXPECT_EQ(v->isa, Isa::kAvx512);
  const Shape s = *spec->parse_shape("B2,HQ8,HKV2,D128,L1000,P16,C2");
  // fp8: per token and kv head, k and v read in f32 (build), written and read in fp8.
  EXPECT_GT(spec->cost.bytes(s), 2.0 * 500.5 * 2 * 128 * 2 * 6);
  EXPECT_FALSE(spec->parse_shape("B2,HQ7,HKV2"));
  EXPECT_FALSE(spec->parse_shape("C5"));
}

}  // namespace
}  // namespace recur::kernels
