// prefill() writes the cache and computes causal attention matching the float64 reference over
// the stored cache, for every dtype and ISA path, with and without earlier context (chunked
// prefill), for several sequences at once; a decode after it continues the same cache.
#include <gtest/gtest.h>

#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_test_util.h"

namespace recur::kernels::attention {
namespace {

using namespace testing;

struct Chunk {
  std::vector<int64_t> tokens;  // new tokens per sequence
};

// Prefills `chunks` one after another, checking every chunk's output against the reference.
void run_prefill(KvDType dtype, int HQ, int H, int D, int P, const std::vector<Chunk>& chunks, uint64_t seed, Isa isa,
                 ThreadPool* pool = nullptr) {
  auto made = PagedKvCache::create({.kv_heads = H, .head_dim = D, .page_size = P, .num_pages = 128, .layer_dtypes = {dtype}});
  ASSERT_TRUE(made);
  PagedKvCache& cache = *made;
  const size_t nseq = chunks[0].tokens.size();
  if (dtype == KvDType::kFP8E4M3) {
    const std::vector<float> s(size_t(H), 4.0f / 448.0f);
    ASSERT_TRUE(cache.set_fp8_scales(0, s, s));
  }
  std::vector<int> ids;
  for (size_t i = 0; i < nseq; ++i) ids.push_back(*cache.add_sequence());
  const size_t qrow = size_t(HQ) * size_t(D), kvrow = size_t(H) * size_t(D);
  std::vector<int64_t> before(nseq, 0);
  for (size_t ci = 0; ci < chunks.size(); ++ci) {
    const std::vector<int64_t>& tokens = chunks[ci].tokens;
    int64_t total = 0;
    for (int64_t t : tokens) total += t;
    const std::vector<float> q = random_values(size_t(total) * qrow, seed * 31 + ci);
    const std::vector<float> k = random_values(size_t(total) * kvrow, seed * 37 + ci, 1.5f);
    const std::vector<float> v = random_values(size_t(total) * kvrow, seed * 41 + ci);
    std::vector<float> out(q.size(), -7.0f);
    auto s = prefill(cache, 0, ids, tokens, q.data(), k.data(), v.data(), HQ, out.data(), {.isa = isa}, pool);
    ASSERT_TRUE(s) << s.error().to_string();
    const std::vector<double> qd(q.begin(), q.end());
    std::vector<double> want(out.size()), mag(out.size()), kd, vd;
    int64_t row = 0;
    for (size_t i = 0; i < nseq; ++i) {
      ASSERT_EQ(*cache.length(ids[i], 0), before[i] + tokens[i]);
      read_back(cache, 0, ids[i], before[i] + tokens[i], kd, vd);
      for (int64_t j = 0; j < tokens[i]; ++j)
        reference_token(qd, size_t(row + j) * qrow, kd, vd, before[i] + j + 1, HQ, H, D, want, mag, size_t(row + j) * qrow);
      row += tokens[i];
      before[i] += tokens[i];
    }
    size_t where = 0;
    const double r = worst_ratio(out, want, mag, kKernelRtol, &where);
    EXPECT_LE(r, 1.0) << kv_dtype_name(dtype) << " " << isa_name(isa) << " chunk " << ci << " element " << where << " got "
                      << out[where] << " want " << want[where];
  }
}

TEST(AttentionPrefill, EveryDTypeAndIsaMatchesTheReference) {
  for (Isa isa : runnable_isas())
    for (KvDType dtype : kAllDTypes)
      for (uint64_t seed : {1, 2}) {
        run_prefill(dtype, 6, 2, 37, 16, {{{37, 17, 1}}}, seed, isa);
        run_prefill(dtype, 4, 1, 64, 8, {{{20, 5}}, {{13, 16}}, {{1, 1}}}, seed, isa);  // chunked prefill
      }
}

TEST(AttentionPrefill, ThreadPoolMatchesTheReference) {
  auto pool = ThreadPool::create({.threads = 3, .pin = false});
  ASSERT_TRUE(pool);
  run_prefill(KvDType::kI8, 8, 2, 64, 16, {{{70, 33}}}, 3, active_isa(), pool.value().get());
}

TEST(AttentionPrefill, DecodeContinuesThePrefilledCache) {
  const int HQ = 4, H = 2, D = 32, P = 16;
  auto cache = PagedKvCache::create({.kv_heads = H, .head_dim = D, .page_size = P, .num_pages = 16, .layer_dtypes = {KvDType::kBF16}});
  ASSERT_TRUE(cache);
  const int s = *cache->add_sequence();
  const std::vector<int> ids = {s};
  const int64_t T = 21;
  const std::vector<float> q = random_values(size_t(T) * HQ * D, 1), k = random_values(size_t(T) * H * D, 2),
                           v = random_values(size_t(T) * H * D, 3);
  std::vector<float> out(q.size());
  ASSERT_TRUE(prefill(*cache, 0, ids, std::vector<int64_t>{T}, q.data(), k.data(), v.data(), HQ, out.data()));
  // The last prefill row attends to all T tokens, as a decode of the same query does.
  std::vector<float> dec(size_t(HQ) * D);
  ASSERT_TRUE(decode(*cache, 0, ids, q.data() + size_t(T - 1) * HQ * D, HQ, dec.data()));
  for (size_t i = 0; i < dec.size(); ++i) EXPECT_NEAR(dec[i], out[size_t(T - 1) * HQ * D + i], 1e-5) << i;
}

TEST(AttentionPrefill, OutOfPagesIsAnError) {
  auto cache = PagedKvCache::create({.kv_heads = 1, .head_dim = 8, .page_size = 4, .num_pages = 2, .layer_dtypes = {KvDType::kF32}});
  ASSERT_TRUE(cache);
  const std::vector<int> ids = {*cache->add_sequence()};
  const std::vector<float> x(9 * 8, 0.5f);
  std::vector<float> out(x.size());
  auto s = prefill(*cache, 0, ids, std::vector<int64_t>{9}, x.data(), x.data(), x.data(), 1, out.data());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_FALSE(prefill(*cache, 0, ids, std::vector<int64_t>{1, 2}, x.data(), x.data(), x.data(), 1, out.data()));
}

}  // namespace
}  // namespace recur::kernels::attention
