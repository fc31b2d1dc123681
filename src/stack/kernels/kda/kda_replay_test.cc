// ReplaySSM against the plain recurrence (float64 reference and fp32 decode): long runs of
// >= 10 x L steps across flushes, speculative verify windows with random acceptance and
// rollback, every ISA path, variant and layout.
#include <memory>
#include <random>

#include <gtest/gtest.h>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/kda/kda.h"
#include "kernels/kda/kda_replay.h"
#include "kernels/kda/kda_test_util.h"

namespace recur::kda {
namespace {

using testing::compare;
using testing::Problem;

constexpr double kTol = 1e-4;  // max |x - ref| / max |ref| over the whole run

TEST(KdaReplay, LongDecodeRunsMatchThePlainRecurrence) {
  auto pool = std::move(*ThreadPool::create({.threads = 2, .pin = false}));
  Workspace ws;
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    for (StateLayout layout : {StateLayout::kKV, StateLayout::kVK}) {
      for (DecodeVariant variant : kAllDecodeVariants) {
        for (int L : {16, 5}) {
          const int steps = 10 * L + 3;
          const Shape shape{.batch = 2, .tokens = steps, .hk = 1, .hv = 2, .k = 36, .v = 44};
          Params params{.gate = GateForm::kSoftplus, .layout = layout, .block_v = 16};
          Problem pr(shape, params, uint64_t(L) + uint64_t(variant));
          auto ref_state = testing::to_double(pr.state);
          std::vector<double> ref_out;
          reference_forward(shape, params, pr.inputs(), ref_state, ref_out);
          auto cache = ReplayCache::create(shape, layout, L);
          ASSERT_TRUE(cache.has_value());
          cache->reset(pr.state.data());
          std::vector<float> out(size_t(shape.batch * shape.hv * shape.v));
          double worst = 0, ref_max = 0;
          for (int t = 0; t < steps; ++t) {
            auto tv = pr.tokens(t, 1);
            ASSERT_TRUE(replay_step(*cache, tv.shape, params, tv.inputs(pr), out.data(), variant, pool.get(), ws));
            for (int64_t b = 0; b < shape.batch; ++b) {
              for (int64_t i = 0; i < shape.hv * shape.v; ++i) {
                double r = ref_out[size_t((b * steps + t) * shape.hv * shape.v + i)];
                worst = std::max(worst, std::fabs(out[size_t(b * shape.hv * shape.v + i)] - r));
                ref_max = std::max(ref_max, std::fabs(r));
              }
            }
          }
          std::string what = fmt::format("{} {} L={} layout {}", isa_name(isa), decode_variant_name(variant), L, int(layout));
          EXPECT_LE(worst, kTol * ref_max) << what;
          // State written once per L steps: (steps - 1) / L flushes per sequence.
          EXPECT_EQ(cache->flushes(), shape.batch * ((steps - 1) / L)) << what;
          std::vector<float> state(pr.state.size());
          cache->materialize(state.data());
          auto es = compare(state, ref_state);
          EXPECT_LE(es.max_abs, kTol * es.ref_max) << what << " state " << es.to_string();
        }
      }
    }
  }
}

TEST(KdaReplay, SpeculativeVerifyAndRollbackMatchTheAcceptedSequence) {
  auto pool = std::move(*ThreadPool::create({.threads = 2, .pin = false}));
  Workspace ws;
  const int L = 8;
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    for (DecodeVariant variant : {DecodeVariant::kVtile, DecodeVariant::kHoisted, DecodeVariant::kHoistedRecip}) {
      // Sequence 0 and 1 get their own acceptance, so cursors differ within a batch.
      const Shape base{.batch = 2, .tokens = 1, .hk = 2, .hv = 4, .k = 32, .v = 40};
      Params params{.gate = GateForm::kSigmoidBounded, .block_v = 16};
      Problem init(base, params, 100);
      auto cache = ReplayCache::create(base, params.layout, L);
      ASSERT_TRUE(cache.has_value());
      cache->reset(init.state.data());
      auto ref_state = testing::to_double(init.state);
      std::mt19937_64 rng(42);
      int accepted_total = 0;
      double worst = 0, ref_max = 0;
      for (int round = 0; accepted_total < 12 * L; ++round) {
        const int T = 1 + int(rng() % L);
        Shape shape = base;
        shape.tokens = T;
        Problem drafts(shape, params, 1000 + uint64_t(round));
        drafts.a_log = init.a_log;
        drafts.dt_bias = init.dt_bias;
        std::vector<float> out(size_t(2 * T * 4 * 40));
        ASSERT_TRUE(replay_step(*cache, shape, params, drafts.inputs(), out.data(), variant, pool.get(), ws));
        // Reference: all T drafts from the accepted state (their outputs), then keep m of them.
        int m[2] = {int(rng() % (T + 1)), int(rng() % (T + 1))};
        auto draft_state = ref_state;
        std::vector<double> ref_out;
        reference_forward(shape, params, drafts.inputs(), draft_state, ref_out);
        for (size_t i = 0; i < out.size(); ++i) {
          worst = std::max(worst, std::fabs(out[i] - ref_out[i]));
          ref_max = std::max(ref_max, std::fabs(ref_out[i]));
        }
        for (int b = 0; b < 2; ++b) {
          if (m[b] > 0) {
            Shape one = base;
            one.batch = 1;
            one.tokens = m[b];
            Problem sub(one, params, 0);
            auto tv = drafts.tokens(0, m[b]);
            const int64_t q_row = 2 * 32, v_row = 4 * 40;
            sub.q.assign(tv.q.begin() + b * m[b] * q_row, tv.q.begin() + (b + 1) * m[b] * q_row);
            sub.k.assign(tv.k.begin() + b * m[b] * q_row, tv.k.begin() + (b + 1) * m[b] * q_row);
            sub.v.assign(tv.v.begin() + b * m[b] * v_row, tv.v.begin() + (b + 1) * m[b] * v_row);
            sub.g.assign(tv.g.begin() + b * m[b] * 4 * 32, tv.g.begin() + (b + 1) * m[b] * 4 * 32);
            sub.b.assign(tv.b.begin() + b * m[b] * 4, tv.b.begin() + (b + 1) * m[b] * 4);
            sub.a_log = init.a_log;
            sub.dt_bias = init.dt_bias;
            std::vector<double> seq_state(ref_state.begin() + b * 4 * 32 * 40, ref_state.begin() + (b + 1) * 4 * 32 * 40);
            std::vector<double> ignored;
            reference_forward(one, params, sub.inputs(), seq_state, ignored);
            std::copy(seq_state.begin(), seq_state.end(), ref_state.begin() + b * 4 * 32 * 40);
          }
          ASSERT_TRUE(cache->rollback(b, T - m[b]));
        }
        accepted_total += std::min(m[0], m[1]);
      }
      EXPECT_LE(worst, kTol * ref_max) << isa_name(isa) << " " << decode_variant_name(variant);
      std::vector<float> state(ref_state.size());
      cache->materialize(state.data());
      auto es = compare(state, ref_state);
      EXPECT_LE(es.max_abs, kTol * es.ref_max) << isa_name(isa) << " state " << es.to_string();
    }
  }
}

TEST(KdaReplay, RejectsWindowsThatCannotFitAndOverlongRollback) {
  Workspace ws;
  const Shape shape{.batch = 1, .tokens = 5, .hk = 1, .hv = 1, .k = 8, .v = 8};
  Params params;
  Problem pr(shape, params, 3);
  auto cache = ReplayCache::create(shape, params.layout, 4);
  ASSERT_TRUE(cache.has_value());
  cache->reset(pr.state.data());
  std::vector<float> out(40);
  EXPECT_FALSE(replay_step(*cache, shape, params, pr.inputs(), out.data(), DecodeVariant::kHoisted, nullptr, ws));
  auto tv = pr.tokens(0, 3);
  ASSERT_TRUE(replay_step(*cache, tv.shape, params, tv.inputs(pr), out.data(), DecodeVariant::kHoisted, nullptr, ws));
  EXPECT_EQ(cache->count(0), 3);
  EXPECT_FALSE(cache->rollback(0, 4));
  EXPECT_TRUE(cache->rollback(0, 3));
  EXPECT_EQ(cache->count(0), 0);
  EXPECT_FALSE(ReplayCache::create(shape, params.layout, 0).has_value());
}

}  // namespace
}  // namespace recur::kda
