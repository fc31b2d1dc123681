// Test helpers for the attention kernels: random K/V/q, a cache filled round-robin, the float64
// reference over what the cache stores (read back) or over the unquantized values, and the
// error ratio |got - want| / (rtol * magnitude).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/attention/attention_reference.h"
#include "kernels/attention/kv_cache.h"

namespace recur::kernels::attention::testing {

inline std::vector<float> random_values(size_t n, uint64_t seed, float stddev = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

// Per-sequence dense K/V, [len, kv_heads, head_dim] each.
struct SeqData {
  std::vector<float> k, v;
};

inline std::vector<SeqData> random_sequences(const std::vector<int64_t>& lens, int kv_heads, int head_dim, uint64_t seed) {
  std::vector<SeqData> out;
  for (size_t b = 0; b < lens.size(); ++b) {
    const size_t n = size_t(lens[b]) * size_t(kv_heads) * size_t(head_dim);
    // Keys with a per-head offset so scores are peaked, as in real models.
    out.push_back({random_values(n, seed * 1000 + b * 2, 1.5f), random_values(n, seed * 1000 + b * 2 + 1)});
  }
  return out;
}

// Appends every sequence's tokens to `layer`, round-robin across sequences (interleaved pages).
inline std::vector<int> fill(PagedKvCache& cache, int layer, const std::vector<SeqData>& data, const std::vector<int64_t>& lens,
                             std::vector<int> ids = {}) {
  const size_t row = size_t(cache.config().kv_heads) * size_t(cache.config().head_dim);
  if (ids.empty())
    for (size_t b = 0; b < data.size(); ++b) ids.push_back(*cache.add_sequence());
  const int64_t longest = *std::max_element(lens.begin(), lens.end());
  for (int64_t t = 0; t < longest; ++t)
    for (size_t b = 0; b < data.size(); ++b)
      if (t < lens[b]) {
        auto s = cache.append(ids[b], layer, std::span<const float>(data[b].k.data() + size_t(t) * row, row),
                              std::span<const float>(data[b].v.data() + size_t(t) * row, row));
        EXPECT_TRUE(s) << s.error().to_string();
      }
  return ids;
}

// The stored (dequantized) K/V of a sequence's first `len` tokens, as double.
inline void read_back(const PagedKvCache& cache, int layer, int seq, int64_t len, std::vector<double>& k, std::vector<double>& v) {
  const size_t row = size_t(cache.config().kv_heads) * size_t(cache.config().head_dim);
  std::vector<float> kr(row), vr(row);
  k.assign(size_t(len) * row, 0.0);
  v.assign(size_t(len) * row, 0.0);
  for (int64_t t = 0; t < len; ++t) {
    auto s = cache.read(seq, layer, t, kr, vr);
    EXPECT_TRUE(s) << s.error().to_string();
    std::copy(kr.begin(), kr.end(), k.begin() + t * int64_t(row));
    std::copy(vr.begin(), vr.end(), v.begin() + t * int64_t(row));
  }
}

// Reference rows of one query token: q [q_heads, head_dim] against n tokens of k/v.
inline void reference_token(const std::vector<double>& q, size_t q_off, const std::vector<double>& k, const std::vector<double>& v,
                            int64_t n, int q_heads, int kv_heads, int head_dim, std::vector<double>& out,
                            std::vector<double>& mag, size_t out_off) {
  const int G = q_heads / kv_heads;
  for (int h = 0; h < q_heads; ++h) {
    const size_t kvo = size_t(h / G) * size_t(head_dim);
    reference_attention(q.data() + q_off + size_t(h) * size_t(head_dim), k.data() + kvo, v.data() + kvo, n,
                        int64_t(kv_heads) * head_dim, head_dim, 1.0 / std::sqrt(double(float(head_dim))),
                        out.data() + out_off + size_t(h) * size_t(head_dim), mag.data() + out_off + size_t(h) * size_t(head_dim));
  }
}

// max |got - want| / (rtol * mag); <= 1 passes.
inline double worst_ratio(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& mag,
                          double rtol, size_t* where = nullptr) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double r = std::fabs(double(got[i]) - want[i]) / (rtol * mag[i] + 1e-30);
    if (!(r <= worst)) {
      worst = std::isnan(r) ? INFINITY : r;
      if (where) *where = i;
    }
  }
  return worst;
}

// Relative error of the whole output against an unquantized reference: max |got - want| / max |want|.
inline double max_rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::fabs(double(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return err / scale;
}

inline const KvDType kAllDTypes[] = {KvDType::kF32, KvDType::kBF16, KvDType::kFP8E4M3, KvDType::kI8, KvDType::kF16};

// docs/attention.md: the kernel against the reference over the stored cache.
inline constexpr double kKernelRtol = 1e-5;
// docs/attention.md: max |err| / max |out| against the unquantized reference (normal data).
inline double end_to_end_tolerance(KvDType t) {
  switch (t) {
    case KvDType::kF32: return 2e-6;
    case KvDType::kBF16: return 1e-2;
    case KvDType::kFP8E4M3: return 1.2e-1;
    case KvDType::kI8: return 3e-2;
    case KvDType::kF16: return 2e-3;
  }
  return 0;
}

}  // namespace recur::kernels::attention::testing
