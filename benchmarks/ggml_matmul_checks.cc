// ggml_arith_checks.h: mul_mat (vec_dot and tinyBLAS paths) and the non-flash attention core of
// llama.cpp's llm_build_kqv against ggml's graphs.
#include <fmt/core.h>

#include <cmath>

#include "core/convert.h"
#include "ggml_arith_checks.h"

namespace recur::ggml_graph {

using ggml_arith::GgmlIsa;

namespace {

// recur's ggml mul_mat: out[t][r] = w[r] . x[t] for m rows of k, n tokens, through tinyBLAS's dot
// or vec_dot's as ggml picks (ggml_arith::tiles_take).
template <class T>
std::vector<float> recur_mul_mat(GgmlIsa isa, int64_t m, int64_t n, int64_t k, const T* w, const T* x) {
  std::vector<float> out(size_t(m * n));
  const bool tiles = ggml_arith::tiles_take(isa, m, n, k);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < m; ++r) {
      const T* a = w + r * k;
      const T* b = x + t * k;
      if constexpr (std::is_same_v<T, uint16_t>)
        out[size_t(t * m + r)] = tiles ? ggml_arith::tile_dot_f16(isa, k, a, b) : ggml_arith::vec_dot_f16(isa, k, a, b);
      else
        out[size_t(t * m + r)] = tiles ? ggml_arith::tile_dot_f32(isa, k, a, b) : ggml_arith::vec_dot_f32(isa, k, a, b);
    }
  return out;
}

}  // namespace

bool check_mul_mat(const Api& api, GgmlIsa isa, std::mt19937_64& rng) {
  Tally f16("mul_mat F16 x F32"), f32("mul_mat F32 x F32");
  // k: whole steps of 64; of 16 but not 64; tails of every kind (vec_dot's rounded vector part and
  // fused remainder); shorter than one step. m: with and without m % 4 == 0 (tinyBLAS declines the
  // latter), and m % 16 == 0 (its widest blocking).
  for (int64_t k : {256, 4096, 48, 100, 13, 7, 63, 1000})
    for (int64_t m : {8, 12, 6, 13, 64})
      for (int64_t n = 1; n <= 7; ++n) {
        const auto w = random_floats(rng, size_t(m * k), 0.5f), x = random_floats(rng, size_t(n * k), 1.0f);
        const auto wh = to_fp16(w);
        const auto mine_f16 = recur_mul_mat(isa, m, n, k, wh.data(), to_fp16(x).data());
        const auto mine_f32 = recur_mul_mat(isa, m, n, k, w.data(), x.data());
        for (int threads : kThreadCounts) {
          const std::string where = fmt::format("m {} n {} k {} threads {}", m, n, k, threads);
          Scratch s(api, kScratchBytes);
          Tensor* out = api.mul_mat(s.ctx(), s.tensor(Type::kF16, {k, m}, wh.data()), s.tensor(Type::kF32, {k, n}, x.data()));
          f16.compare(s.compute(out, m * n, threads), mine_f16, where);
          Scratch t(api, kScratchBytes);
          out = api.mul_mat(t.ctx(), t.tensor(Type::kF32, {k, m}, w.data()), t.tensor(Type::kF32, {k, n}, x.data()));
          f32.compare(t.compute(out, m * n, threads), mine_f32, where);
        }
      }
  const bool f16_ok = f16.report();
  return f32.report() && f16_ok;
}

namespace {

struct AttentionCase {
  int64_t head_dim, n_head, n_head_kv, used, tokens;  // used: cells filled, the last `tokens` are the batch
  bool gemma;  // Q scaled before (ggml_scale), kq_scale 1, logits soft-capped at 50; else kq_scale 1/sqrt(head_dim)
};
constexpr int64_t kCtx = 256;  // cache cells
constexpr float kSoftCap = 50.0f;

int64_t pad32(int64_t n) { return (n + 31) / 32 * 32; }

struct AttentionInputs {
  std::vector<float> q;       // [tokens][n_head][head_dim]
  std::vector<uint16_t> k;    // [kCtx][n_head_kv * head_dim]
  std::vector<uint16_t> v;    // transposed: [n_head_kv * head_dim][kCtx]
  std::vector<float> mask;    // [pad32(tokens)][n_kv]: causal, -inf past each token's position
};

AttentionInputs attention_inputs(const AttentionCase& c, std::mt19937_64& rng) {
  const int64_t n_kv = pad32(c.used), kv_dim = c.n_head_kv * c.head_dim;
  AttentionInputs in{random_floats(rng, size_t(c.tokens * c.n_head * c.head_dim), 1.0f),
                     to_fp16(random_floats(rng, size_t(kCtx * kv_dim), 1.0f)),
                     to_fp16(random_floats(rng, size_t(kCtx * kv_dim), 1.0f)),
                     std::vector<float>(size_t(pad32(c.tokens) * n_kv), -INFINITY)};
  for (int64_t t = 0; t < c.tokens; ++t)
    for (int64_t cell = 0; cell <= c.used - c.tokens + t; ++cell) in.mask[size_t(t * n_kv + cell)] = 0.0f;
  return in;
}

// The attention core composed of ggml_arith functions; out [n_head][tokens][head_dim] as kqv.
std::vector<float> recur_attention(GgmlIsa isa, const AttentionCase& c, const AttentionInputs& in) {
  const int64_t n_kv = pad32(c.used), hd = c.head_dim, kv_dim = c.n_head_kv * hd;
  const float q_scale = 1.0f / std::sqrt(float(hd));
  std::vector<float> out(size_t(c.n_head * c.tokens * hd));
  for (int64_t h = 0; h < c.n_head; ++h) {
    const int64_t g = h / (c.n_head / c.n_head_kv);
    std::vector<uint16_t> k(size_t(n_kv * hd)), q(size_t(c.tokens * hd)), v(size_t(hd * n_kv));
    for (int64_t cell = 0; cell < n_kv; ++cell)
      for (int64_t d = 0; d < hd; ++d) k[size_t(cell * hd + d)] = in.k[size_t(cell * kv_dim + g * hd + d)];
    for (int64_t t = 0; t < c.tokens; ++t)
      for (int64_t d = 0; d < hd; ++d) {
        const float x = in.q[size_t((t * c.n_head + h) * hd + d)];
        q[size_t(t * hd + d)] = fp32_to_fp16(c.gemma ? x * q_scale : x);
      }
    std::vector<float> kq = recur_mul_mat(isa, n_kv, c.tokens, hd, k.data(), q.data());
    if (c.gemma)
      for (float& s : kq) s = std::tanh(s * (1.0f / kSoftCap)) * kSoftCap;
    std::vector<float> p(kq.size());
    for (int64_t t = 0; t < c.tokens; ++t)
      ggml_arith::soft_max_row(isa, n_kv, &p[size_t(t * n_kv)], &kq[size_t(t * n_kv)], c.gemma ? 1.0f : q_scale,
                               &in.mask[size_t(t * n_kv)]);
    for (int64_t d = 0; d < hd; ++d)
      for (int64_t cell = 0; cell < n_kv; ++cell) v[size_t(d * n_kv + cell)] = in.v[size_t((g * hd + d) * kCtx + cell)];
    const auto kqv = recur_mul_mat(isa, hd, c.tokens, n_kv, v.data(), to_fp16(p).data());
    std::copy(kqv.begin(), kqv.end(), out.begin() + h * c.tokens * hd);
  }
  return out;
}

// llm_build_kqv's graph (flash attention off) on an F16 cache.
Tensor* ggml_attention(const Api& api, Scratch& s, const AttentionCase& c, const AttentionInputs& in) {
  const int64_t n_kv = pad32(c.used), hd = c.head_dim, kv_dim = c.n_head_kv * hd;
  Context* ctx = s.ctx();
  Tensor* q_cur = s.tensor(Type::kF32, {hd, c.n_head, c.tokens}, in.q.data());
  if (c.gemma) q_cur = api.scale(ctx, q_cur, 1.0f / std::sqrt(float(hd)));
  Tensor* k_cache = s.tensor(Type::kF16, {kv_dim, kCtx}, in.k.data());
  Tensor* v_cache = s.tensor(Type::kF16, {kCtx, kv_dim}, in.v.data());
  Tensor* mask = s.tensor(Type::kF32, {n_kv, pad32(c.tokens)}, in.mask.data());
  Tensor* q = api.permute(ctx, q_cur, 0, 2, 1, 3);
  Tensor* k = api.view_3d(ctx, k_cache, hd, n_kv, c.n_head_kv, api.row_size(Type::kF16, kv_dim),
                          api.row_size(Type::kF16, hd), 0);
  Tensor* kq = api.mul_mat(ctx, k, q);
  if (c.gemma) kq = api.scale(ctx, api.tanh(ctx, api.scale(ctx, kq, 1.0f / kSoftCap)), kSoftCap);
  kq = api.soft_max_ext(ctx, kq, mask, c.gemma ? 1.0f : 1.0f / std::sqrt(float(hd)), 0.0f);
  Tensor* v = api.view_3d(ctx, v_cache, n_kv, hd, c.n_head_kv, sizeof(uint16_t) * kCtx, sizeof(uint16_t) * kCtx * hd, 0);
  return api.mul_mat(ctx, v, kq);  // [head_dim, tokens, n_head]
}

}  // namespace

bool check_attention(const Api& api, GgmlIsa isa, std::mt19937_64& rng) {
  Tally tally("attention (llm_build_kqv)");
  for (const AttentionCase base : {AttentionCase{64, 4, 2, 70, 1, false}, AttentionCase{128, 2, 1, 20, 1, false},
                                   AttentionCase{64, 8, 8, 150, 1, false}})
    for (int64_t tokens : {1, 5})
      for (bool gemma : {false, true}) {
        AttentionCase c = base;
        c.tokens = tokens;
        c.gemma = gemma;
        const AttentionInputs in = attention_inputs(c, rng);
        const auto mine = recur_attention(isa, c, in);
        for (int threads : kThreadCounts) {
          Scratch s(api, kScratchBytes);
          tally.compare(s.compute(ggml_attention(api, s, c, in), int64_t(mine.size()), threads), mine,
                        fmt::format("head_dim {} heads {}/{} n_kv {} tokens {} {} threads {}", c.head_dim, c.n_head,
                                    c.n_head_kv, pad32(c.used), c.tokens, gemma ? "gemma2" : "llama", threads));
        }
      }
  return tally.report();
}

}  // namespace recur::ggml_graph
