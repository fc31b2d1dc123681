// kda::decode against the float64 reference: every ISA path, variant, layout and gate form,
// several seeds, odd shapes (tails, GQA), with and without a thread pool.
#include <memory>

#include <gtest/gtest.h>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/kda/kda.h"
#include "kernels/kda/kda_test_util.h"

namespace recur::kda {
namespace {

using testing::compare;
using testing::Problem;

// Normalized error bounds: max |x - ref| / max |ref|.
constexpr double kStepTol = 2e-5;   // one or a few steps
constexpr double kRunTol = 1e-4;    // long runs

std::unique_ptr<ThreadPool> make_pool(int threads) {
  auto pool = ThreadPool::create({.threads = threads, .pin = false});
  EXPECT_TRUE(pool.has_value());
  return std::move(*pool);
}

struct Case {
  Shape shape;
  int block_v;
};

std::vector<Case> cases() {
  return {
      {{.batch = 2, .tokens = 1, .hk = 2, .hv = 4, .k = 128, .v = 128}, 32},
      {{.batch = 3, .tokens = 1, .hk = 1, .hv = 3, .k = 37, .v = 53}, 16},
      {{.batch = 1, .tokens = 1, .hk = 2, .hv = 2, .k = 5, .v = 7}, 3},
      {{.batch = 2, .tokens = 1, .hk = 1, .hv = 2, .k = 64, .v = 100}, 64},
  };
}

TEST(KdaDecode, MatchesReferenceOnEveryPath) {
  auto pool = make_pool(2);
  Workspace ws;
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    for (const Case& cs : cases()) {
      for (GateForm gate : {GateForm::kPrecomputed, GateForm::kSoftplus, GateForm::kSigmoidBounded}) {
        for (StateLayout layout : {StateLayout::kKV, StateLayout::kVK}) {
          for (DecodeVariant variant : kAllDecodeVariants) {
            for (uint64_t seed : {1u, 2u, 3u}) {
              Params params{.gate = gate, .layout = layout, .block_v = cs.block_v};
              Problem pr(cs.shape, params, seed);
              auto ref_state = testing::to_double(pr.state);
              std::vector<double> ref_out;
              reference_forward(pr.shape, params, pr.inputs(), ref_state, ref_out);
              std::vector<float> out(ref_out.size());
              ASSERT_TRUE(decode(pr.shape, params, pr.inputs(), pr.state.data(), out.data(), variant,
                                 seed == 2 ? nullptr : pool.get(), ws));
              auto eo = compare(out, ref_out);
              auto es = compare(pr.state, ref_state);
              std::string what = fmt::format("{} {} {} {} K={} V={} seed {}", isa_name(isa),
                                             decode_variant_name(variant), gate_form_name(gate),
                                             layout == StateLayout::kKV ? "KV" : "VK", cs.shape.k,
                                             cs.shape.v, seed);
              EXPECT_LE(eo.max_abs, kStepTol * eo.ref_max) << what << " out " << eo.to_string();
              EXPECT_LE(es.max_abs, kStepTol * es.ref_max) << what << " state " << es.to_string();
            }
          }
        }
      }
    }
  }
}

TEST(KdaDecode, ManyStepsStayOnTheReference) {
  auto pool = make_pool(2);
  Workspace ws;
  const Shape shape{.batch = 2, .tokens = 64, .hk = 1, .hv = 2, .k = 48, .v = 40};
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    Params params{.gate = GateForm::kSoftplus, .block_v = 16};
    Problem pr(shape, params, 7);
    auto ref_state = testing::to_double(pr.state);
    std::vector<double> ref_out;
    reference_forward(shape, params, pr.inputs(), ref_state, ref_out);
    std::vector<float> out(size_t(shape.batch * shape.hv * shape.v));
    double worst = 0, ref_max = 0;
    for (int64_t t = 0; t < shape.tokens; ++t) {
      auto tv = pr.tokens(t, 1);
      ASSERT_TRUE(decode(tv.shape, params, tv.inputs(pr), pr.state.data(), out.data(),
                         DecodeVariant::kHoisted, pool.get(), ws));
      for (int64_t b = 0; b < shape.batch; ++b) {
        for (int64_t i = 0; i < shape.hv * shape.v; ++i) {
          double r = ref_out[size_t((b * shape.tokens + t) * shape.hv * shape.v + i)];
          worst = std::max(worst, std::fabs(out[size_t(b * shape.hv * shape.v + i)] - r));
          ref_max = std::max(ref_max, std::fabs(r));
        }
      }
    }
    EXPECT_LE(worst, kRunTol * ref_max) << isa_name(isa);
    auto es = compare(pr.state, ref_state);
    EXPECT_LE(es.max_abs, kRunTol * es.ref_max) << isa_name(isa) << " " << es.to_string();
  }
}

TEST(KdaDecode, ResultsDoNotDependOnThreadCount) {
  Workspace ws;
  const Shape shape{.batch = 3, .tokens = 1, .hk = 1, .hv = 4, .k = 64, .v = 64};
  Params params{.block_v = 16};
  Problem a(shape, params, 5), b(shape, params, 5);
  std::vector<float> oa(size_t(3 * 4 * 64)), ob(oa.size());
  auto pool = make_pool(2);
  ASSERT_TRUE(decode(shape, params, a.inputs(), a.state.data(), oa.data(), DecodeVariant::kHoisted, nullptr, ws));
  ASSERT_TRUE(decode(shape, params, b.inputs(), b.state.data(), ob.data(), DecodeVariant::kHoisted, pool.get(), ws));
  EXPECT_EQ(oa, ob);
  EXPECT_EQ(a.state, b.state);
}

TEST(KdaDecode, RejectsBadShapes) {
  Workspace ws;
  Params params;
  Problem pr({.batch = 1, .tokens = 1, .hk = 3, .hv = 4, .k = 8, .v = 8}, params, 1);
  std::vector<float> out(32);
  auto st = decode(pr.shape, params, pr.inputs(), pr.state.data(), out.data(), DecodeVariant::kVtile, nullptr, ws);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("HV=4"), std::string::npos);
  Problem two({.batch = 1, .tokens = 2, .hk = 1, .hv = 1, .k = 8, .v = 8}, params, 1);
  EXPECT_FALSE(decode(two.shape, params, two.inputs(), two.state.data(), out.data(), DecodeVariant::kVtile, nullptr, ws));
  Params no_alog;
  Inputs in = two.inputs();
  in.a_log = nullptr;
  EXPECT_FALSE(validate(two.shape, no_alog, in));
}

TEST(KdaDecode, VariantNamesRoundTrip) {
  for (DecodeVariant v : kAllDecodeVariants) {
    EXPECT_EQ(parse_decode_variant(decode_variant_name(v)), v);
  }
  for (auto v : {PrefillVariant::kRecurrent, PrefillVariant::kChunked64, PrefillVariant::kChunked16}) {
    EXPECT_EQ(parse_prefill_variant(prefill_variant_name(v)), v);
  }
  EXPECT_FALSE(parse_decode_variant("vtile2").has_value());
}

}  // namespace
}  // namespace recur::kda
