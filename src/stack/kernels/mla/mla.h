// Multi-head latent attention (MLA, DeepSeek-V2) over a paged latent cache: each token stores
// one vector [c (rank) ; k_rope (rope)] (kv_cache.h with keys_only, one kv head, head_dim
// rank + rope), c the RMS-normed compressed latent and k_rope its RoPE'd key part shared by
// every head. Head h of query row i, with q_i = [q_nope (nope) ; q_rope (rope)] per head:
//   score(t) = scale * (q_nope . (W_UK[h] c_t) + q_rope . k_rope_t)
//   out_h    = sum_t softmax(score)_t W_UV[h] c_t                          ([v_dim])
// where W_UK[h] is [nope, rank] and W_UV[h] [v_dim, rank] (llama.cpp's attn_k_b holds W_UK[h]
// transposed, [rank, nope] row-major, which is how wk is passed here).
//
// Variants (the registered mla_decode / mla_prefill knobs):
//   absorbed: q_abs = W_UK[h]^T q_nope once per row ([rank]), scores over the cached latents
//             directly (q_abs . c_t + q_rope . k_rope_t), the probability-weighted latent, then
//             W_UV[h] once per row: O(rank) per (row, head, token).
//   expand:   decompress W_UK[h] c_t and W_UV[h] c_t for every cached token and head, then plain
//             attention: O(rank * (nope + v_dim)) per (row, head, token), what MLA without the
//             absorption costs; kept as the check and the baseline.
//   blocked:  the absorbed form on blocks of query rows and heads as GEMM-shaped steps
//             (mla_ops.h), vectorised for the ISA given (AVX-512, AVX2, scalar): each latent is
//             read once per micro-block of rows rather than once per (row, head). Decode
//             (one row per run) blocks the heads of a sequence together.
// All read the cache once per sequence into fp32 (dequantized). absorbed and expand run one
// item per (sequence, head) on the pool, blocked one per block; results do not depend on the
// pool size.
//
// Runs: seqs[i] holds counts[i] new rows whose latents are already appended; row j of the run
// attends to the positions <= its own (length - counts[i] + j). Decode is counts all 1.
// Thread-safety: reentrant; the cache must not be written concurrently for the sequences read.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/cpu_features.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "kernels/attention/kv_cache.h"

namespace recur::kernels::mla {

enum class Variant : uint8_t { kAbsorbed, kExpand, kBlocked };
std::string_view variant_name(Variant v);  // "absorbed", "expand", "blocked"
Result<Variant> parse_variant(std::string_view name);
// The form of a registered kernel variant name (mla_register.h): "absorbed", "expand", or
// "blocked_<isa>" (the ISA is the variant's own, KernelChoice::isa).
Result<Variant> variant_of_kernel(std::string_view registered);

struct Dims {
  int heads = 0, nope = 0, rope = 0, rank = 0, v_dim = 0;
  int64_t q_width() const { return int64_t(nope) + rope; }    // per head
  int64_t latent_width() const { return int64_t(rank) + rope; }  // per token
};

struct Weights {
  const float* wk = nullptr;  // [heads, rank, nope]: W_UK[h] transposed (attn_k_b)
  const float* wv = nullptr;  // [heads, v_dim, rank]: W_UV[h] (attn_v_b)
};

// q [rows, heads, nope + rope] (q_rope rotated), out [rows, heads, v_dim]; rows are the runs'
// rows one after another. `isa` picks blocked's path (the best one at or below it; the other
// forms are scalar). Errors: a cache layer whose head_dim is not rank + rope or that has more
// than one kv head, a run longer than its sequence, or a non-positive dimension.
Status attend(const attention::PagedKvCache& cache, int layer, std::span<const int> seqs,
              std::span<const int64_t> counts, const float* q, const Dims& d, const Weights& w, float scale,
              Variant variant, Isa isa, float* out, ThreadPool* pool = nullptr);

// MLA softmax scale of DeepSeek-V2's YaRN: mscale^2 / sqrt(nope + rope) with
// mscale = 1 + yarn_log_mul * ln(factor) (1 without scaling).
double softmax_scale(int nope, int rope, double factor, double yarn_log_mul);

// YaRN RoPE tables (the layout of kernels::rope_tables, interleaved pairs) for `d` rotary
// dims at `pos`: pair i turns by a blend of pos * theta^(-2i/d) (extrapolated) and that over
// `factor` (interpolated), the ramp between the dims whose wavelength fits beta_fast and
// beta_slow turns in the original context (ggml's rope_yarn / DeepSeek's yarn). factor <= 1 is
// plain RoPE. cos/sin carry no magnitude scale (DeepSeek's mscale / mscale_all_dim = 1; the
// attention scale carries it, softmax_scale).
struct Yarn {
  double factor = 1, beta_fast = 32, beta_slow = 1;
  int original_context = 0;
};
void yarn_rope_tables(int d, double pos, double theta, const Yarn& yarn, float* c, float* s);

}  // namespace recur::kernels::mla
