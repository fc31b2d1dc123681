// The rest of a transformer layer on the CPU: RMSNorm with a fused residual add, RoPE (two
// layouts), SwiGLU, row softmax, top-k MoE routing, grouped expert GEMM, embedding gather and
// sampling. fp32 activations, row-major and contiguous.
//
// The vector loops dispatch at run time (AVX-512, then AVX2, then scalar: layer_ops.h); every
// function takes the table so a caller (the registry's variants, tests) can force a path.
// Each kernel is registered (layer_specs.h) with a float64 reference, a cost model and
// tolerances (docs/kernels.md). Thread-safety: no shared state; calls on disjoint outputs may
// run concurrently.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "kernels/layer/layer_ops.h"

namespace recur::kernels {

// h = x + r; y = h / sqrt(mean(h^2) + eps) * w. x, r, h, y [rows, n]; w [n]. h may alias x.
inline void rmsnorm_residual(const float* x, const float* r, const float* w, float* h, float* y, int64_t rows,
                             int64_t n, float eps, const LayerOps& ops = layer_ops()) {
  ops.rmsnorm_residual(x, r, w, h, y, rows, n, eps);
}

// y = silu(g) * u elementwise (n elements).
inline void swiglu(const float* g, const float* u, float* y, int64_t n, const LayerOps& ops = layer_ops()) {
  ops.swiglu(g, u, y, n);
}

// Numerically stable softmax of each row: x, y [rows, n] (y may alias x).
inline void softmax_rows(const float* x, float* y, int64_t rows, int64_t n, const LayerOps& ops = layer_ops()) {
  ops.softmax(x, y, rows, n);
}

enum class RopeLayout : uint8_t {
  kInterleaved,  // pairs (2i, 2i+1): GGUF llama
  kHalfSplit,    // pairs (i, i + d/2): NeoX / HF
};

// x, y [tokens, heads, d], d even; token t sits at position pos0 + t; pair i rotates by
// (pos0 + t) * theta^(-2i/d). Angles and their cos/sin are computed in double per token.
// The per-token tables rope() rotates by (c, s of length d, s signed; layer_ops.h's rope_row):
// pair i at `pos` turns by pos * theta^(-2i/d), computed in double.
// RoPE scaling as ggml_rope_ext computes it without YaRN: the angle times freq_scale (linear
// scaling) and divided by factors[i] when given (Llama 3's rope_freqs, d / 2 of them).
void rope_tables(int64_t d, double pos, double theta, RopeLayout layout, float* c, float* s, double freq_scale = 1.0,
                 const float* factors = nullptr);
Status rope(const float* x, float* y, int64_t tokens, int64_t heads, int64_t d, int64_t pos0, double theta,
            RopeLayout layout, const LayerOps& ops = layer_ops());

enum class RouteScore : uint8_t { kSoftmax, kSigmoid };

// Top-k MoE routing of logits [tokens, experts]: scores = softmax or sigmoid of each row; the
// k largest (ties -> lower expert index; chosen on the logits, so the choice is exact)
// go to ids [tokens, k] in descending order with their scores in weights [tokens, k],
// divided by their sum when renormalize. Deterministic. Fails when k is not in [1, experts].
Status route_topk(const float* logits, int64_t tokens, int64_t experts, int64_t k, RouteScore score,
                  bool renormalize, int32_t* ids, float* weights);

// Grouped expert GEMM: tokens sorted by expert, expert e owning rows [offsets[e],
// offsets[e + 1]) of x [T, K] and y [T, N]; w [E, N, K]. For each e: Y_e = X_e W_e^T.
// Fails when offsets are not non-decreasing from 0.
Status grouped_gemm(const float* x, const float* w, float* y, std::span<const int64_t> offsets, int64_t n,
                    int64_t k, const LayerOps& ops = layer_ops());

enum class TableType : uint8_t { kF32, kF16, kBF16, kQ8_0 };
// Bytes of one table row of n values (Q8_0: n / 32 blocks of 34 bytes, n % 32 == 0).
int64_t table_row_bytes(TableType type, int64_t n);

// out[t, :] = row ids[t] of table [vocab, n] (dequantized to fp32). Q8_0 is GGUF's: blocks of
// an fp16 scale d then 32 int8 q, value d * q. Fails on an id outside [0, vocab) (naming
// its position) or n % 32 != 0 for Q8_0, writing nothing.
Status embedding_gather(const void* table, TableType type, int64_t vocab, int64_t n, std::span<const int32_t> ids,
                        float* out, const LayerOps& ops = layer_ops());

struct SampleParams {
  float temperature = 1.0f;  // <= 0: greedy (argmax, ties -> lower index)
  float top_p = 1.0f;        // keep the smallest set of most likely tokens whose mass >= top_p
  uint64_t seed = 0;
};

// One token per row of logits [rows, vocab]; row r draws from a stream of (seed, r), so the
// result is a function of (logits, params) only. Candidates are ordered by logit (ties ->
// lower index), probabilities are softmax(logit / temperature) in double. Fails on
// temperature/top_p that are NaN or top_p outside (0, 1].
Status sample(const float* logits, int64_t rows, int64_t vocab, const SampleParams& params, int32_t* out);
// The uniform in [0, 1) that row `row` of sample() draws (SplitMix64 of seed and row).
double sample_uniform(uint64_t seed, int64_t row);

}  // namespace recur::kernels
