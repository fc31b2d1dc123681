#include "kernels/registry.h"

#include <gtest/gtest.h>

#include "core/knobs.h"

namespace recur::kernels {
namespace {

const std::vector<ShapeParam> kParams = {{.name = "B", .default_value = 1},
                                         {.name = "HV", .default_value = 32},
                                         {.name = "K", .default_value = 128, .max = 4096}};

TEST(Shape, ParsesLetterDigitItemsAndFillsDefaults) {
  auto s = parse_shape("B8,K64", kParams);
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ((*s)["B"], 8);
  EXPECT_EQ((*s)["HV"], 32);
  EXPECT_EQ((*s)["K"], 64);
  EXPECT_EQ(s->to_string(), "B8,HV32,K64");
  auto eq = parse_shape(" B=2 , HV=4 ", kParams);
  ASSERT_TRUE(eq);
  EXPECT_EQ(eq->to_string(), "B2,HV4,K128");
  auto empty = parse_shape("", kParams);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->to_string(), "B1,HV32,K128");
}

TEST(Shape, ErrorsNameTheItemAndListTheParameters) {
  struct Case {
    const char* text;
    const char* expect;
  };
  for (const Case& c : {Case{"Q8", "unknown parameter 'Q'"}, Case{"B8,B9", "given twice"}, Case{"B", "expected B<positive integer>"},
                        Case{"8", "should start with a parameter name"}, Case{"B8,,K2", "empty item"},
                        Case{"B8,", "trailing"}, Case{"B-3", "expected B<positive integer>"},
                        Case{"B99999999999999999", "expected B<positive integer>"}}) {
    auto s = parse_shape(c.text, kParams);
    ASSERT_FALSE(s) << c.text;
    EXPECT_NE(s.error().message().find(c.expect), std::string::npos) << c.text << ": " << s.error().message();
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
  }
  auto s = parse_shape("Q8", kParams);
  EXPECT_NE(s.error().message().find("B (default 1), HV (default 32), K (default 128)"), std::string::npos)
      << s.error().message();
}

TEST(ShardRange, CoversTheExtentContiguously) {
  for (int64_t extent : {1, 7, 64, 100})
    for (int p = 1; p <= 8; ++p) {
      int64_t next = 0;
      for (int i = 0; i < p; ++i) {
        auto [b, e] = shard_range(extent, p, i);
        EXPECT_EQ(b, next);
        EXPECT_LE(e - b, extent / p + 1);
        next = e;
      }
      EXPECT_EQ(next, extent);
    }
}

TEST(KernelRegistry, BuiltinsAreRegisteredWithVariantKnobs) {
  const KernelRegistry& r = KernelRegistry::global();
  auto rms = r.lookup("rmsnorm");
  ASSERT_TRUE(rms);
  EXPECT_TRUE((*rms)->find_variant("scalar"));
  EXPECT_TRUE((*rms)->partitioning.has_value());
  EXPECT_TRUE(r.find("gemv"));
  const KnobSpec* knob = KnobRegistry::global().find("kernel.rmsnorm.variant");
  ASSERT_NE(knob, nullptr);
  EXPECT_EQ(knob->default_value, "auto");
  EXPECT_TRUE(knob->check("avx2"));
  EXPECT_FALSE(knob->check("avx9"));

  auto missing = r.lookup("rmsnrom");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("gemv, "), std::string::npos) << missing.error().message();
  EXPECT_NE(missing.error().message().find("rmsnorm"), std::string::npos) << missing.error().message();
  auto v = (*rms)->lookup_variant("avx9");
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message().find("scalar, avx2, avx512"), std::string::npos) << v.error().message();
}

TEST(KernelRegistry, ShapeRangesAreChecked) {
  const KernelSpec* rms = KernelRegistry::global().find("rmsnorm");
  ASSERT_NE(rms, nullptr);
  EXPECT_TRUE(rms->parse_shape("M4,N16"));
  auto zero = rms->parse_shape("M0");
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().message().find("outside"), std::string::npos);
  EXPECT_EQ(rms->describe_tensors(*rms->parse_shape("M2,N8")), "x f32[2,8]; w f32[8]; y f32[2,8]");
}

TEST(KernelRegistry, RejectsMalformedSpecs) {
  KernelRegistry r;
  KernelSpec spec = *KernelRegistry::global().find("gemv");
  EXPECT_TRUE(r.add(spec));
  EXPECT_FALSE(r.add(spec));  // duplicate
  KernelSpec bad = spec;
  bad.name = "bad_coords";
  bad.outputs[0].coords = {"row", "col"};
  auto s = r.add(bad);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("coordinate names"), std::string::npos);
  bad = spec;
  bad.name = "no_ref";
  bad.reference = nullptr;
  EXPECT_FALSE(r.add(bad));
  bad = spec;
  bad.name = "bad_partition";
  bad.partitioning = Partitioning{.param = "Z"};
  EXPECT_FALSE(r.add(bad));
  EXPECT_FALSE(r.add_variant("gemv", spec.variants[0]));  // duplicate variant name
  VariantSpec extra = spec.variants[0];
  extra.name = "extra";
  EXPECT_TRUE(r.add_variant("gemv", extra));
  EXPECT_FALSE(r.add_variant("nope", extra));
}

TEST(KernelRegistry, BestVariantRespectsTheIsaCap) {
  const KernelSpec* rms = KernelRegistry::global().find("rmsnorm");
  ScopedIsaCap cap(Isa::kScalar);
  EXPECT_EQ(rms->best_variant()->name, "scalar");
  EXPECT_FALSE(check_runnable(*rms->find_variant("avx2")));
  EXPECT_TRUE(check_runnable(*rms->find_variant("scalar")));
}

}  // namespace
}  // namespace recur::kernels
