// The registered KDA kernels pass the check probe (reference, partitions over B, each other)
// on every variant and every ISA path this machine runs, on odd shapes; and the registration
// itself (knobs, shapes, costs) is what kda_register.h promises.
#include <algorithm>
#include <cmath>
#include <random>

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
  // F = 0 (just flushed), F + T = the window, and the default F = 8 with a verify window.
  expect_all_variants_pass("kda_replay_decode",
                           {"B3,HK1,HV2,K37,V53,T1,F0", "B3,HK1,HV2,K16,V24,T1,F15", "B3,HK2,HV4,K32,V70,T5"});
}

// bench calls a variant again and again on the same buffers: every call must start from the
// same F buffered steps (the memo restores them), and new contents in the same buffers must
// not be served from the memo.
TEST(KdaRegister, ReplayDecodeRepeatsTheSameStepOnTheSameBuffers) {
  const KernelSpec* spec = KernelRegistry::global().find("kda_replay_decode");
  ASSERT_NE(spec, nullptr);
  auto shape = spec->parse_shape("B2,HK1,HV2,K16,V24,T2,F5");
  ASSERT_TRUE(shape) << shape.error().to_string();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-1, 1);
  auto volume = [&](const TensorSpec& t) {
    int64_t n = 1;
    for (int64_t d : t.dims(*shape)) n *= d;
    return size_t(n);
  };
  std::vector<std::vector<float>> in, out;
  std::vector<TensorView> in_views, out_views;
  for (const TensorSpec& t : spec->inputs) in.emplace_back(volume(t));
  for (const TensorSpec& t : spec->outputs) out.emplace_back(volume(t));
  auto views = [&](std::vector<std::vector<float>>& data, const std::vector<TensorSpec>& specs) {
    std::vector<TensorView> v;
    for (size_t i = 0; i < data.size(); ++i) v.push_back(*TensorView::make(data[i].data(), DType::kF32, specs[i].dims(*shape)));
    return v;
  };
  in_views = views(in, spec->inputs);
  out_views = views(out, spec->outputs);
  auto reference = [&] {
    std::vector<std::vector<double>> d, ref(1), mag(1);
    for (const auto& x : in) d.emplace_back(x.begin(), x.end());
    ref[0].resize(out[0].size());
    mag[0].resize(out[0].size());
    spec->reference(*shape, d, ref, mag);
    return ref[0];
  };
  auto max_err = [&](const std::vector<double>& ref) {
    double err = 0, scale = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      err = std::max(err, std::fabs(out[0][i] - ref[i]));
      scale = std::max(scale, std::fabs(ref[i]));
    }
    return err / scale;
  };
  for (int round = 0; round < 2; ++round) {
    for (auto& x : in) std::generate(x.begin(), x.end(), [&] { return uniform(rng); });  // same buffers
    const std::vector<double> ref = reference();
    for (const VariantSpec& v : spec->variants) {
      std::vector<float> first;
      for (int call = 0; call < 3; ++call) {
        v.run(KernelCall{*shape, in_views, out_views});
        EXPECT_LE(max_err(ref), 1e-4) << v.name << " round " << round << " call " << call;
        if (call == 0) first = out[0];
        else EXPECT_EQ(out[0], first) << v.name << " round " << round << " call " << call;
      }
    }
  }
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
  auto overfull = reg.find("kda_replay_decode")->parse_shape("T9,F8");
  ASSERT_FALSE(overfull);
  EXPECT_NE(overfull.error().message().find("F=8 + T=9 exceed the window of 16"), std::string::npos)
      << overfull.error().to_string();
  EXPECT_EQ(reg.find("kda_replay_decode")->default_shape()["F"], 8);
  const KernelSpec* d = reg.find("kda_decode");
  const Shape s = d->default_shape();
  // State traffic dominates decode: two state reads and two writes of B*HV*K*V floats.
  EXPECT_GT(d->cost.bytes(s), 4.0 * 4 * double(s["B"] * s["HV"] * s["K"] * s["V"]));
  EXPECT_GT(d->cost.flops(s), 7.0 * double(s["B"] * s["HV"] * s["K"] * s["V"]));
}

}  // namespace
}  // namespace recur::kernels
