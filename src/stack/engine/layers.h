// The building blocks the architectures share (llama.cc, hybrid.cc): RMSNorm, RoPE, decode
// attention over a KV cache, SwiGLU, and MoE routing. fp32 math, written for clarity; the
// matrix products go through matvec (weights.h) and the kernels.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/weights.h"

namespace recur {

class ThreadPool;

// out = x / rms(x) * w, w an [n] weight vector (any storage type); scratch holds n floats.
void rmsnorm(float* out, const float* x, const Weight& w, int n, float eps, float* scratch);

// GGUF llama RoPE: consecutive pairs (x[2i], x[2i+1]) rotate by pos * theta^(-2i/d), per head.
void rope_interleaved(float* v, int heads, int head_dim, int pos, float theta);
// The same in two steps, for callers that rotate many heads or layers at one position (a batched
// prefill: the angles depend on the position only): cos_sin[i], cos_sin[i + 1] = cos, sin of pair
// i / 2's angle (head_dim floats), then every head rotated by them. Same bits as rope_interleaved.
void rope_cos_sin(int head_dim, int pos, float theta, float* cos_sin);
void rope_rotate(float* v, int heads, int head_dim, const float* cos_sin);

// One query token against tokens [0, n_tokens) of a KV cache laid out [token][kv_heads*head_dim];
// GQA: query head h reads kv head h / group - kv_offset (kv_offset: the first kv head in the cache,
// for a tensor-parallel shard). att_scratch: heads * n_tokens floats. pool may be null.
void attention_decode(const float* q, const float* keys, const float* values, int heads, int kv_heads,
                      int head_dim, int n_tokens, float* out, float* att_scratch, ThreadPool* pool,
                      int group = 0, int q_head_offset = 0, int kv_offset = 0);

// gate[i] = silu(gate[i]) * up[i]
void swiglu(float* gate, const float* up, int n);

// Top-k of softmax(logits) (lowest index on ties), weights renormalized to sum to 1.
struct Route {
  std::vector<int> experts;
  std::vector<float> weights;
};
Route route_top_k(std::span<const float> logits, int k);

}  // namespace recur
