// decode() against the float64 reference for every cache dtype and ISA path: over the stored
// cache at the kernel tolerance, over the unquantized K/V at the dtype's end-to-end tolerance
// (docs/attention.md); odd head dims, lengths across page boundaries, several seeds; context
// splits, thread pools and a mixed-precision multi-layer cache.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_test_util.h"

namespace recur::kernels::attention {
namespace {

using namespace testing;

struct Case {
  int q_heads, kv_heads, head_dim, page;
  std::vector<int64_t> lens;
};

const Case kCases[] = {
    {6, 2, 67, 16, {1, 16, 17, 40}},   // odd head dim, lengths at and across page boundaries
    {8, 2, 128, 16, {200, 31, 33}},
    {4, 4, 24, 7, {15, 1, 50}},        // no grouping, odd page size
    {16, 1, 80, 32, {65, 64}},          // one kv head for 16 query heads
};

struct Errors {
  double kernel_ratio = 0;  // vs the stored cache, in units of kKernelRtol * magnitude
  double e2e = 0;           // vs the unquantized values, max |err| / max |out|
};

Errors run_case(const Case& c, KvDType dtype, uint64_t seed, const AttentionOptions& opt, ThreadPool* pool = nullptr,
                 std::vector<float>* out_copy = nullptr) {
  auto made = PagedKvCache::create({.kv_heads = c.kv_heads, .head_dim = c.head_dim, .page_size = c.page, .num_pages = 256,
                                    .layer_dtypes = {dtype}});
  EXPECT_TRUE(made);
  PagedKvCache& cache = *made;
  const std::vector<SeqData> data = random_sequences(c.lens, c.kv_heads, c.head_dim, seed);
  if (dtype == KvDType::kFP8E4M3) {
    std::vector<float> k, v;
    int64_t n = 0;
    for (size_t b = 0; b < data.size(); ++b) {
      k.insert(k.end(), data[b].k.begin(), data[b].k.end());
      v.insert(v.end(), data[b].v.begin(), data[b].v.end());
      n += c.lens[b];
    }
    EXPECT_TRUE(cache.calibrate_fp8(0, k, v, n));
  }
  const std::vector<int> ids = fill(cache, 0, data, c.lens);
  const size_t B = c.lens.size(), qrow = size_t(c.q_heads) * size_t(c.head_dim);
  const std::vector<float> q = random_values(B * qrow, seed + 77);
  std::vector<float> out(B * qrow, -1.0f);
  auto s = decode(cache, 0, ids, q.data(), c.q_heads, out.data(), opt, pool);
  EXPECT_TRUE(s) << s.error().to_string();
  const std::vector<double> qd(q.begin(), q.end());
  std::vector<double> want(out.size()), mag(out.size()), raw(out.size()), rawmag(out.size());
  std::vector<double> k, v;
  for (size_t b = 0; b < B; ++b) {
    read_back(cache, 0, ids[b], c.lens[b], k, v);
    reference_token(qd, b * qrow, k, v, c.lens[b], c.q_heads, c.kv_heads, c.head_dim, want, mag, b * qrow);
    const std::vector<double> kr(data[b].k.begin(), data[b].k.end()), vr(data[b].v.begin(), data[b].v.end());
    reference_token(qd, b * qrow, kr, vr, c.lens[b], c.q_heads, c.kv_heads, c.head_dim, raw, rawmag, b * qrow);
  }
  if (out_copy) *out_copy = out;
  return {worst_ratio(out, want, mag, kKernelRtol), max_rel_error(out, raw)};
}

TEST(AttentionDecode, EveryDTypeAndIsaMatchesTheReference) {
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    for (KvDType dtype : kAllDTypes)
      for (const Case& c : kCases)
        for (uint64_t seed : {1, 2, 3}) {
          const Errors r = run_case(c, dtype, seed, {});
          EXPECT_LE(r.kernel_ratio, 1.0) << isa_name(isa) << " " << kv_dtype_name(dtype) << " D" << c.head_dim << " seed " << seed;
          EXPECT_LE(r.e2e, end_to_end_tolerance(dtype)) << isa_name(isa) << " " << kv_dtype_name(dtype) << " D" << c.head_dim;
          if (dtype != KvDType::kF32) {
            EXPECT_GT(r.e2e, 1e-6) << "quantization should be visible: " << kv_dtype_name(dtype);
          }
        }
  }
}

TEST(AttentionDecode, ContextSplitsMergeToTheSameResult) {
  const Case c{8, 2, 64, 16, {300, 7, 129}};
  for (Isa isa : runnable_isas())
    for (KvDType dtype : {KvDType::kBF16, KvDType::kI8})
      for (int split : {1, 2, 3, 7, 64}) {
        const Errors r = run_case(c, dtype, 4, {.isa = isa, .split_k = split});
        EXPECT_LE(r.kernel_ratio, 1.0) << isa_name(isa) << " split " << split;
      }
}

TEST(AttentionDecode, ThreadPoolGivesTheSameBitsAsOneThread) {
  auto pool = ThreadPool::create({.threads = 3, .pin = false});
  ASSERT_TRUE(pool);
  const Case c{8, 2, 64, 16, {300, 7, 129, 50}};
  for (int split : {1, 4}) {
    std::vector<float> serial, parallel;
    run_case(c, KvDType::kFP8E4M3, 5, {.split_k = split}, nullptr, &serial);
    run_case(c, KvDType::kFP8E4M3, 5, {.split_k = split}, pool.value().get(), &parallel);
    EXPECT_EQ(serial, parallel) << "split " << split;
  }
  const Errors r = run_case(c, KvDType::kFP8E4M3, 5, {.split_k = 0}, pool.value().get());  // auto split
  EXPECT_LE(r.kernel_ratio, 1.0);
}

TEST(AttentionDecode, IsaPathsAgree) {
  const Case c{8, 2, 67, 16, {100, 33}};
  std::vector<float> scalar;
  run_case(c, KvDType::kI8, 9, {.isa = Isa::kScalar}, nullptr, &scalar);
  for (Isa isa : runnable_isas()) {
    std::vector<float> got;
    run_case(c, KvDType::kI8, 9, {.isa = isa}, nullptr, &got);
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, double(std::fabs(got[i] - scalar[i])));
    EXPECT_LT(worst, 1e-4) << isa_name(isa);
  }
}

TEST(AttentionDecode, MixedPrecisionCacheRunsEachLayerAtItsDType) {
  const std::vector<KvDType> dtypes = {KvDType::kI8, KvDType::kF32, KvDType::kFP8E4M3, KvDType::kBF16, KvDType::kI8};
  const int HQ = 8, H = 2, D = 48, P = 16;
  auto made = PagedKvCache::create({.kv_heads = H, .head_dim = D, .page_size = P, .num_pages = 64, .layer_dtypes = dtypes});
  ASSERT_TRUE(made);
  PagedKvCache& cache = *made;
  const std::vector<int64_t> lens = {70, 18};
  std::vector<int> ids;
  std::vector<std::vector<SeqData>> data;
  for (size_t layer = 0; layer < dtypes.size(); ++layer) {
    data.push_back(random_sequences(lens, H, D, 40 + layer));
    if (dtypes[layer] == KvDType::kFP8E4M3) {
      std::vector<float> k = data.back()[0].k, v = data.back()[0].v;
      ASSERT_TRUE(cache.calibrate_fp8(int(layer), k, v, lens[0]));
    }
    ids = fill(cache, int(layer), data.back(), lens, ids);
  }
  const size_t qrow = size_t(HQ) * size_t(D);
  std::vector<double> errors;
  for (Isa isa : runnable_isas())
    for (size_t layer = 0; layer < dtypes.size(); ++layer) {
      const std::vector<float> q = random_values(2 * qrow, 90 + layer);
      std::vector<float> out(q.size());
      ASSERT_TRUE(decode(cache, int(layer), ids, q.data(), HQ, out.data(), {.isa = isa}));
      const std::vector<double> qd(q.begin(), q.end());
      std::vector<double> want(out.size()), mag(out.size()), raw(out.size()), rawmag(out.size()), k, v;
      for (size_t b = 0; b < 2; ++b) {
        read_back(cache, int(layer), ids[b], lens[b], k, v);
        reference_token(qd, b * qrow, k, v, lens[b], HQ, H, D, want, mag, b * qrow);
        const std::vector<double> kr(data[layer][b].k.begin(), data[layer][b].k.end()),
            vr(data[layer][b].v.begin(), data[layer][b].v.end());
        reference_token(qd, b * qrow, kr, vr, lens[b], HQ, H, D, raw, rawmag, b * qrow);
      }
      EXPECT_LE(worst_ratio(out, want, mag, kKernelRtol), 1.0) << "layer " << layer;
      const double e2e = max_rel_error(out, raw);
      EXPECT_LE(e2e, end_to_end_tolerance(dtypes[layer])) << "layer " << layer;
      if (isa == Isa::kScalar) errors.push_back(e2e);
    }
  // Each layer's error is its own dtype's: f32 exact-ish, int8 and fp8 visibly lossy.
  EXPECT_LT(errors[1], 1e-5);
  EXPECT_GT(errors[0], errors[1] * 10);
  EXPECT_GT(errors[2], errors[3]);
}

TEST(AttentionDecode, MisuseIsAnError) {
  auto cache = PagedKvCache::create({.kv_heads = 2, .head_dim = 8, .page_size = 4, .num_pages = 4, .layer_dtypes = {KvDType::kBF16}});
  ASSERT_TRUE(cache);
  const int s = *cache->add_sequence();
  std::vector<float> q(4 * 8), out(q.size());
  const std::vector<int> ids = {s};
  EXPECT_EQ(decode(*cache, 0, ids, q.data(), 4, out.data()).error().code(), ErrorCode::kInvalidArgument);  // empty
  const std::vector<float> row(16, 1.0f);
  ASSERT_TRUE(cache->append(s, 0, row, row));
  EXPECT_TRUE(decode(*cache, 0, ids, q.data(), 4, out.data()));
  EXPECT_FALSE(decode(*cache, 0, ids, q.data(), 3, out.data()));   // 3 query heads over 2 kv heads
  EXPECT_FALSE(decode(*cache, 1, ids, q.data(), 4, out.data()));   // no layer 1
  const std::vector<int> bad = {s + 1};
  EXPECT_EQ(decode(*cache, 0, bad, q.data(), 4, out.data()).error().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(decode(*cache, 0, ids, q.data(), 4, out.data(), {.split_k = -1}));
  if (detected_isa() > Isa::kScalar) {
    ScopedIsaCap cap(Isa::kScalar);
    EXPECT_EQ(decode(*cache, 0, ids, q.data(), 4, out.data(), {.isa = Isa::kAvx2}).error().code(), ErrorCode::kUnsupported);
  }
}

}  // namespace
}  // namespace recur::kernels::attention
