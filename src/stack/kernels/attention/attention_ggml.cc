// AttentionOptions::ggml (attention.h): llama.cpp c392e50's non-flash attention (llm_build_kqv) on
// an f16 or f32 layer, in ggml_arith's arithmetic. Per sequence, its T new tokens form one product
// over n_kv cells (the sequence's cache length padded to 32, cell c = position c):
//   kq  = K . q       per (token, cell): q rounded to the cache type, ggml_arith's tile or vec dot
//   kq  = cap * tanhf(kq * (1 / cap))   when soft-capped
//   w   = soft_max_row(kq, scale, mask) masked cells (later positions, outside the window, the
//                                       padding) are -inf, so exact zeros
//   out = V^T . w     per (token, dim): w rounded to the cache type, dotted over the n_kv cells
// Each item (sequence, kv head) computes its rows whole on one thread: the bits do not depend on
// the pool.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/convert.h"
#include "kernels/attention/attention_internal.h"
#include "kernels/ggml_arith/ggml_arith.h"

namespace recur::kernels::attention::internal {

namespace {

using ggml_arith::GgmlIsa;

// ggml pads the cells attention reads to a multiple of this (llama.cpp's kv_self.n without flash attention).
constexpr int64_t kCellPad = 32;

// One sequence's part of the call.
struct SeqPart {
  int seq_index;
  int64_t length;  // cache length after this forward's tokens
  int64_t tokens;  // new tokens (the product's n)
  int64_t row;     // first row of q / out
};

// The cache type's element as the dot reads it: f16 halves stay halves; f32 floats.
template <class E>
E to_operand(float x);
template <>
uint16_t to_operand<uint16_t>(float x) { return fp32_to_fp16(x); }
template <>
float to_operand<float>(float x) { return x; }

float dot(GgmlIsa isa, bool tiles, int64_t n, const uint16_t* a, const uint16_t* b) {
  return tiles ? ggml_arith::tile_dot_f16(isa, n, a, b) : ggml_arith::vec_dot_f16(isa, n, a, b);
}
float dot(GgmlIsa isa, bool tiles, int64_t n, const float* a, const float* b) {
  return tiles ? ggml_arith::tile_dot_f32(isa, n, a, b) : ggml_arith::vec_dot_f32(isa, n, a, b);
}

// The rows of one (sequence, kv head): K gathered as [n_kv, D], V transposed as [D, n_kv] (the
// padding cells zero, as llama.cpp's cleared cache), then each query head of the group and token.
template <class E>
void attend_item(const LayerView& view, const int32_t* pages, const SeqPart& part, int kv_head, int group,
                 int q_heads, const float* q, float* out, const AttentionOptions& o, GgmlIsa isa) {
  const int D = view.head_dim, P = view.page_size;
  const int64_t T = part.tokens, L = part.length, n_kv = (L + kCellPad - 1) / kCellPad * kCellPad;
  const int64_t start = L - T;  // position of the first new token
  thread_local std::vector<E> k, vt, qe, we;
  thread_local std::vector<float> kq, mask, w;
  k.assign(size_t(n_kv * D), E{});
  vt.assign(size_t(n_kv * D), E{});
  const E* kstore = reinterpret_cast<const E*>(view.k);
  const E* vstore = reinterpret_cast<const E*>(view.v);
  for (int64_t c = 0; c < L; ++c) {
    const size_t at = ((size_t(pages[c / P]) * size_t(view.kv_heads) + size_t(kv_head)) * size_t(P) + size_t(c % P)) * size_t(D);
    std::copy_n(kstore + at, D, k.begin() + c * D);
    for (int d = 0; d < D; ++d) vt[size_t(d * n_kv + c)] = vstore[at + size_t(d)];
  }
  // ggml_compute_forward_mul_mat's choice per product (ggml_arith::tiles_take). An f32 cache's K
  // product meets the permuted, non-contiguous q, which tinyBLAS only takes with one head (or one
  // token); f16 rounds q into a contiguous copy first.
  const bool f16 = sizeof(E) == 2;
  const bool k_tiles = (f16 || q_heads == 1) && ggml_arith::tiles_take(isa, n_kv, T, D);
  const bool v_tiles = ggml_arith::tiles_take(isa, D, T, n_kv);
  const float scale = softmax_scale(o, D);
  qe.resize(size_t(D));
  we.resize(size_t(n_kv));
  kq.resize(size_t(n_kv));
  mask.resize(size_t(n_kv));
  w.resize(size_t(n_kv));
  for (int g = 0; g < group; ++g) {
    const int hq = kv_head * group + g;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t pos = start + t;
      const size_t off = (size_t(part.row + t) * size_t(q_heads) + size_t(hq)) * size_t(D);
      for (int d = 0; d < D; ++d) qe[size_t(d)] = to_operand<E>(q[off + size_t(d)]);
      for (int64_t c = 0; c < n_kv; ++c) {
        kq[size_t(c)] = dot(isa, k_tiles, D, k.data() + c * D, qe.data());
        const bool seen = c <= pos && (o.window <= 0 || pos - c < o.window);
        mask[size_t(c)] = seen ? 0.0f : -INFINITY;
      }
      if (o.softcap > 0) {
        // ggml_scale by 1 / cap, ggml_tanh, ggml_scale by cap: three roundings.
        const float inv = 1.0f / o.softcap;
        for (float& x : kq) x = std::tanh(x * inv) * o.softcap;
      }
      ggml_arith::soft_max_row(isa, n_kv, w.data(), kq.data(), scale, mask.data());
      for (int64_t c = 0; c < n_kv; ++c) we[size_t(c)] = to_operand<E>(w[size_t(c)]);
      for (int d = 0; d < D; ++d) out[off + size_t(d)] = dot(isa, v_tiles, n_kv, vt.data() + int64_t(d) * n_kv, we.data());
    }
  }
}

}  // namespace

bool uses_ggml(const AttentionOptions& o, KvDType t) {
  return o.ggml.has_value() && (t == KvDType::kF16 || t == KvDType::kF32);
}

Status ggml_attention(const PagedKvCache& cache, int layer, std::span<const int> seqs, std::span<const int64_t> tokens,
                      const float* q, int q_heads, float* out, const AttentionOptions& o, ThreadPool* pool) {
  const LayerView view = cache.layer_view(layer);
  const int H = view.kv_heads, G = q_heads / H;
  std::vector<SeqPart> parts;
  std::vector<std::span<const int32_t>> tables(seqs.size());
  int64_t row = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    RECUR_ASSIGN_OR_RETURN(const int64_t length, cache.length(seqs[i], layer));
    RECUR_ASSIGN_OR_RETURN(tables[i], cache.pages(seqs[i]));
    if (tokens[i] > 0) parts.push_back({int(i), length, tokens[i], row});
    row += tokens[i];
  }
  const GgmlIsa isa = *o.ggml;
  const bool f16 = view.dtype == KvDType::kF16;
  auto run = [&](int64_t item, int) {
    const SeqPart& part = parts[size_t(item / H)];
    const int h = int(item % H);
    const int32_t* pages = tables[size_t(part.seq_index)].data();
    if (f16) attend_item<uint16_t>(view, pages, part, h, G, q_heads, q, out, o, isa);
    else attend_item<float>(view, pages, part, h, G, q_heads, q, out, o, isa);
  };
  const int64_t items = int64_t(parts.size()) * H;
  if (pool != nullptr) pool->parallel_claim(items, run);
  else
    for (int64_t i = 0; i < items; ++i) run(i, 0);
  return ok_status();
}

}  // namespace recur::kernels::attention::internal
