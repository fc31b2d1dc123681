// Sliding-window attention (AttentionOptions::window): decode and chunked prefill against the
// float64 reference over the window's keys, for every cache dtype, ISA path and context split,
// with windows that start inside pages, on page boundaries, and cover the whole sequence; pages
// wholly before the window are not read (poisoned with NaN, the result stays exact); prefill
// equals token-by-token decode under the same window.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_test_util.h"

namespace recur::kernels::attention {
namespace {

using namespace testing;

// The reference of one query at position n - 1 over the window's keys of k/v ([n, H, D]).
void reference_windowed(const std::vector<double>& q, size_t q_off, const std::vector<double>& k,
                        const std::vector<double>& v, int64_t n, int64_t window, int HQ, int H, int D,
                        std::vector<double>& out, std::vector<double>& mag, size_t out_off) {
  const int64_t lo = window > 0 ? std::max<int64_t>(0, n - window) : 0;
  const size_t row = size_t(H) * size_t(D);
  const std::vector<double> kw(k.begin() + int64_t(size_t(lo) * row), k.begin() + int64_t(size_t(n) * row));
  const std::vector<double> vw(v.begin() + int64_t(size_t(lo) * row), v.begin() + int64_t(size_t(n) * row));
  reference_token(q, q_off, kw, vw, n - lo, HQ, H, D, out, mag, out_off);
}

struct Filled {
  PagedKvCache cache;
  std::vector<int> ids;
};

Filled filled_cache(KvDType dtype, int H, int D, int P, const std::vector<int64_t>& lens, uint64_t seed) {
  auto made = PagedKvCache::create({.kv_heads = H, .head_dim = D, .page_size = P, .num_pages = 256, .layer_dtypes = {dtype}});
  EXPECT_TRUE(made);
  Filled f{std::move(*made), {}};
  if (dtype == KvDType::kFP8E4M3) {
    const std::vector<float> s(size_t(H), 8.0f / 448.0f);
    EXPECT_TRUE(f.cache.set_fp8_scales(0, s, s));
  }
  f.ids = fill(f.cache, 0, random_sequences(lens, H, D, seed), lens);
  return f;
}

// Decode under `window` against the reference; returns the worst error ratio.
double decode_ratio(const PagedKvCache& cache, const std::vector<int>& ids, const std::vector<int64_t>& lens, int HQ,
                    int64_t window, const AttentionOptions& base, uint64_t seed, ThreadPool* pool = nullptr) {
  const int H = cache.config().kv_heads, D = cache.config().head_dim;
  const size_t qrow = size_t(HQ) * size_t(D);
  const std::vector<float> q = random_values(ids.size() * qrow, seed + 5);
  std::vector<float> out(q.size(), -1.0f);
  AttentionOptions o = base;
  o.window = window;
  auto s = decode(cache, 0, ids, q.data(), HQ, out.data(), o, pool);
  EXPECT_TRUE(s) << s.error().to_string();
  const std::vector<double> qd(q.begin(), q.end());
  std::vector<double> want(out.size()), mag(out.size()), k, v;
  for (size_t b = 0; b < ids.size(); ++b) {
    read_back(cache, 0, ids[b], lens[b], k, v);
    reference_windowed(qd, b * qrow, k, v, lens[b], window, HQ, H, D, want, mag, b * qrow);
  }
  return worst_ratio(out, want, mag, kKernelRtol);
}

const std::vector<int64_t> kLens = {1, 15, 16, 17, 47, 120};

TEST(AttentionWindow, DecodeMatchesTheWindowedReferenceForEveryDTypeIsaAndSplit) {
  for (Isa isa : runnable_isas())
    for (KvDType dtype : kAllDTypes) {
      const Filled f = filled_cache(dtype, 2, 40, 16, kLens, 3);
      for (int split : {1, 3, 8})
        for (int64_t window : {1, 5, 16, 17, 33, 500}) {
          const double r = decode_ratio(f.cache, f.ids, kLens, 6, window, {.isa = isa, .split_k = split}, window);
          EXPECT_LE(r, 1.0) << isa_name(isa) << " " << kv_dtype_name(dtype) << " split " << split << " window " << window;
        }
    }
}

// The window changes the result (so agreement above is not vacuous): window 5 against all keys.
TEST(AttentionWindow, AWindowShorterThanTheSequenceChangesTheOutput) {
  const Filled f = filled_cache(KvDType::kF32, 2, 40, 16, {120}, 4);
  const std::vector<float> q = random_values(6 * 40, 9);
  std::vector<float> full(q.size()), windowed(q.size());
  ASSERT_TRUE(decode(f.cache, 0, f.ids, q.data(), 6, full.data(), {}));
  ASSERT_TRUE(decode(f.cache, 0, f.ids, q.data(), 6, windowed.data(), {.window = 5}));
  double diff = 0;
  for (size_t i = 0; i < q.size(); ++i) diff = std::max(diff, double(std::fabs(full[i] - windowed[i])));
  EXPECT_GT(diff, 1e-2);
  // A window as long as the sequence is no window.
  ASSERT_TRUE(decode(f.cache, 0, f.ids, q.data(), 6, windowed.data(), {.window = 120}));
  EXPECT_EQ(full, windowed);
}

// Pages wholly before the window are never read: NaN written into their K and V leaves decode
// and prefill exact (a kernel that touched them would turn every score NaN).
TEST(AttentionWindow, PagesBeforeTheWindowAreNotRead) {
  const int H = 2, D = 32, P = 8, HQ = 4;
  const std::vector<int64_t> lens = {70};
  for (Isa isa : runnable_isas()) {
    Filled f = filled_cache(KvDType::kF32, H, D, P, lens, 5);
    const LayerView view = f.cache.layer_view(0);
    const std::span<const int32_t> pages = *f.cache.pages(f.ids[0]);
    const int64_t window = 20;  // the keys at 50..69: pages 6..8 (6 starts at 48); 0..5 unread
    for (int64_t p = 0; p < (70 - window) / P; ++p) {
      float* k = const_cast<float*>(reinterpret_cast<const float*>(view.k)) + int64_t(pages[size_t(p)]) * H * P * D;
      float* v = const_cast<float*>(reinterpret_cast<const float*>(view.v)) + int64_t(pages[size_t(p)]) * H * P * D;
      std::fill(k, k + H * P * D, std::numeric_limits<float>::quiet_NaN());
      std::fill(v, v + H * P * D, std::numeric_limits<float>::quiet_NaN());
    }
    for (int split : {1, 2, 4}) {
      const double r = decode_ratio(f.cache, f.ids, lens, HQ, window, {.isa = isa, .split_k = split}, 11);
      EXPECT_LE(r, 1.0) << isa_name(isa) << " split " << split;
    }
    // Prefill 10 more tokens: the earliest query (position 70) sees 51..70, still past page 5.
    const std::vector<int64_t> tokens = {10};
    const std::vector<float> q = random_values(10 * HQ * D, 12), k = random_values(10 * H * D, 13),
                             v = random_values(10 * H * D, 14);
    std::vector<float> out(q.size());
    ASSERT_TRUE(prefill(f.cache, 0, f.ids, tokens, q.data(), k.data(), v.data(), HQ, out.data(),
                        {.isa = isa, .window = window}));
    for (float x : out) ASSERT_TRUE(std::isfinite(x)) << isa_name(isa);
  }
}

// Chunked prefill under a window (the cache holds earlier chunks) against the reference, then
// prefill equal to token-by-token decode.
TEST(AttentionWindow, ChunkedPrefillMatchesTheReferenceAndDecode) {
  const int HQ = 4, H = 2, D = 24, P = 8;
  const std::vector<std::vector<int64_t>> chunks = {{13, 1, 30}, {20, 9, 1}, {3, 40, 17}};
  for (Isa isa : runnable_isas())
    for (KvDType dtype : kAllDTypes)
      for (int64_t window : {1, 7, 8, 19}) {
        SCOPED_TRACE(fmt::format("{} {} window {}", isa_name(isa), kv_dtype_name(dtype), window));
        auto made = PagedKvCache::create({.kv_heads = H, .head_dim = D, .page_size = P, .num_pages = 128,
                                          .layer_dtypes = {dtype, dtype}});
        ASSERT_TRUE(made);
        PagedKvCache& cache = *made;
        if (dtype == KvDType::kFP8E4M3) {
          const std::vector<float> s(size_t(H), 8.0f / 448.0f);
          ASSERT_TRUE(cache.set_fp8_scales(0, s, s));
          ASSERT_TRUE(cache.set_fp8_scales(1, s, s));
        }
        std::vector<int> ids;
        for (int i = 0; i < 3; ++i) ids.push_back(*cache.add_sequence());
        const size_t qrow = size_t(HQ) * D, kvrow = size_t(H) * D;
        std::vector<int64_t> before(3, 0);
        for (size_t ci = 0; ci < chunks.size(); ++ci) {
          const std::vector<int64_t>& tokens = chunks[ci];
          const int64_t total = tokens[0] + tokens[1] + tokens[2];
          const std::vector<float> q = random_values(size_t(total) * qrow, 50 + ci),
                                   k = random_values(size_t(total) * kvrow, 60 + ci, 1.5f),
                                   v = random_values(size_t(total) * kvrow, 70 + ci);
          std::vector<float> out(q.size());
          ASSERT_TRUE(prefill(cache, 0, ids, tokens, q.data(), k.data(), v.data(), HQ, out.data(),
                              {.isa = isa, .window = window}));
          // Layer 1 gets the same tokens one decode step at a time.
          std::vector<float> stepped(q.size());
          int64_t row = 0;
          for (size_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < tokens[i]; ++j, ++row) {
              ASSERT_TRUE(cache.append(ids[i], 1, std::span<const float>(k.data() + size_t(row) * kvrow, kvrow),
                                       std::span<const float>(v.data() + size_t(row) * kvrow, kvrow)));
              const std::vector<int> one = {ids[i]};
              ASSERT_TRUE(decode(cache, 1, one, q.data() + size_t(row) * qrow, HQ, stepped.data() + size_t(row) * qrow,
                                 {.isa = isa, .window = window}));
            }
          const std::vector<double> qd(q.begin(), q.end());
          std::vector<double> want(out.size()), mag(out.size()), kd, vd;
          row = 0;
          for (size_t i = 0; i < 3; ++i) {
            read_back(cache, 0, ids[i], before[i] + tokens[i], kd, vd);
            for (int64_t j = 0; j < tokens[i]; ++j, ++row)
              reference_windowed(qd, size_t(row) * qrow, kd, vd, before[i] + j + 1, window, HQ, H, D, want, mag,
                                 size_t(row) * qrow);
            before[i] += tokens[i];
          }
          EXPECT_LE(worst_ratio(out, want, mag, kKernelRtol), 1.0) << "chunk " << ci;
          EXPECT_LE(worst_ratio(stepped, want, mag, kKernelRtol), 1.0) << "decode, chunk " << ci;
        }
      }
}

TEST(AttentionWindow, ANegativeWindowIsAnError) {
  Filled f = filled_cache(KvDType::kF32, 1, 8, 4, {3}, 1);
  std::vector<float> q(8), out(8);
  EXPECT_EQ(decode(f.cache, 0, f.ids, q.data(), 1, out.data(), {.window = -1}).error().code(),
            ErrorCode::kInvalidArgument);
  const std::vector<int64_t> tokens = {1};
  EXPECT_EQ(prefill(f.cache, 0, f.ids, tokens, q.data(), q.data(), q.data(), 1, out.data(), {.window = -1}).error().code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace recur::kernels::attention
