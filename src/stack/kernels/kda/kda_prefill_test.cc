// kda::prefill: recurrent and chunked (64, 16) against the float64 reference and each other,
// over lengths around the chunk sizes, both layouts, and strong decay.
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

constexpr double kTol = 1e-4;  // max |x - ref| / max |ref| over a whole prefill

TEST(KdaPrefill, EveryVariantMatchesReference) {
  auto pool = std::move(*ThreadPool::create({.threads = 2, .pin = false}));
  Workspace ws;
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    for (int64_t T : {1, 15, 17, 64, 100, 130}) {
      for (StateLayout layout : {StateLayout::kKV, StateLayout::kVK}) {
        const Shape shape{.batch = 2, .tokens = T, .hk = 1, .hv = 2, .k = 40, .v = 24};
        Params params{.gate = T % 2 ? GateForm::kSigmoidBounded : GateForm::kSoftplus,
                      .layout = layout, .block_v = 16};
        for (PrefillVariant variant : {PrefillVariant::kRecurrent, PrefillVariant::kChunked64, PrefillVariant::kChunked16}) {
          Problem pr(shape, params, uint64_t(T));
          auto ref_state = testing::to_double(pr.state);
          std::vector<double> ref_out;
          reference_forward(shape, params, pr.inputs(), ref_state, ref_out);
          std::vector<float> out(ref_out.size());
          ASSERT_TRUE(prefill(shape, params, pr.inputs(), pr.state.data(), out.data(), variant, pool.get(), ws));
          auto eo = compare(out, ref_out), es = compare(pr.state, ref_state);
          std::string what = fmt::format("{} {} T={} layout {}", isa_name(isa), prefill_variant_name(variant), T, int(layout));
          EXPECT_LE(eo.max_abs, kTol * eo.ref_max) << what << " out " << eo.to_string();
          EXPECT_LE(es.max_abs, kTol * es.ref_max) << what << " state " << es.to_string();
        }
      }
    }
  }
}

TEST(KdaPrefill, ChunkedMatchesRecurrentUnderStrongDecay) {
  // g in [-20, 0]: exp(-Gamma) would overflow within a chunk; differences never do.
  Workspace ws;
  const Shape shape{.batch = 1, .tokens = 200, .hk = 2, .hv = 4, .k = 128, .v = 128};
  Params params{.gate = GateForm::kPrecomputed, .block_v = 32};
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    for (uint64_t seed : {1u, 2u}) {
      Problem rec(shape, params, seed, -20.0f), c64(shape, params, seed, -20.0f), c16(shape, params, seed, -20.0f);
      std::vector<float> o_rec(size_t(shape.tokens * shape.hv * shape.v)), o64(o_rec.size()), o16(o_rec.size());
      ASSERT_TRUE(prefill(shape, params, rec.inputs(), rec.state.data(), o_rec.data(), PrefillVariant::kRecurrent, nullptr, ws));
      ASSERT_TRUE(prefill(shape, params, c64.inputs(), c64.state.data(), o64.data(), PrefillVariant::kChunked64, nullptr, ws));
      ASSERT_TRUE(prefill(shape, params, c16.inputs(), c16.state.data(), o16.data(), PrefillVariant::kChunked16, nullptr, ws));
      for (const auto* o : {&o64, &o16}) {
        auto e = compare(*o, o_rec);
        EXPECT_LE(e.max_abs, kTol * e.ref_max) << isa_name(isa) << " " << e.to_string();
        EXPECT_TRUE(std::isfinite(e.max_abs));
      }
      for (const auto* s : {&c64.state, &c16.state}) {
        auto e = compare(*s, rec.state);
        EXPECT_LE(e.max_abs, kTol * e.ref_max) << isa_name(isa) << " state " << e.to_string();
      }
    }
  }
}

TEST(KdaPrefill, OneTokenPrefillEqualsDecode) {
  Workspace ws;
  const Shape shape{.batch = 2, .tokens = 1, .hk = 1, .hv = 3, .k = 32, .v = 32};
  Params params{.block_v = 32};
  Problem a(shape, params, 9), b(shape, params, 9);
  std::vector<float> oa(size_t(2 * 3 * 32)), ob(oa.size());
  ASSERT_TRUE(prefill(shape, params, a.inputs(), a.state.data(), oa.data(), PrefillVariant::kRecurrent, nullptr, ws));
  ASSERT_TRUE(decode(shape, params, b.inputs(), b.state.data(), ob.data(), DecodeVariant::kVtileRecip, nullptr, ws));
  EXPECT_EQ(oa, ob);
  EXPECT_EQ(a.state, b.state);
}

}  // namespace
}  // namespace recur::kda
