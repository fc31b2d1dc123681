// AttentionOptions::ggml: decode and prefill give, bit for bit, llama.cpp's non-flash attention as
// composed here from ggml_arith's functions the way its graph runs (llm_build_kqv): two mul_mats
// with ggml_compute_forward_mul_mat's choice between tinyBLAS and vec_dot, the soft-cap ops and
// soft_max_ext with llama.cpp's mask over the cells padded to 32. f16 and f32 caches, GQA,
// windows, soft-capping, a given scale, lengths around 32 and 64, both ISAs, any pool.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/convert.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_test_util.h"
#include "kernels/ggml_arith/ggml_arith.h"

namespace recur::kernels::attention {
namespace {

using namespace testing;
using ggml_arith::GgmlIsa;

constexpr int kH = 2, kHQ = 6, kP = 8;

// A ggml tensor of one type: f16 halves (stored as floats of f16 values) or f32.
struct Tensor {
  bool f16 = false;
  std::vector<float> x;
};

float as_type(bool f16, float v) { return f16 ? fp16_to_fp32(fp32_to_fp16(v)) : v; }

// ggml_compute_forward_mul_mat of src0 [m rows of k] and src1 [n columns of k] -> dst [n, m]:
// src1 converted to src0's type (vec_dot_type), tinyBLAS where llamafile_sgemm takes the product
// (for f32, only when src1 was contiguous: no converted copy exists), else vec_dot per element.
std::vector<float> mul_mat(GgmlIsa isa, const Tensor& src0, int64_t m, const std::vector<float>& src1, int64_t n,
                           int64_t k, bool src1_contiguous) {
  const bool tiles = (src0.f16 || src1_contiguous) && ggml_arith::tiles_take(isa, m, n, k);
  std::vector<float> dst(size_t(n * m));
  std::vector<uint16_t> a16(static_cast<size_t>(k)), b16(static_cast<size_t>(k));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      const float* a = src0.x.data() + i * k;
      const float* b = src1.data() + j * k;
      float r;
      if (src0.f16) {
        for (int64_t e = 0; e < k; ++e) {
          a16[size_t(e)] = fp32_to_fp16(a[e]);  // exact: a holds f16 values
          b16[size_t(e)] = fp32_to_fp16(b[e]);  // the vec_dot_type conversion
        }
        r = tiles ? ggml_arith::tile_dot_f16(isa, k, a16.data(), b16.data()) : ggml_arith::vec_dot_f16(isa, k, a16.data(), b16.data());
      } else {
        r = tiles ? ggml_arith::tile_dot_f32(isa, k, a, b) : ggml_arith::vec_dot_f32(isa, k, a, b);
      }
      dst[size_t(j * m + i)] = r;
    }
  return dst;
}

struct Case {
  bool f16;
  GgmlIsa isa;
  int head_dim;
  int64_t window = 0;
  float softcap = 0;
  float scale = 0;
};

// llama.cpp's attention output [T, kHQ, D] for one sequence whose cache holds k, v ([L, kH, D],
// the values as given: the composition rounds them to the cache type) with the last T positions new.
std::vector<float> llamacpp_rows(const Case& c, const std::vector<float>& k, const std::vector<float>& v, int64_t L,
                                 const float* q, int64_t T) {
  const int D = c.head_dim;
  const int64_t n_kv = (L + 31) / 32 * 32;
  // The KQ mask [T, n_kv] (llama_set_inputs): -inf for later cells, outside the window, unused.
  std::vector<float> mask(size_t(T * n_kv), -INFINITY);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t pos = L - T + t;
    for (int64_t cell = 0; cell < L; ++cell)
      if (cell <= pos && !(c.window > 0 && pos - cell >= c.window)) mask[size_t(t * n_kv + cell)] = 0.0f;
  }
  std::vector<float> out(size_t(T * kHQ * D));
  for (int hq = 0; hq < kHQ; ++hq) {
    const int h = hq / (kHQ / kH);
    Tensor kview{c.f16, std::vector<float>(size_t(n_kv * D), 0.0f)}, vview{c.f16, std::vector<float>(size_t(n_kv * D), 0.0f)};
    for (int64_t cell = 0; cell < L; ++cell)
      for (int d = 0; d < D; ++d) {
        const size_t at = (size_t(cell) * kH + size_t(h)) * size_t(D) + size_t(d);
        kview.x[size_t(cell * D + d)] = as_type(c.f16, k[at]);
        vview.x[size_t(d * n_kv + cell)] = as_type(c.f16, v[at]);  // the transposed V cache
      }
    std::vector<float> qh(size_t(T * D));
    for (int64_t t = 0; t < T; ++t) std::copy_n(q + (t * kHQ + hq) * D, D, qh.begin() + t * D);
    // q is permuted (non-contiguous) unless one token or one head.
    std::vector<float> kq = mul_mat(c.isa, kview, n_kv, qh, T, D, T == 1);
    if (c.softcap > 0) {
      for (float& x : kq) x *= 1.0f / c.softcap;
      for (float& x : kq) x = std::tanh(x);
      for (float& x : kq) x *= c.softcap;
    }
    const float scale = c.scale != 0 ? c.scale : 1.0f / std::sqrt(float(D));
    for (int64_t t = 0; t < T; ++t)
      ggml_arith::soft_max_row(c.isa, n_kv, kq.data() + t * n_kv, kq.data() + t * n_kv, scale, mask.data() + t * n_kv);
    const std::vector<float> kqv = mul_mat(c.isa, vview, D, kq, T, n_kv, true);
    for (int64_t t = 0; t < T; ++t) std::copy_n(kqv.begin() + t * D, D, out.begin() + (t * kHQ + hq) * D);
  }
  return out;
}

AttentionOptions options(const Case& c) {
  return {.scale = c.scale, .softcap = c.softcap, .window = c.window, .ggml = c.isa};
}

std::string name(const Case& c) {
  return fmt::format("{} {} D {} window {} softcap {} scale {}", c.f16 ? "f16" : "f32",
                     c.isa == GgmlIsa::kAvx512 ? "avx512" : "avx2", c.head_dim, c.window, c.softcap, c.scale);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (bool f16 : {true, false})
    for (GgmlIsa isa : {GgmlIsa::kAvx512, GgmlIsa::kAvx2})
      for (int D : {64, 40}) {  // 64: tinyBLAS takes the K product of several tokens; 40: vec_dot
        out.push_back({f16, isa, D});
        out.push_back({f16, isa, D, 20, 30.0f});
        out.push_back({f16, isa, D, 0, 0.0f, 1.0f});  // gemma2 / phi3: q scaled before, softmax scale 1
      }
  return out;
}

PagedKvCache make_cache(bool f16, int D, int64_t pages = 96) {
  auto made = PagedKvCache::create({.kv_heads = kH, .head_dim = D, .page_size = kP, .num_pages = pages,
                                    .layer_dtypes = {f16 ? KvDType::kF16 : KvDType::kF32}});
  EXPECT_TRUE(made);
  return std::move(*made);
}

TEST(AttentionGgml, DecodeIsLlamaCppsBitsAcrossThePadding) {
  const std::vector<int64_t> lens = {1, 31, 32, 33, 64, 65, 97};
  auto pool = ThreadPool::create({.threads = 3, .pin = false});
  ASSERT_TRUE(pool);
  for (const Case& c : cases()) {
    PagedKvCache cache = make_cache(c.f16, c.head_dim);
    const std::vector<SeqData> data = random_sequences(lens, kH, c.head_dim, 41);
    const std::vector<int> ids = fill(cache, 0, data, lens);
    const std::vector<float> q = random_values(lens.size() * kHQ * size_t(c.head_dim), 42, 2.0f);
    std::vector<float> got(q.size()), pooled(q.size());
    ASSERT_TRUE(decode(cache, 0, ids, q.data(), kHQ, got.data(), options(c)));
    ASSERT_TRUE(decode(cache, 0, ids, q.data(), kHQ, pooled.data(), options(c), pool->get()));
    EXPECT_EQ(std::memcmp(got.data(), pooled.data(), got.size() * sizeof(float)), 0) << name(c);
    for (size_t b = 0; b < lens.size(); ++b) {
      const size_t row = size_t(kHQ) * size_t(c.head_dim);
      const std::vector<float> want = llamacpp_rows(c, data[b].k, data[b].v, lens[b], q.data() + b * row, 1);
      EXPECT_EQ(std::memcmp(got.data() + b * row, want.data(), row * sizeof(float)), 0) << name(c) << " length " << lens[b];
    }
  }
}

TEST(AttentionGgml, PrefillIsLlamaCppsBitsPerSequence) {
  // Two sequences in one call, each its own product: 3 cached + 30 new (crossing 32), 40 + 27 (crossing 64).
  const std::vector<int64_t> cached = {3, 40}, fresh = {30, 27};
  auto pool = ThreadPool::create({.threads = 3, .pin = false});
  ASSERT_TRUE(pool);
  for (const Case& c : cases()) {
    PagedKvCache cache = make_cache(c.f16, c.head_dim);
    const std::vector<SeqData> old = random_sequences(cached, kH, c.head_dim, 51);
    const std::vector<int> ids = fill(cache, 0, old, cached);
    const std::vector<SeqData> more = random_sequences(fresh, kH, c.head_dim, 52);
    std::vector<float> k, v;  // the new tokens, sequences one after another
    for (const SeqData& s : more) {
      k.insert(k.end(), s.k.begin(), s.k.end());
      v.insert(v.end(), s.v.begin(), s.v.end());
    }
    const size_t row = size_t(kHQ) * size_t(c.head_dim);
    const std::vector<float> q = random_values(size_t(fresh[0] + fresh[1]) * row, 53, 2.0f);
    std::vector<float> got(q.size());
    ASSERT_TRUE(prefill(cache, 0, ids, fresh, q.data(), k.data(), v.data(), kHQ, got.data(), options(c), pool->get()));
    size_t at = 0;
    for (size_t b = 0; b < cached.size(); ++b) {
      std::vector<float> all_k = old[b].k, all_v = old[b].v;
      all_k.insert(all_k.end(), more[b].k.begin(), more[b].k.end());
      all_v.insert(all_v.end(), more[b].v.begin(), more[b].v.end());
      const int64_t L = cached[b] + fresh[b];
      const std::vector<float> want = llamacpp_rows(c, all_k, all_v, L, q.data() + at, fresh[b]);
      EXPECT_EQ(std::memcmp(got.data() + at, want.data(), want.size() * sizeof(float)), 0) << name(c) << " sequence " << b;
      at += want.size();
    }
  }
}

TEST(AttentionGgml, TheIsaAndTheModeChangeTheBits) {
  // Evidence the option is the path taken: the two ISAs' sums part somewhere, and both part from
  // recur's own kCacheType arithmetic on the same cache.
  const std::vector<int64_t> lens = {97, 130};
  PagedKvCache cache = make_cache(true, 64);
  const std::vector<int> ids = fill(cache, 0, random_sequences(lens, kH, 64, 61), lens);
  const std::vector<float> q = random_values(lens.size() * kHQ * 64, 62, 2.0f);
  std::vector<float> a512(q.size()), a2(q.size()), own(q.size());
  ASSERT_TRUE(decode(cache, 0, ids, q.data(), kHQ, a512.data(), {.ggml = GgmlIsa::kAvx512}));
  ASSERT_TRUE(decode(cache, 0, ids, q.data(), kHQ, a2.data(), {.ggml = GgmlIsa::kAvx2}));
  ASSERT_TRUE(decode(cache, 0, ids, q.data(), kHQ, own.data(), {.isa = Isa::kScalar, .operands = AttentionOperands::kCacheType}));
  EXPECT_NE(std::memcmp(a512.data(), a2.data(), q.size() * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(a512.data(), own.data(), q.size() * sizeof(float)), 0);
  // Yet all three are the same attention to fp16 rounding.
  for (size_t i = 0; i < q.size(); ++i) {
    EXPECT_NEAR(a512[i], own[i], 2e-2f) << i;
    EXPECT_NEAR(a2[i], own[i], 2e-2f) << i;
  }
}

TEST(AttentionGgml, OtherCacheTypesKeepTheirPaths) {
  const std::vector<int64_t> lens = {5, 30};
  for (KvDType t : {KvDType::kBF16, KvDType::kI8}) {
    auto made = PagedKvCache::create({.kv_heads = kH, .head_dim = 40, .page_size = kP, .num_pages = 16, .layer_dtypes = {t}});
    ASSERT_TRUE(made);
    const std::vector<int> ids = fill(*made, 0, random_sequences(lens, kH, 40, 71), lens);
    const std::vector<float> q = random_values(lens.size() * kHQ * 40, 72);
    std::vector<float> a(q.size()), b(q.size());
    ASSERT_TRUE(decode(*made, 0, ids, q.data(), kHQ, a.data(), {.split_k = 2}));
    ASSERT_TRUE(decode(*made, 0, ids, q.data(), kHQ, b.data(), {.split_k = 2, .ggml = GgmlIsa::kAvx512}));
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << kv_dtype_name(t);
  }
}

}  // namespace
}  // namespace recur::kernels::attention
