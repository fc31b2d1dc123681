// The MoE FFN block: the fp32 router, then either every expert on this rank (rows grouped by
// expert, so each expert's weights are streamed once per forward) or expert parallelism
// (moe_ep.h: this rank's rows through dispatch, the experts' ranks and combine, then an
// all-gather of every rank's rows); plus the shared expert. Under engine.ggml_arithmetic the
// router, the routing, the combine and the shared expert's gate are llm_build_moe_ffn's and
// build_qwen2moe's (ggml_matmul.h, ggml_arith/ggml_moe.h); expert parallelism keeps its combine.
#include <cmath>

#include "engine/blocks/block.h"
#include "engine/ggml_matmul.h"
#include "engine/layers.h"
#include "kernels/ggml_arith/ggml_moe.h"
#include "kernels/layer/layer.h"
#include "trace/trace.h"

namespace recur {

namespace {

// ggml's shared-expert gates (build_qwen2moe): g = ffn_gate_inp_shexp . x, a mul_mat of one row
// (the vec_dot loop), then silu(g) / g.
void ggml_shared_gates(const Step& s, int l, const float* x, int64_t rows, float* gates) {
  const Weight& w = s.m.layers[size_t(l)].sh_gate_inp;
  matmul_ggml_or_stored(w, x, rows, gates, nullptr, GgmlMatmul{.isa = *s.o.ggml}, s.o.act);
  for (int64_t r = 0; r < rows; ++r) gates[r] = ggml_arith::silu_gate(*s.o.ggml, gates[r]);
}

// y[rows, dim] += the shared expert of x[rows, dim], each row times sigmoid(gate . x) (ggml:
// silu(g) / g) when the architecture gates it (qwen2moe's ffn_gate_inp_shexp; under TP each rank's partial gets the
// same factor, so the all-reduce sums the gated whole).
void moe_add_shared(const Step& s, int l, const LayerShard& S, const float* x, int64_t rows, float* y) {
  if (!s.c().shared_expert || rows == 0) return;
  ffn_rows(s, S.shared, x, rows, s.r.ff_out.data());
  const int64_t dim = s.c().dim;
  if (s.o.ggml) {
    // ggml: moe_out + ffn_shexp * gate (ggml_mul, then ggml_add), added after the routed experts.
    std::vector<float> gates(static_cast<size_t>(rows), 1.0f);
    if (!S.sh_gate_inp.empty()) ggml_shared_gates(s, l, x, rows, gates.data());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = r * dim; i < (r + 1) * dim; ++i) y[i] = y[i] + s.r.ff_out[size_t(i)] * gates[size_t(r)];
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    float scale = 1.0f;
    if (!S.sh_gate_inp.empty()) {
      float dot = 0;
      for (int64_t i = 0; i < dim; ++i) dot += S.sh_gate_inp[size_t(i)] * x[r * dim + i];
      scale = 1.0f / (1.0f + std::exp(-dot));
    }
    for (int64_t i = r * dim; i < (r + 1) * dim; ++i) y[i] = y[i] + scale * s.r.ff_out[size_t(i)];
  }
}

// Each row's top-k experts and weights [rows, k], by the model's gating (moe_gating.cc).
struct Routes {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};
Routes route_every_row(const Step& s, int l) {
  const size_t n = size_t(s.rows() * s.c().n_experts_used);
  Routes routes{.ids = std::vector<int32_t>(n), .weights = std::vector<float>(n)};
  s.r.fail(route_rows(s, l, routes.ids.data(), routes.weights.data()));
  return routes;
}

// ggml's combine (llm_build_moe_ffn, ggml_arith::moe_combine): each row's expert outputs kept in
// selection order, then weighted and summed in that order.
void moe_routed_ggml(const Step& s, const LayerShard& S, const Routes& routes) {
  const ModelConfig& c = s.c();
  ForwardRank& r = s.r;
  const int64_t M = s.rows(), dim = c.dim, top = c.n_experts_used;
  std::vector<std::vector<int64_t>> routed(size_t(c.n_experts));  // expert -> its (row * top + slot)
  for (int64_t i = 0; i < M * top; ++i) routed[size_t(routes.ids[size_t(i)])].push_back(i);
  std::vector<float> outs(static_cast<size_t>(M * top * dim));  // [row, slot, dim]
  for (int e = 0; e < c.n_experts; ++e) {
    const auto& slots = routed[size_t(e)];
    if (slots.empty()) continue;
    const int64_t m = int64_t(slots.size());
    for (int64_t j = 0; j < m; ++j) std::copy_n(r.h.data() + (slots[size_t(j)] / top) * dim, dim, r.xg.data() + j * dim);
    ffn_rows(s, S.experts[size_t(e)], r.xg.data(), m, r.ff_out.data());
    for (int64_t j = 0; j < m; ++j) std::copy_n(r.ff_out.data() + j * dim, dim, outs.data() + slots[size_t(j)] * dim);
  }
  for (int64_t row = 0; row < M; ++row)
    ggml_arith::moe_combine(top, dim, outs.data() + row * top * dim, routes.weights.data() + row * top,
                            r.partial.data() + row * dim);
}

void moe_routed(const Step& s, int l, const LayerShard& S) {
  const ModelConfig& c = s.c();
  ForwardRank& r = s.r;
  const int64_t M = s.rows(), dim = c.dim;
  const int64_t top = c.n_experts_used;
  const Routes routes = route_every_row(s, l);
  if (s.o.ggml) {
    moe_routed_ggml(s, S, routes);
    moe_add_shared(s, l, S, r.h.data(), M, r.partial.data());
    return;
  }
  const auto& [ids, weights] = routes;
  std::vector<std::vector<std::pair<int64_t, float>>> routed(size_t(c.n_experts));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < top; ++j) routed[size_t(ids[size_t(i * top + j)])].emplace_back(i, weights[size_t(i * top + j)]);
  std::fill_n(r.partial.begin(), M * dim, 0.0f);
  for (int e = 0; e < c.n_experts; ++e) {
    const auto& rows = routed[size_t(e)];
    if (rows.empty()) continue;
    const int64_t m = int64_t(rows.size());
    for (int64_t j = 0; j < m; ++j) std::copy_n(r.h.data() + rows[size_t(j)].first * dim, dim, r.xg.data() + j * dim);
    ffn_rows(s, S.experts[size_t(e)], r.xg.data(), m, r.ff_out.data());
    for (int64_t j = 0; j < m; ++j) {
      float* y = r.partial.data() + rows[size_t(j)].first * dim;
      const float* t = r.ff_out.data() + j * dim;
      const float w = rows[size_t(j)].second;
      for (int64_t i = 0; i < dim; ++i) y[i] = y[i] + w * t[i];
    }
  }
  moe_add_shared(s, l, S, r.h.data(), M, r.partial.data());
}

void moe_expert_parallel(const Step& s, int l, const LayerShard& S) {
  const ModelConfig& c = s.c();
  ForwardRank& r = s.r;
  const int ranks = s.ranks;
  const int64_t M = s.rows(), dim = c.dim, top = c.n_experts_used;
  const Span own = rank_span(M, ranks, r.w.index);
  // Every rank routes every row (the router is replicated) by the one-rank gating, so EP picks
  // and weighs exactly the experts EP=1 does (softmax or sigmoid, selection bias, scale).
  const Routes routes = route_every_row(s, l);
  const moe::EpLayer layer{.comm = s.comm, .rank = r.w.index, .n_experts = c.n_experts, .top_k = c.n_experts_used,
                           .dim = dim, .mode = s.o.ep.mode, .max_rows_per_rank = (M + ranks - 1) / ranks};
  float* y = r.partial.data() + own.begin * dim;
  moe::ep_moe_forward(
      layer, r.h.data() + own.begin * dim, routes.ids.data() + own.begin * top,
      routes.weights.data() + own.begin * top, own.size(),
      [&](int e, const float* x, int64_t m, float* out) { ffn_rows(s, S.experts[size_t(e)], x, m, out); }, r.ep, y);
  moe_add_shared(s, l, S, r.h.data() + own.begin * dim, own.size(), y);
  RECUR_ZONE("all_gather");
  zone.arg("ranks", int64_t(ranks));
  zone.arg("floats", M * dim);
  std::vector<int64_t> bytes;
  for (int q = 0; q < ranks; ++q) bytes.push_back(rank_span(M, ranks, q).size() * dim * int64_t(sizeof(float)));
  s.comm->all_gather(r.w.index, y, bytes, r.xg.data());
  std::copy_n(r.xg.data(), M * dim, r.partial.data());
}

}  // namespace

void moe_ffn(const Step& s, int l) {
  RECUR_ZONE("mlp");
  const ModelConfig& c = s.c();
  ForwardRank& r = s.r;
  const LayerShard& S = r.w.layers[size_t(l)];
  // The router stays fp32 on every rank (replicated): a flip in the top-k is a discontinuity.
  const Weight& router = s.m.layers[size_t(l)].router;
  if (s.o.ggml) {
    // ggml_mul_mat(ffn_gate_inp, x): F32 in llama.cpp's files; a Q8_0 one meets Q8_0 activations there.
    matmul_ggml_or_stored(router, r.h.data(), s.rows(), r.router.data(), s.intra, GgmlMatmul{.isa = *s.o.ggml}, s.o.act);
  } else {
    matmul(router, r.h.data(), s.rows(), r.router.data(), s.intra, gemm::Q8Activations::kF32);
  }
  s.tap(Op::kFfnRouter, l, r.router.data(), c.n_experts);
  if (s.o.ep.ep > 1) {
    moe_expert_parallel(s, l, S);
    s.tap(Op::kFfnMoeGathered, l, r.partial.data(), c.dim);
  } else {
    moe_routed(s, l, S);
    s.tap(Op::kFfnMoe, l, r.partial.data(), c.dim);
  }
}

}  // namespace recur
