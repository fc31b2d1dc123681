// MLA attention (mla.h): every registered variant the machine runs (blocked at each ISA,
// absorbed, expand) passes the check probe against the unabsorbed float64 reference for every
// latent-cache dtype, decode and prefill; the blocked prefill equals its decode and does not
// depend on the pool; auto picks the blocked path of the best ISA; a variant that forgets the
// absorption's transpose is refuted; the YaRN tables and the softmax scale follow
// DeepSeek-V2's definitions; a cache of the wrong shape is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention/attention_test_util.h"
#include "kernels/layer/layer.h"
#include "kernels/mla/mla.h"
#include "core/thread_pool.h"
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

// Every variant this machine runs (the blocked ones at each ISA up to the machine's; the rest
// are skipped, and say so), every cache dtype.
void expect_variants_pass(const char* kernel, const std::string& shape_base) {
  const KernelSpec* spec = KernelRegistry::global().find(kernel);
  ASSERT_NE(spec, nullptr) << kernel;
  for (const VariantSpec& v : spec->variants) {
    if (!check_runnable(v)) {
      std::printf("[  SKIP    ] %s %s: this machine runs up to %s\n", kernel, v.name.c_str(),
                  std::string(isa_name(active_isa())).c_str());
      continue;
    }
    for (int c = 0; c < attention::kNumKvDTypes; ++c) {
      const std::string text = shape_base + ",C" + std::to_string(c);
      auto shape = spec->parse_shape(text);
      ASSERT_TRUE(shape) << shape.error().to_string();
      probe::CheckOptions o = options();
      o.vs = spec->find_variant("absorbed");
      auto r = probe::check_variant(*spec, v, *shape, o);
      ASSERT_TRUE(r) << r.error().to_string();
      Feedback f = probe::check_feedback(*r, o);
      EXPECT_EQ(f.verdict, Verdict::kConfirmed) << kernel << " " << v.name << " " << text << "\n" << render_feedback(f);
    }
  }
}

TEST(Mla, DecodeVariantsMatchTheUnabsorbedReference) { expect_variants_pass("mla_decode", "B3,H3,N24,E8,R40,V16,L37,P8"); }

TEST(Mla, PrefillVariantsMatchTheUnabsorbedReference) {
  expect_variants_pass("mla_prefill", "B3,H2,N16,E6,R24,V20,T19,P4");
}

// W_UK used untransposed (wk read as [nope, rank]) is what a wrong absorption does; with
// N = R the shapes still fit, and the check must catch it.
TEST(Mla, CheckRefutesAnAbsorptionWithoutTheTranspose) {
  KernelRegistry reg;
  ASSERT_TRUE(reg.add(*KernelRegistry::global().find("mla_decode")));
  const KernelFn honest = reg.find("mla_decode")->find_variant("absorbed")->run;
  ASSERT_TRUE(reg.add_variant("mla_decode", {.name = "untransposed", .isa = Isa::kScalar, .run = [honest](const KernelCall& c) {
    const Shape& s = c.shape;
    const int64_t H = s["H"], R = s["R"], N = s["N"];
    std::vector<float> t(size_t(H * R * N));
    const float* wk = c.inputs[2].ptr<float>();
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t n = 0; n < N; ++n) t[size_t((h * R + r) * N + n)] = wk[(h * N + n) * R + r];
    std::vector<TensorView> in(c.inputs.begin(), c.inputs.end());
    in[2] = *TensorView::make(t.data(), DType::kF32, c.inputs[2].shape());
    honest({.shape = s, .inputs = in, .outputs = c.outputs, .shard = c.shard, .shards = c.shards});
  }}));
  const KernelSpec* spec = reg.find("mla_decode");
  probe::CheckOptions o = options();
  auto r = probe::check_variant(*spec, *spec->find_variant("untransposed"), *spec->parse_shape("B3,H2,N16,E4,R16,V8,L9,P4,C0"), o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(probe::check_feedback(*r, o).verdict, Verdict::kRefuted);
}

// The absorbed form's work does not grow with nope + v_dim per cached token: at
// DeepSeek-V2-Lite's attention shape the expanded form costs an order of magnitude more.
TEST(Mla, AbsorbedDecodeCostsFarLessThanExpandingTheCache) {
  const KernelSpec* spec = KernelRegistry::global().find("mla_decode");
  ASSERT_NE(spec, nullptr);
  const Shape s = *spec->parse_shape("B1,H16,N128,E64,R512,V128,L4095,P16,C0");
  const double absorbed = spec->cost.flops(s);
  const double n = 2048, expanded = 16 * n * 2 * 512 * (128 + 128) + 16 * n * 2 * (128 + 64 + 128);
  EXPECT_LT(absorbed * 10, expanded);
}

// One sequence of `len` random latents in a cache of dtype `dt`, random q for all of them and
// random weights: the blocked form's prefill of the whole run, its token-by-token decode and
// the same prefill on a pool of 3 give the same bits (mla_ops.h: an element's sum does not
// depend on its block), at each ISA this machine runs.
struct Latents {
  mla::Dims d{.heads = 5, .nope = 24, .rope = 8, .rank = 72, .v_dim = 20};
  int64_t len = 45;
  std::vector<float> lat, q, wk, wv;
  explicit Latents(uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    auto fill = [&](std::vector<float>& v, int64_t n) {
      v.resize(size_t(n));
      for (float& x : v) x = g(rng);
    };
    fill(lat, len * d.latent_width());
    fill(q, len * d.heads * d.q_width());
    fill(wk, d.heads * int64_t(d.rank) * d.nope);
    fill(wv, d.heads * int64_t(d.v_dim) * d.rank);
  }
};

TEST(Mla, BlockedPrefillEqualsItsDecodeAndIgnoresThePoolAtEachIsa) {
  const Latents x(7);
  const mla::Dims& d = x.d;
  const mla::Weights w{x.wk.data(), x.wv.data()};
  const float scale = 0.17f;
  const int64_t OW = d.heads * d.v_dim;
  auto pool = ThreadPool::create({.threads = 3, .pin = false});
  ASSERT_TRUE(pool);
  for (Isa isa : runnable_isas()) {
    for (int c = 0; c < attention::kNumKvDTypes; ++c) {
      auto cache = attention::PagedKvCache::create({.kv_heads = 1, .head_dim = int(d.latent_width()), .page_size = 8,
                                                    .num_pages = 2 * 6, .layer_dtypes = {attention::KvDType(c)},
                                                    .keys_only = true});
      ASSERT_TRUE(cache);
      const float fp8_scale = 1.0f / 64;
      if (attention::KvDType(c) == attention::KvDType::kFP8E4M3) {
        ASSERT_TRUE(cache->set_fp8_scales(0, {&fp8_scale, 1}, {&fp8_scale, 1}));
      }
      const int pre = *cache->add_sequence(), dec = *cache->add_sequence();
      std::vector<float> prefill(size_t(x.len * OW)), pooled(prefill.size()), decode(prefill.size());
      for (int64_t t = 0; t < x.len; ++t) {
        const std::span<const float> row(x.lat.data() + t * d.latent_width(), size_t(d.latent_width()));
        ASSERT_TRUE(cache->append(pre, 0, row, {}));
        ASSERT_TRUE(cache->append(dec, 0, row, {}));
        const std::vector<int> seq{dec};
        const std::vector<int64_t> one{1};
        ASSERT_TRUE(mla::attend(*cache, 0, seq, one, x.q.data() + t * d.heads * d.q_width(), d, w, scale,
                                mla::Variant::kBlocked, isa, decode.data() + t * OW));
      }
      const std::vector<int> seq{pre};
      const std::vector<int64_t> all{x.len};
      ASSERT_TRUE(mla::attend(*cache, 0, seq, all, x.q.data(), d, w, scale, mla::Variant::kBlocked, isa, prefill.data()));
      ASSERT_TRUE(mla::attend(*cache, 0, seq, all, x.q.data(), d, w, scale, mla::Variant::kBlocked, isa, pooled.data(),
                              pool->get()));
      for (size_t i = 0; i < prefill.size(); ++i) {
        ASSERT_EQ(prefill[i], decode[i]) << isa_name(isa) << " C" << c << " element " << i;
        ASSERT_EQ(prefill[i], pooled[i]) << isa_name(isa) << " C" << c << " element " << i;
      }
    }
  }
}

// kernel.mla_*.variant=auto takes the blocked path of the machine's best ISA; the engine reads
// every registered name back as its form.
TEST(Mla, AutoPicksTheBlockedPathOfTheBestIsa) {
  for (const char* kernel : {"mla_decode", "mla_prefill"}) {
    const KernelSpec* spec = KernelRegistry::global().find(kernel);
    ASSERT_NE(spec, nullptr);
    const VariantSpec* best = spec->best_variant();
    ASSERT_NE(best, nullptr);
    EXPECT_EQ(best->name, "blocked_" + std::string(isa_name(active_isa())));
    for (const VariantSpec& v : spec->variants) EXPECT_TRUE(mla::variant_of_kernel(v.name)) << v.name;
  }
  EXPECT_FALSE(mla::variant_of_kernel("blocked_avx9"));
  EXPECT_EQ(*mla::variant_of_kernel("blocked_avx2"), mla::Variant::kBlocked);
}

TEST(Mla, YarnTablesArePlainRopeWithoutScalingAndInterpolateLowFrequencies) {
  const int d = 16;
  std::vector<float> c(d), s(d), c0(d), s0(d);
  mla::yarn_rope_tables(d, 37, 10000, {}, c.data(), s.data());
  rope_tables(d, 37, 10000, RopeLayout::kInterleaved, c0.data(), s0.data());
  EXPECT_EQ(c, c0);
  EXPECT_EQ(s, s0);
  // DeepSeek's yarn: inv_freq = freq / factor * (1 - mask) + freq * mask, mask = 1 - ramp over
  // the correction range [floor(dim(beta_fast)), ceil(dim(beta_slow))] of the original context.
  const mla::Yarn y{.factor = 40, .beta_fast = 32, .beta_slow = 1, .original_context = 4096};
  mla::yarn_rope_tables(d, 1000, 10000, y, c.data(), s.data());
  auto dim_of = [&](double rot) { return d * std::log(4096 / (rot * 2 * M_PI)) / (2 * std::log(10000.0)); };
  const double low = std::max(0.0, std::floor(dim_of(32))), high = std::min(double(d - 1), std::ceil(dim_of(1)));
  for (int i = 0; i < d / 2; ++i) {
    const double freq = std::pow(10000.0, -2.0 * i / d);
    double ramp = (i - low) / (high == low ? 0.001 : high - low);
    ramp = std::clamp(ramp, 0.0, 1.0);
    const double mask = 1 - ramp, inv = freq / 40 * (1 - mask) + freq * mask;
    EXPECT_NEAR(c[size_t(2 * i)], std::cos(1000 * inv), 1e-6) << i;
    EXPECT_NEAR(s[size_t(2 * i + 1)], std::sin(1000 * inv), 1e-6) << i;
  }
  EXPECT_NEAR(c[0], std::cos(1000.0), 1e-6);  // the fastest pair keeps its frequency
}

TEST(Mla, SoftmaxScaleIsDeepSeekMscaleSquaredOverSqrtHeadDim) {
  EXPECT_DOUBLE_EQ(mla::softmax_scale(128, 64, 1, 0.0707), 1 / std::sqrt(192.0));
  const double m = 0.1 * 0.707 * std::log(40.0) + 1;
  EXPECT_NEAR(mla::softmax_scale(128, 64, 40, 0.0707), m * m / std::sqrt(192.0), 1e-12);
}

TEST(Mla, RefusesACacheOfAnotherShape) {
  auto cache = attention::PagedKvCache::create({.kv_heads = 2, .head_dim = 20, .page_size = 4, .num_pages = 2});
  ASSERT_TRUE(cache);
  const int seq = *cache->add_sequence();
  std::vector<float> k(40, 0.5f), v(40, 0.5f), q(2 * 24), out(2 * 8);
  ASSERT_TRUE(cache->append(seq, 0, k, v));
  std::vector<float> wk(2 * 16 * 20), wv(2 * 8 * 16);
  const mla::Dims d{.heads = 2, .nope = 20, .rope = 4, .rank = 16, .v_dim = 8};
  const std::vector<int> seqs{seq};
  const std::vector<int64_t> counts{1};
  Status st = mla::attend(*cache, 0, seqs, counts, q.data(), d, {wk.data(), wv.data()}, 1.0f, mla::Variant::kAbsorbed,
                          Isa::kScalar, out.data());
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("MLA needs 1 of rank 16 + rope 4"), std::string::npos) << st.error().message();
}

}  // namespace
}  // namespace recur::kernels
