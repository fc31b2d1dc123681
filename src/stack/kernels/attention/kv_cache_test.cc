// PagedKvCache: each dtype stores what core/convert.h defines, pages are allocated at page
// boundaries and recycled, misuse is an error, and a multi-layer cache mixes dtypes.
#include "kernels/attention/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/convert.h"
#include "kernels/attention/attention_test_util.h"

namespace recur::kernels::attention {
namespace {

using testing::random_values;

PagedKvCache make(std::vector<KvDType> dtypes, int heads = 2, int dim = 37, int page = 5, int64_t pages = 16) {
  auto c = PagedKvCache::create({.kv_heads = heads, .head_dim = dim, .page_size = page, .num_pages = pages, .layer_dtypes = dtypes});
  EXPECT_TRUE(c) << c.error().to_string();
  return std::move(*c);
}

// The value core/convert.h's definitions give x in a cache of dtype t.
std::vector<float> expected_storage(KvDType t, const std::vector<float>& x, int heads, int dim, float fp8_scale) {
  std::vector<float> out(x.size());
  for (int h = 0; h < heads; ++h) {
    const size_t o = size_t(h) * size_t(dim);
    switch (t) {
      case KvDType::kF32: for (int i = 0; i < dim; ++i) out[o + size_t(i)] = x[o + size_t(i)]; break;
      case KvDType::kBF16: for (int i = 0; i < dim; ++i) out[o + size_t(i)] = bf16_to_fp32(fp32_to_bf16(x[o + size_t(i)])); break;
      case KvDType::kF16: for (int i = 0; i < dim; ++i) out[o + size_t(i)] = fp16_to_fp32(fp32_to_fp16(x[o + size_t(i)])); break;
      case KvDType::kFP8E4M3:
        for (int i = 0; i < dim; ++i) out[o + size_t(i)] = fp8e4m3_to_fp32(fp32_to_fp8e4m3(x[o + size_t(i)] / fp8_scale)) * fp8_scale;
        break;
      case KvDType::kI8: {
        std::vector<int8_t> q(static_cast<size_t>(dim));
        float s = 0;
        EXPECT_TRUE(quantize_int8_rows(std::span<const float>(x.data() + o, size_t(dim)), 1, size_t(dim), q, std::span<float>(&s, 1)));
        for (int i = 0; i < dim; ++i) out[o + size_t(i)] = float(q[size_t(i)]) * s;
        break;
      }
    }
  }
  return out;
}

TEST(KvCache, AnF16LayerSaturatesBeyondItsRangeAndKeepsItsEdges) {
  PagedKvCache cache = make({KvDType::kF16}, 1, 4, 4, 4);
  const int seq = *cache.add_sequence();
  const std::vector<float> k = {65504.0f, -65504.0f, 6.0e-8f, 1.0f}, v = {70000.0f, -1.0e30f, 65519.0f, 4.0f};
  ASSERT_TRUE(cache.append(seq, 0, k, v));
  std::vector<float> rk(4), rv(4);
  ASSERT_TRUE(cache.read(seq, 0, 0, rk, rv));
  EXPECT_EQ(rk[0], 65504.0f);  // the largest finite fp16 and a subnormal are kept
  EXPECT_EQ(rk[1], -65504.0f);
  EXPECT_EQ(rk[2], fp16_to_fp32(fp32_to_fp16(6.0e-8f)));
  EXPECT_GT(rk[2], 0.0f);
  EXPECT_EQ(rv[0], 65504.0f);  // beyond the range: saturated, never inf
  EXPECT_EQ(rv[1], -65504.0f);
  EXPECT_EQ(rv[2], 65504.0f);
  EXPECT_EQ(rv[3], 4.0f);
}

TEST(KvCache, EachDTypeStoresWhatConvertDefines) {
  for (KvDType t : testing::kAllDTypes) {
    PagedKvCache cache = make({t});
    const float scale = 0.01f;
    if (t == KvDType::kFP8E4M3) {
      const std::vector<float> s(2, scale);
      ASSERT_TRUE(cache.set_fp8_scales(0, s, s));
    }
    const int seq = *cache.add_sequence();
    std::vector<std::vector<float>> ks, vs;
    for (int tok = 0; tok < 12; ++tok) {
      ks.push_back(random_values(74, 10 + uint64_t(tok)));
      vs.push_back(random_values(74, 100 + uint64_t(tok)));
      if (tok == 3) std::fill(ks.back().begin(), ks.back().begin() + 37, 0.0f);  // an all-zero int8 row
      ASSERT_TRUE(cache.append(seq, 0, ks.back(), vs.back()));
    }
    std::vector<float> k(74), v(74);
    for (int tok = 0; tok < 12; ++tok) {
      ASSERT_TRUE(cache.read(seq, 0, tok, k, v));
      const std::vector<float> ek = expected_storage(t, ks[size_t(tok)], 2, 37, scale);
      const std::vector<float> ev = expected_storage(t, vs[size_t(tok)], 2, 37, scale);
      for (size_t i = 0; i < 74; ++i) {
        ASSERT_EQ(k[i], ek[i]) << kv_dtype_name(t) << " token " << tok << " k " << i;
        ASSERT_EQ(v[i], ev[i]) << kv_dtype_name(t) << " token " << tok << " v " << i;
      }
    }
    if (t != KvDType::kF32) {
      bool changed = false;  // quantization did something, so the comparison above is not vacuous
      ASSERT_TRUE(cache.read(seq, 0, 5, k, v));
      for (size_t i = 0; i < 74; ++i) changed |= k[i] != ks[5][i];
      EXPECT_TRUE(changed) << kv_dtype_name(t);
    }
  }
}

TEST(KvCache, PagesAreAllocatedAtBoundariesAndRecycled) {
  PagedKvCache cache = make({KvDType::kBF16}, 1, 8, 4, 5);
  const std::vector<float> row(8, 1.0f);
  const int a = *cache.add_sequence(), b = *cache.add_sequence();
  for (int t = 0; t < 4; ++t) ASSERT_TRUE(cache.append(a, 0, row, row));
  EXPECT_EQ(cache.pages(a)->size(), 1u);
  ASSERT_TRUE(cache.append(b, 0, row, row));
  ASSERT_TRUE(cache.append(a, 0, row, row));  // position 4: a second page, after b's
  ASSERT_EQ(cache.pages(a)->size(), 2u);
  EXPECT_EQ((*cache.pages(a))[0], 0);
  EXPECT_EQ((*cache.pages(b))[0], 1);
  EXPECT_EQ((*cache.pages(a))[1], 2);
  EXPECT_EQ(cache.free_pages(), 2);
  EXPECT_EQ(*cache.length(a, 0), 5);
  ASSERT_TRUE(cache.free_sequence(a));
  EXPECT_EQ(cache.free_pages(), 4);
  EXPECT_FALSE(cache.length(a, 0));
  const int c = *cache.add_sequence();
  EXPECT_EQ(c, a);  // the id is reused
  ASSERT_TRUE(cache.append(c, 0, row, row));
  EXPECT_EQ((*cache.pages(c))[0], 0);  // lowest free page first
}

TEST(KvCache, OutOfPagesAndMisuseAreErrors) {
  PagedKvCache cache = make({KvDType::kI8}, 1, 8, 2, 2);
  const std::vector<float> row(8, 0.5f);
  const int s = *cache.add_sequence();
  for (int t = 0; t < 4; ++t) ASSERT_TRUE(cache.append(s, 0, row, row));
  auto full = cache.append(s, 0, row, row);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(full.error().message().find("out of pages"), std::string::npos) << full.error().message();
  EXPECT_EQ(*cache.length(s, 0), 4);  // the failed append wrote nothing

  EXPECT_EQ(cache.append(7, 0, row, row).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(cache.append(s, 1, row, row).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(cache.append(s, 0, std::vector<float>(7), row).error().code(), ErrorCode::kInvalidArgument);
  std::vector<float> bad = row;
  bad[3] = NAN;
  EXPECT_EQ(cache.append(s, 0, row, bad).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(cache.free_sequence(9).error().code(), ErrorCode::kNotFound);
  std::vector<float> k(8), v(8);
  EXPECT_FALSE(cache.read(s, 0, 4, k, v));
  EXPECT_FALSE(cache.set_fp8_scales(0, std::vector<float>(1, 1.0f), std::vector<float>(1, 1.0f)));  // int8 layer
  EXPECT_FALSE(PagedKvCache::create({.kv_heads = 0}));
  EXPECT_FALSE(PagedKvCache::create({.layer_dtypes = {}}));
}

TEST(KvCache, Fp8ScalesAreFixedBeforeTheFirstWriteAndCalibrate) {
  PagedKvCache cache = make({KvDType::kFP8E4M3}, 2, 4, 4, 4);
  std::vector<float> k = {1, -2, 3, 4, 0.5f, 0.25f, -8, 1}, v = {10, 20, 30, -40, 1, 1, 1, 1};
  ASSERT_TRUE(cache.calibrate_fp8(0, k, v, 1));
  EXPECT_EQ(cache.layer_view(0).k_head_scale[0], 4.0f / 448.0f);
  EXPECT_EQ(cache.layer_view(0).k_head_scale[1], 8.0f / 448.0f);
  EXPECT_EQ(cache.layer_view(0).v_head_scale[0], 40.0f / 448.0f);
  EXPECT_FALSE(cache.set_fp8_scales(0, std::vector<float>{1, -1}, std::vector<float>{1, 1}));
  const int s = *cache.add_sequence();
  ASSERT_TRUE(cache.append(s, 0, k, v));
  std::vector<float> kr(8), vr(8);
  ASSERT_TRUE(cache.read(s, 0, 0, kr, vr));
  EXPECT_EQ(kr[6], -8.0f);  // the head's amax maps to 448 exactly
  EXPECT_EQ(vr[3], -40.0f);
  auto late = cache.set_fp8_scales(0, std::vector<float>{1, 1}, std::vector<float>{1, 1});
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code(), ErrorCode::kFailedPrecondition);
}

TEST(KvCache, MixedPrecisionLayersKeepTheirOwnDTypes) {
  PagedKvCache cache = make({KvDType::kF32, KvDType::kBF16, KvDType::kFP8E4M3, KvDType::kI8}, 2, 16, 4, 8);
  EXPECT_EQ(cache.token_bytes(0), 2u * 2u * 16u * 4u);
  EXPECT_EQ(cache.token_bytes(1), 2u * 2u * 16u * 2u);
  EXPECT_EQ(cache.token_bytes(2), 2u * 2u * 16u);
  EXPECT_EQ(cache.token_bytes(3), 2u * 2u * (16u + 4u));
  const int s = *cache.add_sequence();
  const std::vector<float> k = random_values(32, 5), v = random_values(32, 6);
  for (int layer = 0; layer < 4; ++layer) ASSERT_TRUE(cache.append(s, layer, k, v));
  EXPECT_EQ(cache.pages(s)->size(), 1u);  // one page id serves every layer
  std::vector<float> kr(32), vr(32);
  for (int layer = 0; layer < 4; ++layer) {
    ASSERT_TRUE(cache.read(s, layer, 0, kr, vr));
    const KvDType t = cache.config().layer_dtypes[size_t(layer)];
    EXPECT_EQ(kr, expected_storage(t, k, 2, 16, 1.0f)) << kv_dtype_name(t);
  }
  EXPECT_EQ(*cache.length(s, 0), 1);
  ASSERT_TRUE(cache.append(s, 0, k, v));
  EXPECT_EQ(*cache.length(s, 0), 2);
  EXPECT_EQ(*cache.length(s, 3), 1);  // layers advance independently
}

// MLA's latent cache (keys_only): one vector per token, half the bytes, v empty on both sides,
// each dtype stored as for keys.
TEST(KvCache, KeysOnlyStoresOneVectorPerToken) {
  for (KvDType t : testing::kAllDTypes) {
    auto made = PagedKvCache::create(
        {.kv_heads = 1, .head_dim = 40, .page_size = 4, .num_pages = 4, .layer_dtypes = {t}, .keys_only = true});
    ASSERT_TRUE(made) << made.error().to_string();
    PagedKvCache& cache = *made;
    auto both = PagedKvCache::create({.kv_heads = 1, .head_dim = 40, .page_size = 4, .num_pages = 4, .layer_dtypes = {t}});
    ASSERT_TRUE(both);
    EXPECT_EQ(2 * cache.token_bytes(0), both->token_bytes(0)) << kv_dtype_name(t);
    EXPECT_EQ(cache.layer_view(0).v, nullptr);
    const int seq = *cache.add_sequence();
    std::vector<std::vector<float>> ks;
    for (int tok = 0; tok < 9; ++tok) {
      ks.push_back(random_values(40, 7 + uint64_t(tok), 0.05f));
      ASSERT_TRUE(cache.append(seq, 0, ks.back(), {})) << kv_dtype_name(t);
    }
    const std::vector<float> extra = random_values(40, 99);
    const auto with_v = cache.append(seq, 0, extra, extra);
    ASSERT_FALSE(with_v);
    EXPECT_NE(with_v.error().message().find("keys only"), std::string::npos) << with_v.error().message();
    std::vector<float> k(40);
    for (int tok = 0; tok < 9; ++tok) {
      ASSERT_TRUE(cache.read(seq, 0, tok, k, {}));
      const std::vector<float> ek = expected_storage(t, ks[size_t(tok)], 1, 40, 1.0f);
      for (size_t i = 0; i < 40; ++i) ASSERT_EQ(k[i], ek[i]) << kv_dtype_name(t) << " token " << tok << " " << i;
    }
  }
}

TEST(KvCache, DTypeNamesRoundTrip) {
  for (KvDType t : testing::kAllDTypes) EXPECT_EQ(*parse_kv_dtype(kv_dtype_name(t)), t);
  EXPECT_FALSE(parse_kv_dtype("fp4"));
}

}  // namespace
}  // namespace recur::kernels::attention
