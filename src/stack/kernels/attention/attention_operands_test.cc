// AttentionOperands::kCacheType: on f16 and bf16 caches, decode and prefill follow ggml's non-flash
// attention arithmetic (q and the normalized softmax weights rounded to the cache type, the
// softmax whole), checked against a test-local emulation of it, for every ISA path the machine
// runs, with windows, soft-capping and context splits; f32 and int8 layers are left as they are.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_test_util.h"

namespace recur::kernels::attention {
namespace {

using namespace testing;

float rounded(KvDType t, float x) { return t == KvDType::kF16 ? fp16_to_fp32(fp32_to_fp16(x)) : bf16_to_fp32(fp32_to_bf16(x)); }

// One unit in the last place of p in type t (f16: 10 stored mantissa bits, bf16: 7).
double ulp(KvDType t, float p) {
  if (p == 0) return 0;
  return std::ldexp(1.0, std::ilogb(p) - (t == KvDType::kF16 ? 10 : 7));
}

// One query row as ggml computes it over a cache of type t holding k, v ([n, H, D], as stored):
// q rounded, scores (q16 * scale) . k, soft-capped, softmax with a double sum, weights rounded,
// their sum with V. Positions [lo, hi) of kv head h. `flip` gets, per output, the most one
// weight's rounding the other way can move it (max_j ulp(p_j) |v_j|): an exp that differs from
// the kernel's in the last fp32 bit can land a weight on the other side of a rounding boundary.
std::vector<double> ggml_row(KvDType t, const float* q, const std::vector<double>& k, const std::vector<double>& v,
                             int64_t lo, int64_t hi, int H, int D, int h, float scale, float softcap,
                             std::vector<double>* flip = nullptr) {
  std::vector<float> qs(static_cast<size_t>(D)), s;
  for (int i = 0; i < D; ++i) qs[size_t(i)] = rounded(t, q[i]) * scale;
  float m = -INFINITY;
  for (int64_t j = lo; j < hi; ++j) {
    double dot = 0;
    for (int i = 0; i < D; ++i) dot += double(qs[size_t(i)]) * k[(size_t(j) * size_t(H) + size_t(h)) * size_t(D) + size_t(i)];
    float sj = float(dot);
    if (softcap > 0) sj = softcap * std::tanh(sj / softcap);
    s.push_back(sj);
    m = std::max(m, sj);
  }
  double sum = 0;
  for (float& e : s) sum += (e = std::exp(e - m));
  const float inv = float(1.0 / sum);
  std::vector<double> out(size_t(D), 0.0);
  if (flip) flip->assign(size_t(D), 0.0);
  for (int64_t j = lo; j < hi; ++j) {
    const float p = rounded(t, s[size_t(j - lo)] * inv);
    for (int i = 0; i < D; ++i) {
      const double vj = v[(size_t(j) * size_t(H) + size_t(h)) * size_t(D) + size_t(i)];
      out[size_t(i)] += double(p) * vj;
      if (flip) (*flip)[size_t(i)] = std::max((*flip)[size_t(i)], ulp(t, p) * std::fabs(vj));
    }
  }
  return out;
}

std::vector<Isa> isas() {
  std::vector<Isa> out;
  for (Isa i : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (i <= active_isa()) out.push_back(i);
    else std::printf("[ SKIPPED  ] isa %s: above this CPU's %s\n", std::string(isa_name(i)).c_str(), std::string(isa_name(active_isa())).c_str());
  return out;
}

// How far outputs are from the emulation: the worst error beyond one weight's flip (in units of
// max |want|), and the share of outputs off by more than fp32 noise (2e-6 max |want|).
struct Distance {
  double beyond_flip = 0;
  double share_off = 0;
};
Distance distance(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& flip) {
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  Distance d;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(double(got[i]) - want[i]);
    d.beyond_flip = std::max(d.beyond_flip, (e - flip[i]) / scale);
    d.share_off += e > 2e-6 * scale ? 1.0 / double(got.size()) : 0.0;
  }
  return d;
}

constexpr int kH = 2, kHQ = 6, kD = 40, kP = 8;

TEST(AttentionOperands, DecodeFollowsGgmlsArithmeticOnF16AndBf16Caches) {
  const std::vector<int64_t> lens = {1, 7, 37, 70};
  for (KvDType t : {KvDType::kF16, KvDType::kBF16})
    for (Isa isa : isas())
      for (int64_t window : {0, 20})
        for (float softcap : {0.0f, 30.0f}) {
          auto made = PagedKvCache::create({.kv_heads = kH, .head_dim = kD, .page_size = kP, .num_pages = 64, .layer_dtypes = {t}});
          ASSERT_TRUE(made);
          PagedKvCache& cache = *made;
          const std::vector<int> ids = fill(cache, 0, random_sequences(lens, kH, kD, 11), lens);
          const std::vector<float> q = random_values(lens.size() * kHQ * kD, 12, 2.0f);
          const AttentionOptions f32{.isa = isa, .softcap = softcap, .window = window};
          AttentionOptions o = f32;
          o.operands = AttentionOperands::kCacheType;
          std::vector<float> got(q.size()), split(q.size()), plain(q.size());
          ASSERT_TRUE(decode(cache, 0, ids, q.data(), kHQ, got.data(), o));
          o.split_k = 4;  // one split regardless: the softmax is normalized over the whole context
          ASSERT_TRUE(decode(cache, 0, ids, q.data(), kHQ, split.data(), o));
          ASSERT_TRUE(decode(cache, 0, ids, q.data(), kHQ, plain.data(), f32));
          EXPECT_EQ(std::memcmp(got.data(), split.data(), got.size() * sizeof(float)), 0);
          std::vector<double> want(q.size()), flip(q.size()), row_flip;
          for (size_t b = 0; b < lens.size(); ++b) {
            std::vector<double> k, v;
            read_back(cache, 0, ids[b], lens[b], k, v);
            const int64_t lo = window > 0 ? std::max<int64_t>(0, lens[b] - window) : 0;
            for (int hq = 0; hq < kHQ; ++hq) {
              const size_t off = (b * kHQ + size_t(hq)) * kD;
              const std::vector<double> row = ggml_row(t, q.data() + off, k, v, lo, lens[b], kH, kD, hq / (kHQ / kH),
                                                       1.0f / std::sqrt(float(kD)), softcap, &row_flip);
              std::copy(row.begin(), row.end(), want.begin() + int64_t(off));
              std::copy(row_flip.begin(), row_flip.end(), flip.begin() + int64_t(off));
            }
          }
          const Distance d = distance(got, want, flip), d_plain = distance(plain, want, flip);
          const std::string where = fmt::format("{} isa {} window {} softcap {}", kv_dtype_name(t), isa_name(isa), window, softcap);
          EXPECT_LE(d.beyond_flip, 2e-6) << where;
          EXPECT_LE(d.share_off, 0.05) << where;
          // fp32 operands miss the rounding almost everywhere: the check separates the two.
          EXPECT_GE(d_plain.share_off, 0.5) << where;
        }
}

TEST(AttentionOperands, PrefillFollowsGgmlsArithmeticWithCausalRowsAndWindows) {
  for (KvDType t : {KvDType::kF16, KvDType::kBF16})
    for (Isa isa : isas())
      for (int64_t window : {0, 9}) {
        auto made = PagedKvCache::create({.kv_heads = kH, .head_dim = kD, .page_size = kP, .num_pages = 64, .layer_dtypes = {t}});
        ASSERT_TRUE(made);
        PagedKvCache& cache = *made;
        const std::vector<int64_t> cached = {3}, fresh = {21};
        const std::vector<int> ids = fill(cache, 0, random_sequences(cached, kH, kD, 21), cached);
        const std::vector<SeqData> more = random_sequences(fresh, kH, kD, 22);
        const std::vector<float> q = random_values(size_t(fresh[0]) * kHQ * kD, 23, 2.0f);
        AttentionOptions o{.isa = isa, .window = window, .operands = AttentionOperands::kCacheType};
        std::vector<float> got(q.size());
        ASSERT_TRUE(prefill(cache, 0, ids, fresh, q.data(), more[0].k.data(), more[0].v.data(), kHQ, got.data(), o));
        std::vector<double> k, v, want(q.size()), flip(q.size()), row_flip;
        read_back(cache, 0, ids[0], cached[0] + fresh[0], k, v);
        for (int64_t j = 0; j < fresh[0]; ++j) {
          const int64_t hi = cached[0] + j + 1, lo = window > 0 ? std::max<int64_t>(0, hi - window) : 0;
          for (int hq = 0; hq < kHQ; ++hq) {
            const size_t off = (size_t(j) * kHQ + size_t(hq)) * kD;
            const std::vector<double> row = ggml_row(t, q.data() + off, k, v, lo, hi, kH, kD, hq / (kHQ / kH),
                                                     1.0f / std::sqrt(float(kD)), 0.0f, &row_flip);
            std::copy(row.begin(), row.end(), want.begin() + int64_t(off));
            std::copy(row_flip.begin(), row_flip.end(), flip.begin() + int64_t(off));
          }
        }
        const Distance d = distance(got, want, flip);
        EXPECT_LE(d.beyond_flip, 2e-6) << kv_dtype_name(t) << " isa " << isa_name(isa) << " window " << window;
        EXPECT_LE(d.share_off, 0.05) << kv_dtype_name(t) << " isa " << isa_name(isa) << " window " << window;
      }
}

TEST(AttentionOperands, OtherCacheTypesKeepTheirBits) {
  const std::vector<int64_t> lens = {5, 30};
  for (KvDType t : {KvDType::kF32, KvDType::kI8, KvDType::kFP8E4M3}) {
    auto made = PagedKvCache::create({.kv_heads = kH, .head_dim = kD, .page_size = kP, .num_pages = 16, .layer_dtypes = {t}});
    ASSERT_TRUE(made);
    const std::vector<int> ids = fill(*made, 0, random_sequences(lens, kH, kD, 31), lens);
    const std::vector<float> q = random_values(lens.size() * kHQ * kD, 32);
    std::vector<float> a(q.size()), b(q.size());
    ASSERT_TRUE(decode(*made, 0, ids, q.data(), kHQ, a.data(), {.split_k = 2}));
    ASSERT_TRUE(decode(*made, 0, ids, q.data(), kHQ, b.data(), {.split_k = 2, .operands = AttentionOperands::kCacheType}));
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << kv_dtype_name(t);
  }
}

}  // namespace
}  // namespace recur::kernels::attention
