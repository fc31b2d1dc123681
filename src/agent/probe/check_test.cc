// check catches each cheat the issue lists, localizes an injected error to its shard and tile,
// and passes honest variants. Cheating variants live only here, in a test registry.
#include "probe/check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/registry.h"

namespace recur::probe {
namespace {

using kernels::KernelCall;
using kernels::KernelRegistry;
using kernels::KernelSpec;
using kernels::VariantSpec;

MachinePeaks test_peaks() {
  MachinePeaks p;
  p.dram_gbps = 40;
  p.gflops = 200;
  p.cache_gbps = 600;
  p.llc_bytes = 32 << 20;
  return p;
}

CheckOptions fast_options() {
  CheckOptions o;
  o.seeds = {1, 2};
  o.peaks = test_peaks();
  return o;
}

bool any_note_contains(const Feedback& f, std::string_view text) {
  for (const std::string& n : f.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

std::string notes(const Feedback& f) { return render_feedback(f); }

void scalar_gemv(const KernelCall& c) { KernelRegistry::global().find("gemv")->find_variant("scalar")->run(c); }

// A registry with the built-in kernels plus one cheating variant.
struct Fixture {
  KernelRegistry registry;
  const KernelSpec* spec = nullptr;
  Fixture(std::string_view kernel, VariantSpec cheat) {
    EXPECT_TRUE(registry.add(*KernelRegistry::global().find(kernel)));
    EXPECT_TRUE(registry.add_variant(kernel, std::move(cheat)));
    spec = registry.find(kernel);
  }
  const kernels::KernelFn& scalar() const { return spec->find_variant("scalar")->run; }
};

Feedback run_check(const Fixture& fx, std::string_view variant, std::string_view shape, const CheckOptions& o) {
  auto r = check_variant(*fx.spec, *fx.spec->find_variant(variant), *fx.spec->parse_shape(shape), o);
  EXPECT_TRUE(r) << r.error().to_string();
  Feedback f = check_feedback(*r, o);
  EXPECT_TRUE(validate_feedback(f)) << validate_feedback(f).error().to_string();
  return f;
}

TEST(Check, HonestVariantsPassAcrossSeedsDistributionsPartitionsAndEachOther) {
  const KernelRegistry& reg = KernelRegistry::global();
  for (const char* kernel : {"rmsnorm", "gemv"}) {
    const KernelSpec* spec = reg.find(kernel);
    const VariantSpec* scalar = spec->find_variant("scalar");
    for (const VariantSpec& v : spec->variants) {
      if (!kernels::check_runnable(v)) continue;
      CheckOptions o = fast_options();
      o.partitions = {1, 2, 4, 8};
      o.vs = scalar;
      auto r = check_variant(*spec, v, *spec->parse_shape("M64,N1000"), o);
      ASSERT_TRUE(r) << r.error().to_string();
      Feedback f = check_feedback(*r, o);
      EXPECT_EQ(f.verdict, Verdict::kConfirmed) << kernel << " " << v.name << "\n" << notes(f);
      EXPECT_TRUE(any_note_contains(f, "partitions bit-identical")) << notes(f);
      EXPECT_TRUE(any_note_contains(f, "ghost replay: a no-op variant was rejected")) << notes(f);
      // 2 seeds x 4 distributions x (P=1 + 3 partitions x 2 comparisons + 1 vs-variant).
      EXPECT_EQ(r->comparisons.size(), 2u * 4u * (1u + 3u * 2u + 1u));
    }
  }
}

TEST(Check, CatchesPartialWriteWithSentinels) {
  Fixture fx("rmsnorm", {.name = "partial", .run = [](const KernelCall& c) {
                           // Skips the last 8 columns of the last row: a tail loop that was dropped.
                           auto* y = c.outputs[0].ptr<float>();
                           const int64_t m = c.shape["M"], n = c.shape["N"];
                           for (int64_t r = 0; r < m; ++r) {
                             const float* x = c.inputs[0].ptr<float>() + r * n;
                             float ss = 0;
                             for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
                             float s = 1.0f / std::sqrt(ss / float(n) + 1e-6f);
                             int64_t cols = r == m - 1 ? n - 8 : n;
                             for (int64_t i = 0; i < cols; ++i) y[r * n + i] = x[i] * s * c.inputs[1].ptr<float>()[i];
                           }
                         }});
  Feedback f = run_check(fx, "partial", "M16,N512", fast_options());
  EXPECT_EQ(f.verdict, Verdict::kRefuted);
  EXPECT_TRUE(any_note_contains(f, "partial write: 8 of 8192 elements of y still hold the sentinel (first at y[row 15, col 504]"))
      << notes(f);
}

TEST(Check, CatchesInputMutationWithChecksums) {
  Fixture fx("rmsnorm", {.name = "in_place", .run = [](const KernelCall& c) {
                           // Correct output, but scales x in place first (an "optimization" that
                           // saves a buffer and corrupts the caller's activations).
                           const int64_t m = c.shape["M"], n = c.shape["N"];
                           float* x = c.inputs[0].ptr<float>();
                           float* y = c.outputs[0].ptr<float>();
                           const float* w = c.inputs[1].ptr<float>();
                           for (int64_t r = 0; r < m; ++r) {
                             float ss = 0;
                             for (int64_t i = 0; i < n; ++i) ss += x[r * n + i] * x[r * n + i];
                             float s = 1.0f / std::sqrt(ss / float(n) + 1e-6f);
                             for (int64_t i = 0; i < n; ++i) {
                               x[r * n + i] *= s;
                               y[r * n + i] = x[r * n + i] * w[i];
                             }
                           }
                         }});
  Feedback f = run_check(fx, "in_place", "M8,N256", fast_options());
  EXPECT_EQ(f.verdict, Verdict::kRefuted) << notes(f);
  EXPECT_TRUE(any_note_contains(f, "input x was modified by the variant")) << notes(f);
  EXPECT_TRUE(any_note_contains(f, "first change at x[row 0, col 0]")) << notes(f);

  CheckOptions off = fast_options();
  off.checksum_inputs = false;  // without the defence the output alone looks right
  EXPECT_EQ(run_check(fx, "in_place", "M8,N256", off).verdict, Verdict::kConfirmed);
}

TEST(Check, CatchesCachedOutputsWithFreshInputs) {
  // Computes once, then replays the first result: a "memoized" kernel.
  auto cache = std::make_shared<std::vector<float>>();
  Fixture fx("gemv", {.name = "replay", .run = [cache](const KernelCall& c) {
                        auto* y = c.outputs[0].ptr<float>();
                        const size_t n = size_t(c.outputs[0].numel());
                        if (cache->size() != n) {
                          cache->resize(n);
                          scalar_gemv(c);
                          std::memcpy(cache->data(), y, n * sizeof(float));
                        }
                        std::memcpy(y, cache->data(), n * sizeof(float));
                      }});
  CheckOptions o = fast_options();
  o.ghost_replay = false;
  Feedback f = run_check(fx, "replay", "M64,N128", o);
  EXPECT_EQ(f.verdict, Verdict::kRefuted) << notes(f);
  EXPECT_TRUE(any_note_contains(f, "stale output: y matches the previous trial's expected values")) << notes(f);

  cache->clear();
  CheckOptions same = o;
  same.fresh_inputs = false;  // without fresh inputs every trial sees the data it cached
  same.roofline_flag = false;
  EXPECT_EQ(run_check(fx, "replay", "M64,N128", same).verdict, Verdict::kConfirmed);
}

TEST(Check, GhostReplayRejectsANoOpAndFailsTheCheckWhenItCannot) {
  Fixture fx("gemv", {.name = "noop", .run = [](const KernelCall&) {}});
  Feedback f = run_check(fx, "noop", "M64,N128", fast_options());
  EXPECT_EQ(f.verdict, Verdict::kRefuted);
  EXPECT_TRUE(any_note_contains(f, "partial write: 64 of 64 elements")) << notes(f);
  EXPECT_TRUE(any_note_contains(f, "ghost replay: a no-op variant was rejected")) << notes(f);

  // A check that cannot see the kernel: sentinels off and inputs that make every output zero
  // (x is all zeros under this tolerance override... modelled by a kernel whose reference is
  // input-independent). The ghost replay must then fail the check instead of confirming.
  KernelRegistry reg;
  KernelSpec zeros = *KernelRegistry::global().find("gemv");
  zeros.name = "zeros";
  zeros.reference = [](const kernels::Shape&, std::span<const std::vector<double>>, std::span<std::vector<double>> out,
                       std::span<std::vector<double>> mag) {
    std::fill(out[0].begin(), out[0].end(), 0.0);
    std::fill(mag[0].begin(), mag[0].end(), 1.0);
  };
  zeros.variants = {{.name = "zero", .run = [](const KernelCall& c) {
                       std::memset(c.outputs[0].data(), 0, c.outputs[0].span_bytes());
                     }}};
  ASSERT_TRUE(reg.add(zeros));
  CheckOptions o = fast_options();
  o.sentinels = false;
  auto r = check_variant(*reg.find("zeros"), reg.find("zeros")->variants[0], *reg.find("zeros")->parse_shape("M8,N8"), o);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ghost_rejected);
  Feedback g = check_feedback(*r, o);
  EXPECT_EQ(g.verdict, Verdict::kFailed) << notes(g);
  EXPECT_TRUE(any_note_contains(g, "a no-op variant PASSES this check")) << notes(g);
}

TEST(Check, FlagsSpeedupsBeyondTheRoofline) {
  // Correct on the first call for given inputs, then skips the work while the inputs look the
  // same: check's trials pass, but repeated calls are faster than memory can deliver W.
  auto seen = std::make_shared<std::pair<const void*, float>>(nullptr, 0.0f);
  Fixture fx("gemv", {.name = "skip_when_seen", .run = [seen](const KernelCall& c) {
                        const float* w = c.inputs[0].ptr<float>();
                        const float* y = c.outputs[0].ptr<float>();
                        if (seen->first == w && seen->second == w[0] && y[0] == y[0]) return;
                        scalar_gemv(c);
                        *seen = {w, w[0]};
                      }});
  CheckOptions o = fast_options();
  o.seeds = {1};
  Feedback f = run_check(fx, "skip_when_seen", "M1024,N1024", o);
  EXPECT_EQ(f.verdict, Verdict::kRefuted) << notes(f);
  EXPECT_TRUE(any_note_contains(f, "impossibly fast")) << notes(f);
  EXPECT_TRUE(any_note_contains(f, "BEYOND THE ROOFLINE")) << notes(f);

  Feedback honest = run_check(fx, "scalar", "M1024,N1024", o);
  EXPECT_EQ(honest.verdict, Verdict::kConfirmed) << notes(honest);
  EXPECT_FALSE(any_note_contains(honest, "impossibly fast"));
}

TEST(Check, LocalizesAnInjectedErrorToItsShardAndTile) {
  // Correct everywhere except one element computed by shard 2 of 4: local row 5, col 700.
  Fixture fx("rmsnorm", {.name = "bad_shard", .run = [](const KernelCall& c) {
                           const VariantSpec* s = KernelRegistry::global().find("rmsnorm")->find_variant("scalar");
                           s->run(c);
                           if (c.shards == 4 && c.shard == 2) c.outputs[0].ptr<float>()[5 * c.shape["N"] + 700] += 0.5f;
                         }});
  CheckOptions o = fast_options();
  o.partitions = {1, 4};
  o.seeds = {1};
  o.distributions = {Distribution::kNormal};
  auto r = check_variant(*fx.spec, *fx.spec->find_variant("bad_shard"), *fx.spec->parse_shape("M64,N1024"), o);
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->comparisons.size(), 3u);  // P=1 vs reference, P=4 vs reference, P=4 vs unpartitioned
  EXPECT_TRUE(r->comparisons[0].pass);
  for (const Comparison* c : {&r->comparisons[1], &r->comparisons[2]}) {
    EXPECT_FALSE(c->pass);
    EXPECT_EQ(c->stats.out_of_tolerance, 1);
    EXPECT_EQ(c->stats.worst.index, (std::vector<int64_t>{37, 700}));  // shard 2 owns rows [32, 48)
    EXPECT_EQ(c->stats.worst.shard, 2);
    EXPECT_EQ(c->stats.worst.tile, (std::vector<int64_t>{4, 2}));      // tiles are 8 x 256
    EXPECT_EQ(c->where, "y[row 37, col 700] tile (4, 2) shard 2/4");
    ASSERT_EQ(c->shard_table.size(), 4u);
    for (const ShardRow& s : c->shard_table) EXPECT_EQ(s.out_of_tolerance, s.shard == 2 ? 1 : 0);
    EXPECT_EQ(c->shard_table[2].begin, 32);
    EXPECT_EQ(c->shard_table[2].end, 48);
    ASSERT_FALSE(c->worst_tiles.empty());
    EXPECT_EQ(c->worst_tiles[0].tile, (std::vector<int64_t>{4, 2}));
    EXPECT_EQ(c->worst_tiles[0].shard, 2);
    EXPECT_NEAR(c->stats.max_abs, 0.5, 1e-3);
  }
  Feedback f = check_feedback(*r, o);
  EXPECT_EQ(f.verdict, Verdict::kRefuted);
  EXPECT_TRUE(any_note_contains(f, "worst y[row 37, col 700] tile (4, 2) shard 2/4")) << notes(f);
  EXPECT_TRUE(any_note_contains(f, "#2 [32,48) max_abs 0.5")) << notes(f);
}

TEST(Check, RejectsWhatItCannotRun) {
  const KernelSpec* gemv = KernelRegistry::global().find("gemv");
  CheckOptions o = fast_options();
  o.partitions = {2000};
  auto r = check_variant(*gemv, gemv->variants[0], *gemv->parse_shape("M64,N8"), o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("cannot split M=64 into 2000 shards"), std::string::npos);
  ScopedIsaCap cap(Isa::kScalar);
  auto v = check_variant(*gemv, *gemv->find_variant("avx2"), gemv->default_shape(), fast_options());
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace recur::probe
