// The inner loop of paged attention, one function per ISA (attention_ops_{scalar,avx2,avx512}.cc,
// all instantiated from attention_ops_impl.h), picked with IsaDispatch.
//
// attend() runs online softmax (flash-decoding style) for `rows` query rows that share one kv
// head over the token positions [begin, end) of one sequence's pages, continuing a running
// state (m, l, acc) so a context can be split and merged (merge_partials). Row r only sees
// positions < limit[r] (causal prefill; decode passes limit = end), and with a window only
// positions >= limit[r] - window. Per page it dequantizes the
// head's K run into an L1 tile, computes the rows' scores, exponentiates them as a vector,
// dequantizes V the same way and accumulates. Scales are factored out of the tiles: the fp8
// K head scale is folded into q, int8 token scales multiply scores (K) and probabilities (V);
// the fp8 V head scale is left to the caller's finalization (acc * v_head_scale / l).
// Pure on its arguments; thread-safe for distinct outputs and scratch.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "kernels/attention/kv_cache.h"

namespace recur::kernels::attention {

struct AttendArgs {
  const LayerView* layer = nullptr;
  const int32_t* pages = nullptr;  // the sequence's page table
  int kv_head = 0;
  int64_t begin = 0, end = 0;      // token positions
  int rows = 0;
  const float* q = nullptr;        // [rows, head_dim], already multiplied by the softmax scale
  const int64_t* limit = nullptr;  // [rows] exclusive position limits, or null (= end)
  float* m = nullptr;              // [rows] running max score (start at -inf)
  float* l = nullptr;              // [rows] running sum of exp(score - m) (start at 0)
  float* acc = nullptr;            // [rows, head_dim] running sum of p * v (start at 0)
  float* scratch = nullptr;        // attend_scratch_floats() floats
  float softcap = 0;               // scores -> softcap * tanh(score / softcap) when > 0
  // > 0: row r sees positions >= limit[r] - window only (prefill's sliding window; decode narrows
  // begin instead). Needs limit.
  int64_t window = 0;
  // Set: the rounded path (AttentionOperands::kCacheType on an f16 / bf16 layer), which needs
  // [rows, end - begin] floats here and one call over the row's whole context: q arrives rounded
  // (and scaled), the softmax is taken whole, its normalized weights rounded to the layer's type;
  // on return m is the row's max, l is 1 and acc the weighted sum of V.
  float* probs = nullptr;
};

// x rounded to the 16-bit float type t (f16 or bf16), nearest even; other types return x.
// Out of line (attention_decode.cc), so the ISA translation units call the baseline conversion.
float round_to(KvDType t, float x);

// Floats of scratch attend() needs.
int64_t attend_scratch_floats(int page_size, int head_dim, int rows);

using AttendFn = void (*)(const AttendArgs& args);

void attend_scalar(const AttendArgs& args);
void attend_avx2(const AttendArgs& args);
void attend_avx512(const AttendArgs& args);

inline constexpr IsaDispatch<AttendFn> kAttend{.scalar = attend_scalar, .avx2 = attend_avx2, .avx512 = attend_avx512};

}  // namespace recur::kernels::attention
