// KDA (Kimi Delta Attention): the linear-attention layer of the hybrid model, on the CPU.
//
// Per value head h there is an fp32 state S[K,V]. One token does (docs/kda.md):
//   q <- q / sqrt(sum q^2 + eps) * scale,  k <- k / sqrt(sum k^2 + eps)   (scale = K^-1/2)
//   g[K]  per-channel log-decay (<= 0), from one of the gate forms below
//   beta  = sigmoid(b)
//   S <- diag(exp g) S;  v' = beta (v - S^T k);  S <- S + k v'^T;  o = S^T q
//
// Tensor shapes (all fp32, row-major, contiguous; B sequences, T tokens each, HK key heads,
// HV value heads with HV % HK == 0; value head h reads key head h / (HV / HK)):
//   q, k     [B, T, HK, K]
//   v        [B, T, HV, V]
//   g        [B, T, HV, K]   g_raw, or the log-decay itself when gate == kPrecomputed
//   b        [B, T, HV]      beta logits
//   a_log    [HV]            A_log (not read when gate == kPrecomputed)
//   dt_bias  [HV, K]         (not read when gate == kPrecomputed)
//   state    [B, HV, K, V]   (layout kKV) or [B, HV, V, K] (layout kVK); updated in place
//   out      [B, T, HV, V]
// Decode is T = 1. Gate forms, with x = g_raw + dt_bias[h]:
//   kSoftplus        g = -exp(A_log[h]) * softplus(x)
//   kSigmoidBounded  g = lower_bound * sigmoid(exp(A_log[h]) * x)     (lower_bound = -5)
//
// Variants are knobs (kernel.kda_decode.variant, kernel.kda_prefill.variant): see the enums.
// Work items are (sequence, head, V-tile of block_v columns), split statically over the pool,
// so results never depend on the thread count. Paths: AVX-512, AVX2, scalar (IsaDispatch).
// Thread-safety: a call uses the pool and the workspace it is given; one call at a time per
// workspace. Inputs and state of concurrent calls must not overlap.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/aligned_buffer.h"
#include "core/status.h"

namespace recur {
class ThreadPool;
}

namespace recur::kda {

enum class GateForm : uint8_t { kPrecomputed, kSoftplus, kSigmoidBounded };
enum class StateLayout : uint8_t { kKV, kVK };

// Decode (and ReplaySSM step) variants; they differ only in the per-(sequence, head) prologue
// (q/k normalization, the gate and exp(g), beta and, for ReplaySSM, the buffer coefficients).
// They form a 2 x 2 grid: where the prologue runs x how it divides.
enum class DecodeVariant : uint8_t {
  kVtile,         // every V-tile work item recomputes the prologue; divisions as written
  kVtileRecip,    // the same, divisions replaced by rsqrt / reciprocal multiplies + Newton step
  kHoisted,       // prologue computed once per (sequence, head) and shared by its V-tiles
  kHoistedRecip,  // hoisted, with rsqrt / reciprocal multiplies + Newton step
};
inline constexpr DecodeVariant kAllDecodeVariants[] = {DecodeVariant::kVtile, DecodeVariant::kVtileRecip,
                                                       DecodeVariant::kHoisted, DecodeVariant::kHoistedRecip};
// Once per (sequence, head) rather than per V-tile.
inline bool hoists_prologue(DecodeVariant v) {
  return v == DecodeVariant::kHoisted || v == DecodeVariant::kHoistedRecip;
}
// rsqrt / reciprocal estimates plus one Newton step instead of divisions.
inline bool uses_reciprocals(DecodeVariant v) {
  return v == DecodeVariant::kVtileRecip || v == DecodeVariant::kHoistedRecip;
}
enum class PrefillVariant : uint8_t {
  kRecurrent,  // token by token per (sequence, head, V-tile); the state tile stays in L1
  kChunked64,  // WY/UT chunked form, chunk 64
  kChunked16,  // WY/UT chunked form, chunk 16
};
inline constexpr PrefillVariant kAllPrefillVariants[] = {PrefillVariant::kRecurrent, PrefillVariant::kChunked64,
                                                         PrefillVariant::kChunked16};

std::string_view decode_variant_name(DecodeVariant v);  // "vtile", "vtile_recip", "hoisted", "hoisted_recip"
std::optional<DecodeVariant> parse_decode_variant(std::string_view name);
std::string_view prefill_variant_name(PrefillVariant v);  // "recurrent", "chunked64", "chunked16"
std::optional<PrefillVariant> parse_prefill_variant(std::string_view name);
std::string_view gate_form_name(GateForm g);  // "precomputed", "softplus", "sigmoid_bounded"

struct Shape {
  int64_t batch = 1;
  int64_t tokens = 1;
  int64_t hk = 1;
  int64_t hv = 1;
  int64_t k = 128;
  int64_t v = 128;
};

struct Params {
  GateForm gate = GateForm::kSoftplus;
  StateLayout layout = StateLayout::kKV;
  float eps = 1e-6f;
  float scale = 0.0f;          // q scale; 0 means K^-1/2
  float lower_bound = -5.0f;   // kSigmoidBounded only
  int block_v = 64;            // V-tile width BV (the last tile of a head may be narrower)
};

struct Inputs {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* g = nullptr;
  const float* b = nullptr;
  const float* a_log = nullptr;
  const float* dt_bias = nullptr;
};

// Checks shapes, head ratio, block_v and the pointers the gate form needs.
Status validate(const Shape& shape, const Params& params, const Inputs& in);

// Scratch memory reused across calls (grows, never shrinks). Not thread-safe.
class Workspace {
 public:
  float* floats(size_t n);  // at least n floats, 64-byte aligned, contents unspecified
 private:
  AlignedBuffer buffer_;
};

// One decode step (shape.tokens must be 1). pool may be null (runs on the caller).
Status decode(const Shape& shape, const Params& params, const Inputs& in, float* state,
              float* out, DecodeVariant variant, ThreadPool* pool, Workspace& ws);

// T tokens per sequence, updating state in place; out gets every token's output.
Status prefill(const Shape& shape, const Params& params, const Inputs& in, float* state,
               float* out, PrefillVariant variant, ThreadPool* pool, Workspace& ws);

}  // namespace recur::kda
