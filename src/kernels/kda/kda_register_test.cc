// The registered KDA kernels pass the check probe (reference, partitions over B, each other)
// on every variant and every ISA path this machine runs, on odd shapes; and the registration
// itself (knobs, shapes, costs) is what kda_register.h promises.
#include <gtest/gtest.h>

#include "core/cpu_features.h"
#include "core/knobs.h"
#include "kernels/registry.h"
#include "probe/check.h"
#include "probe/check_testing.h"

namespace recur::kernels {
namespace {

probe::CheckOptions options() {
  probe::CheckOptions o;
  o.seeds = {1, 2, 3};
  o.partitions = {1, 2, 3};
  o.peaks = probe::unreachable_peaks();
  return o;
}

void expect_all_variants_pass(const char* kernel, std::initializer_list<const char*> shapes) {
  const KernelSpec* spec = KernelRegistry::global().find(kernel);
  ASSERT_NE(spec, nullptr) << kernel;
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    for (const char* shape_text : shapes) {
      auto shape = spec->parse_shape(shape_text);
      ASSERT_TRUE(shape) << shape.error().to_string();
      for (const VariantSpec& v : spec->variants) {
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

TEST(KdaRegister, DecodeVariantsPassCheck) {
  expect_all_variants_pass("kda_decode", {"B3,HK1,HV3,K37,V53", "B4,HK2,HV4,K64,V100"});
}

TEST(KdaRegister, ReplayDecodeVariantsPassCheck) {
  expect_all_variants_pass("kda_replay_decode", {"B3,HK1,HV2,K37,V53,T1", "B3,HK2,HV4,K32,V70,T5"});
}

TEST(KdaRegister, PrefillVariantsPassCheck) {
  expect_all_variants_pass("kda_prefill", {"B3,HK1,HV2,K37,V53,T17", "B3,HK2,HV2,K32,V64,T70"});
}

TEST(KdaRegister, VariantsAreKnobsAndShapesAreChecked) {
  const KernelRegistry& reg = KernelRegistry::global();
  for (const char* name : {"kda_decode", "kda_replay_decode", "kda_prefill"}) {
    const KnobSpec* knob = KnobRegistry::global().find(fmt::format("kernel.{}.variant", name));
    ASSERT_NE(knob, nullptr) << name;
    EXPECT_EQ(knob->choices.size(), reg.find(name)->variants.size() + 1) << name;
  }
  auto bad = reg.find("kda_decode")->parse_shape("B1,HK3,HV4");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("HV=4 is not a multiple of HK=3"), std::string::npos) << bad.error().to_string();
  EXPECT_FALSE(reg.find("kda_replay_decode")->parse_shape("T17"));  // beyond the window
  const KernelSpec* d = reg.find("kda_decode");
  const Shape s = d->default_shape();
  // State traffic dominates decode: two state reads and two writes of B*HV*K*V floats.
  EXPECT_GT(d->cost.bytes(s), 4.0 * 4 * double(s["B"] * s["HV"] * s["K"] * s["V"]));
  EXPECT_GT(d->cost.flops(s), 7.0 * double(s["B"] * s["HV"] * s["K"] * s["V"]));
}

}  // namespace
}  // namespace recur::kernels
