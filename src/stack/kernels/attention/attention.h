// Attention over the paged, quantized KV cache (kv_cache.h): GQA decode and causal prefill.
//
// Heads: query head h reads kv head h / (q_heads / kv_heads) (contiguous groups, as llama).
// Scores are q . k / sqrt(head_dim) (or options.scale) in fp32 over the dequantized cache,
// softmax is online (flash-decoding): per page a running max, sum and weighted V.
//
// Work split: decode runs one item per (sequence, kv head, context split); each item handles the
// kv head's whole query group, so every K/V page is read (and dequantized) once per group.
// split_k > 1 cuts each sequence's pages into split_k contiguous ranges whose partial results
// are merged in a fixed order. Items go to recur::ThreadPool::parallel_for (static chunks), so
// for a given split_k the result does not depend on the pool size or scheduling.
// Prefill writes the T new tokens of each sequence into the cache (quantizing), then runs one
// item per (sequence, kv head, block of 16 query tokens): causal attention over the cache,
// i.e. over what the cache stores (quantized keys and values), as decode later sees them.
//
// Paths: options.isa picks AVX-512, AVX2 or scalar (default: the best at active_isa()); the
// three agree to fp32 rounding (docs/attention.md gives the tolerances). options.ggml replaces
// all of this on f16 and f32 layers by llama.cpp's arithmetic (attention_ggml.cc).
// Thread-safety: calls are reentrant; the cache must not be written concurrently for the
// sequences a decode reads. The calling thread takes part when a pool is given.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "kernels/ggml_arith/ggml_arith.h"
#include "kernels/attention/kv_cache.h"

namespace recur::kernels::attention {

// How q and the softmax weights meet the cached K and V.
enum class AttentionOperands : uint8_t {
  kF32,        // fp32 q and weights, online softmax over the dequantized cache
  kCacheType,  // on an f16 / bf16 layer: q and the normalized weights rounded to the layer's type
};

struct AttentionOptions {
  std::optional<Isa> isa;  // default: active_isa(); asking above active_isa() is an error
  int split_k = 1;         // context splits per (sequence, kv head); 0 = auto (>= 2 items per thread)
  float scale = 0;         // softmax scale; 0 = 1 / sqrt(head_dim)
  float softcap = 0;       // scaled scores become softcap * tanh(score / softcap) (gemma2); 0 = none
  // Sliding window (gemma2, gemma3's local layers): a query at position p attends to the keys at
  // (p - window, p]; 0 = every earlier key. Pages wholly before the window are not read (they stay
  // in the cache: nothing is evicted).
  int64_t window = 0;
  // kCacheType runs, on f16 and bf16 layers, the arithmetic of ggml's non-flash attention over an
  // F16 / BF16 cache (llama.cpp's default): q rounded to the cache type, scores q . k in fp32,
  // the softmax of each row whole (two passes, its sum in double), the normalized weights rounded
  // to the cache type, then their sum with V in fp32. Decode then runs one split (split_k is
  // ignored). Other layer types are unaffected.
  AttentionOperands operands = AttentionOperands::kF32;
  // Set (engine.ggml_arithmetic): on f16 and f32 layers, the bits of llama.cpp c392e50's non-flash
  // attention (llm_build_kqv) on a CPU build of this ISA, in ggml_arith's scalar emulations. Each
  // sequence's new tokens form one product over n_kv = its cache length padded to 32 cells (cell
  // c holding position c, as one llama-server slot): scores per (token, cell) by ggml_arith's
  // tinyBLAS or vec_dot (tiles_take) of q (rounded to f16 on f16) with K, soft-capped as ggml
  // (x * (1 / cap), tanhf, * cap), soft_max_row with `scale` (0: 1 / sqrtf(head_dim)) and -inf
  // for masked and padding cells, then per (token, dim) the weights (rounded to f16 on f16)
  // dotted with V's column over the n_kv cells. isa, split_k and operands do not apply there;
  // other layer types keep the paths above. Scalar code: a parity option, not a fast path.
  std::optional<ggml_arith::GgmlIsa> ggml;
};

// One decode step: q is [seqs.size(), q_heads, head_dim] (fp32), out the same shape. Every
// sequence must hold at least one token in `layer`; the query sits at its last position.
Status decode(const PagedKvCache& cache, int layer, std::span<const int> seqs, const float* q, int q_heads, float* out,
              const AttentionOptions& options = {}, ThreadPool* pool = nullptr);

// Prefill of tokens[i] new tokens for seqs[i] in `layer` (appended after what the layer holds):
// q is [sum tokens, q_heads, head_dim], k and v [sum tokens, kv_heads, head_dim] (token-major,
// sequences one after another), out like q. Query token j of a sequence attends to cache
// positions <= its own (and > its own - window with options.window).
Status prefill(PagedKvCache& cache, int layer, std::span<const int> seqs, std::span<const int64_t> tokens, const float* q,
               const float* k, const float* v, int q_heads, float* out, const AttentionOptions& options = {},
               ThreadPool* pool = nullptr);

// The split count decode uses for these options (resolves split_k = 0).
int resolve_split_k(const AttentionOptions& options, int64_t items, int64_t max_pages, int threads);

}  // namespace recur::kernels::attention
