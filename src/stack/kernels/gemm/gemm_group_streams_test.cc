// kernel.gemv.streams: the one-token GEMV of regrouped F16 and Q8_0 weights gives the scalar
// kernel's bits whichever number of groups it reads at once (each lane keeps its order), for
// group counts that leave every remainder, with and without a pool; auto resolves per format.
#include <gtest/gtest.h>

#include <cstring>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_test_util.h"

namespace recur::gemm {
namespace {

TEST(GroupStreams, EveryCountGivesTheScalarBits) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  for (WeightFormat rows : {WeightFormat::kF16, WeightFormat::kQ8_0}) {
    for (int64_t groups : {1, 2, 3, 4, 5, 7, 9}) {
      const int64_t n = 16 * groups, k = 96;
      auto w = testing::regrouped_matrix(rows, n, k, uint64_t(groups));
      const auto x = testing::random_values(size_t(k), uint64_t(groups + 40), 1);
      std::vector<float> want(static_cast<size_t>(n));
      {
        ScopedIsaCap cap(Isa::kScalar);
        ASSERT_TRUE(gemm_stored(w.view, x.data(), 1, want.data(), nullptr, nullptr, {Q8Activations::kQ8_0}).has_value());
      }
      for (Isa isa : runnable_isas())
        for (GroupStreams s : {GroupStreams::kAuto, GroupStreams::kOne, GroupStreams::kTwo, GroupStreams::kFour})
          for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool->get()}) {
            ScopedIsaCap cap(isa);
            std::vector<float> y(static_cast<size_t>(n), -7.0f);
            const Activations act(Q8Activations::kQ8_0, F16Activations::kF32, s);
            ASSERT_TRUE(gemm_stored(w.view, x.data(), 1, y.data(), p, nullptr, act).has_value());
            ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
                << weight_format_name(w.view.format) << " " << isa_name(isa) << " streams "
                << group_streams_name(s) << " groups " << groups << (p ? " pool" : "");
          }
    }
  }
}

TEST(GroupStreams, ExplicitCountsAreThemselvesAndAutoIsOneOfThem) {
  for (WeightFormat f : {WeightFormat::kF16R16, WeightFormat::kQ8_0R16}) {
    EXPECT_EQ(group_streams(GroupStreams::kOne, f), 1);
    EXPECT_EQ(group_streams(GroupStreams::kTwo, f), 2);
    EXPECT_EQ(group_streams(GroupStreams::kFour, f), 4);
    const int a = group_streams(GroupStreams::kAuto, f);
    EXPECT_TRUE(a == 1 || a == 2 || a == 4) << a;
  }
  EXPECT_EQ(group_streams_name(GroupStreams::kAuto), "auto");
}

}  // namespace
}  // namespace recur::gemm
