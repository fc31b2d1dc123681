#include "engine/layers.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/thread_pool.h"

namespace recur {

void rmsnorm(float* out, const float* x, const Weight& w, int n, float eps, float* scratch) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  float inv = 1.0f / std::sqrt(float(ss / n) + eps);
  w.dequantize_row(0, scratch);
  for (int i = 0; i < n; ++i) out[i] = x[i] * inv * scratch[i];
}

void rope_cos_sin(int head_dim, int pos, float theta, float* cos_sin) {
  for (int i = 0; i < head_dim; i += 2) {
    float freq = std::pow(theta, -float(i) / float(head_dim));
    float a = float(pos) * freq;
    cos_sin[i] = std::cos(a);
    cos_sin[i + 1] = std::sin(a);
  }
}

void rope_rotate(float* v, int heads, int head_dim, const float* cos_sin) {
  for (int h = 0; h < heads; ++h) {
    float* x = v + h * head_dim;
    for (int i = 0; i < head_dim; i += 2) {
      float c = cos_sin[i], s = cos_sin[i + 1];
      float x0 = x[i], x1 = x[i + 1];
      x[i] = x0 * c - x1 * s;
      x[i + 1] = x0 * s + x1 * c;
    }
  }
}

void rope_interleaved(float* v, int heads, int head_dim, int pos, float theta) {
  thread_local std::vector<float> cos_sin;
  cos_sin.resize(size_t(head_dim));
  rope_cos_sin(head_dim, pos, theta, cos_sin.data());
  rope_rotate(v, heads, head_dim, cos_sin.data());
}

void attention_decode(const float* q_all, const float* keys, const float* values, int heads, int kv_heads,
                      int head_dim, int n_tokens, float* out_all, float* att_scratch, ThreadPool* pool, int group,
                      int q_head_offset, int kv_offset) {
  const int kv_dim = kv_heads * head_dim;
  if (group == 0) group = heads / kv_heads;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  auto run = [&](int64_t h0, int64_t h1, int) {
    for (int64_t h = h0; h < h1; ++h) {
      const float* q = q_all + h * head_dim;
      float* att = att_scratch + h * n_tokens;
      const int64_t kvh = (h + q_head_offset) / group - kv_offset;
      float max_score = -INFINITY;
      for (int t = 0; t < n_tokens; ++t) {
        const float* k = keys + size_t(t) * kv_dim + kvh * head_dim;
        float s = 0;
        for (int i = 0; i < head_dim; ++i) s += q[i] * k[i];
        att[t] = s * scale;
        max_score = std::max(max_score, att[t]);
      }
      float sum = 0;
      for (int t = 0; t < n_tokens; ++t) sum += (att[t] = std::exp(att[t] - max_score));
      float* out = out_all + h * head_dim;
      std::fill(out, out + head_dim, 0.0f);
      for (int t = 0; t < n_tokens; ++t) {
        const float* v = values + size_t(t) * kv_dim + kvh * head_dim;
        float a = att[t] / sum;
        for (int i = 0; i < head_dim; ++i) out[i] += a * v[i];
      }
    }
  };
  if (pool != nullptr) pool->parallel_for(heads, run);
  else run(0, heads, 0);
}

void swiglu(float* gate, const float* up, int n) {
  for (int i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

Route route_top_k(std::span<const float> logits, int k) {
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[size_t(a)] > logits[size_t(b)]; });
  Route r;
  float max_logit = logits[size_t(order[0])];
  double total = 0;
  for (int i = 0; i < k; ++i) {
    r.experts.push_back(order[size_t(i)]);
    float p = std::exp(logits[size_t(order[size_t(i)])] - max_logit);
    r.weights.push_back(p);
    total += p;
  }
  // Softmax over all experts, then renormalizing the top k, equals a softmax over the top k.
  for (float& w : r.weights) w = float(w / total);
  return r;
}

}  // namespace recur
