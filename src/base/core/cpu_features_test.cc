#include "core/cpu_features.h"

#include <gtest/gtest.h>

#include "core/dispatch.h"

namespace recur {
namespace {

int path_scalar() { return 0; }
int path_avx2() { return 1; }
int path_avx512() { return 2; }

TEST(CpuFeatures, DetectedLevelIsConsistentWithFlags) {
  const CpuFeatures& f = cpu_features();
  Isa isa = detected_isa();
  if (isa >= Isa::kAvx2) {
    EXPECT_TRUE(f.avx2 && f.fma && f.os_saves_ymm);
  }
  if (isa == Isa::kAvx512) {
    EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512vl && f.os_saves_zmm);
  }
  EXPECT_FALSE(f.vendor.empty());
  auto levels = runnable_isas();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), Isa::kScalar);
  EXPECT_EQ(levels.back(), isa);
}

TEST(IsaDispatch, PicksBestPathAtOrBelowTheCap) {
  IsaDispatch<int (*)()> full{.scalar = path_scalar, .avx2 = path_avx2, .avx512 = path_avx512};
  for (Isa cap : runnable_isas()) {
    ScopedIsaCap scoped(cap);
    EXPECT_EQ(active_isa(), cap);
    Isa chosen;
    EXPECT_EQ(full.get(&chosen)(), int(cap)) << isa_name(cap);
    EXPECT_EQ(chosen, cap);
  }
  // A missing AVX2 path falls through to scalar, never up to AVX-512.
  IsaDispatch<int (*)()> gap{.scalar = path_scalar, .avx2 = nullptr, .avx512 = path_avx512};
  EXPECT_EQ(gap.for_isa(Isa::kAvx2)(), 0);
  EXPECT_EQ(gap.for_isa(Isa::kAvx512)(), 2);
  EXPECT_EQ(gap.for_isa(Isa::kScalar)(), 0);
}

TEST(IsaDispatch, CapAboveTheCpuIsAnError) {
  if (detected_isa() == Isa::kAvx512) GTEST_SKIP() << "this CPU runs every level";
  auto s = set_isa_cap(Isa::kAvx512);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), ErrorCode::kUnsupported);
}

TEST(IsaDispatch, SetCapRoundTrips) {
  Isa before = active_isa();
  ASSERT_TRUE(set_isa_cap(Isa::kScalar).has_value());
  EXPECT_EQ(active_isa(), Isa::kScalar);
  ASSERT_TRUE(set_isa_cap(before).has_value());
  EXPECT_EQ(active_isa(), before);
  EXPECT_EQ(parse_isa("avx2"), Isa::kAvx2);
  EXPECT_FALSE(parse_isa("sse9").has_value());
}

}  // namespace
}  // namespace recur
