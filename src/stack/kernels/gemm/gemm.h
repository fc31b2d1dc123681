// GEMM / GEMV on the CPU, by precision: Y[M, N] = X[M, K] · W[N, K]ᵀ.
//
// W is row-major [N, K] (GGUF's layout of an [out, in] matrix: one row per output channel),
// X is row-major [M, K] (one row per token), Y is row-major [M, N]. Decode is M = 1..8 (GEMV),
// prefill is M up to a few thousand. Any M, N >= 1 and K >= 1 work, not only tile multiples.
//
// Entry points:
//   gemm()         fp32 X and weights packed once for a Precision (PackedWeights::pack):
//                  f32, bf16, bf16x3, bf16x6, tf32, tf32x3, w8a8 (docs/gemm.md says what each computes
//                  and how accurate it is against float64).
//   gemm_stored()  fp32 X against weights as a model file stores them (F32, F16, BF16, Q8_0),
//                  read in place: the engine's decode GEMV.
//   gemm_w8a8_stored()  fp32 X against a model file's W8A8 weights (int8 rows + a scale per
//                  row, read in place), on the w8a8 precision's int8 kernels.
//
// Algorithms (Algo, knob kernel.gemm.algo): `dot` register-blocks dot products (up to 4 rows of
// X against 4 rows of W, K in blocks) and serves every precision and every M; `tiled` is a
// packed-panel 6x64 outer-product microkernel for f32 and tf32 on AVX-512 with cache blocking
// (kc x mc, knobs kernel.gemm.kc / kernel.gemm.mc). Paths: AVX-512, AVX2, scalar (IsaDispatch
// on active_isa(); bf16 needs avx512bf16 and w8a8 avx512vnni for their AVX-512 paths, else the
// AVX2 path runs).
//
// Determinism: work is split over N with static partitioning (ThreadPool::parallel_for), and
// each output's summation order depends only on K, the algorithm, the ISA path and whether
// M <= 8 (GEMV mode: K in one block) — never on the thread count.
// Thread-safety: PackedWeights is immutable after pack() and may be shared; a Workspace is used
// by one call at a time. Concurrent calls must not write overlapping Y.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "core/aligned_buffer.h"
#include "core/status.h"

namespace recur {
class ThreadPool;
class Config;
}  // namespace recur

namespace recur::gemm {

enum class Precision : uint8_t {
  kF32,     // fp32 products, fp32 accumulation
  kBf16,    // X and W rounded to bf16, exact products, fp32 accumulation (vdpbf16ps)
  kBf16x3,  // x = hi + lo (both bf16); hi·hi + hi·lo + lo·hi, fp32 accumulation
  kBf16x6,  // x = hi + mid + lo (bf16); the six products down to 2^-16 relative, fp32 accumulation
  kTf32,    // X and W rounded to tf32 (10-bit mantissa), exact products, fp32 accumulation
  kTf32x3,  // the 3xTF32 split: hi·hi + hi·lo + lo·hi of tf32 parts
  kW8A8,    // int8 W with one scale per output channel, int8 X with one scale per token
};
inline constexpr Precision kAllPrecisions[] = {Precision::kF32,  Precision::kBf16,   Precision::kBf16x3,
                                               Precision::kBf16x6, Precision::kTf32, Precision::kTf32x3,
                                               Precision::kW8A8};
std::string_view precision_name(Precision p);  // "f32", "bf16", "bf16x3", "bf16x6", "tf32", "tf32x3", "w8a8"
std::optional<Precision> parse_precision(std::string_view name);

enum class Algo : uint8_t {
  kAuto,   // tiled for f32/tf32 when M > 8 and the AVX-512 path runs, dot otherwise
  kDot,    // register-blocked dot products; every precision
  kTiled,  // packed 6x64 microkernel; f32/tf32 on AVX-512 (other cases run dot)
};
std::string_view algo_name(Algo a);  // "auto", "dot", "tiled"
std::optional<Algo> parse_algo(std::string_view name);

struct Options {
  Algo algo = Algo::kAuto;
  int kc = 256;  // tiled: K block (B micro-panel of kc x 64 floats stays in L1/L2)
  int mc = 120;  // tiled: M block, rounded up to a multiple of 6 (A block kc x mc in L2)
};
// Whether gemm() runs the tiled algorithm for m rows at this precision and options on this
// machine (the rest run dot): callers name the algorithm that ran.
bool runs_tiled(Precision p, int64_t m, const Options& options);
// Options from the knobs kernel.gemm.algo, kernel.gemm.kc and kernel.gemm.mc.
Result<Options> options_from_config(const Config& config);
// The knob kernel.gemm.precision (for callers that let the configuration choose).
Result<Precision> precision_from_config(const Config& config);

// Weights converted once for a precision: bf16 / tf32 roundings, hi/lo splits, int8 rows with
// scales and the vpdpbusd compensation sum, and for f32 / tf32 the 64-column panels the tiled
// algorithm reads. Immutable after pack().
class PackedWeights {
 public:
  // w is row-major [n, k] fp32. Fails on bad sizes or, for w8a8, on non-finite weights.
  static Result<PackedWeights> pack(std::span<const float> w, int64_t n, int64_t k, Precision precision);

  Precision precision() const { return precision_; }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  // Bytes of weights one dot-algorithm pass reads (what a GEMV must stream).
  size_t weight_bytes() const;

  // Layout (internal to the kernels; documented in gemm_internal.h).
  const void* hi() const { return hi_.data(); }
  const void* lo() const { return lo_.data(); }
  const void* mid() const { return mid_.data(); }
  const float* panels() const { return reinterpret_cast<const float*>(panels_.data()); }
  const float* scales() const { return reinterpret_cast<const float*>(scales_.data()); }
  const int32_t* comp() const { return reinterpret_cast<const int32_t*>(comp_.data()); }

 private:
  Precision precision_ = Precision::kF32;
  int64_t n_ = 0, k_ = 0;
  AlignedBuffer hi_, lo_, mid_, panels_, scales_, comp_;
};

// Scratch memory reused across calls (grows, never shrinks). Not thread-safe.
class Workspace {
 public:
  std::byte* bytes(int slot, size_t n);  // slot 0..3: at least n bytes, 64-byte aligned
 private:
  AlignedBuffer buffers_[4];
};

// y[m, n] = sum_k x[m, k] w[n, k] at w's precision. x is [m, w.k()], y is [m, w.n()].
// pool may be null (runs on the caller).
Status gemm(const PackedWeights& w, const float* x, int64_t m, float* y, const Options& options,
            ThreadPool* pool, Workspace& ws);

// ---- weights as stored in a model file ----

enum class WeightFormat : uint8_t {
  kF32,
  kF16,   // IEEE half, converted with F16C / AVX-512
  kBf16,  // bf16 widened to fp32 exactly (activations stay fp32)
  kQ8_0,  // GGUF Q8_0: blocks of 32 weights = fp16 scale d + 32 int8 q, w = d q (34 bytes)
  // Q8_0 regrouped for the int8 kernels (repack_q8_0_r16; n % 16 == 0): the same bytes per 16
  // rows, always multiplied against Q8_0 activations (below, "Q8_0 in groups of 16 rows").
  kQ8_0R16,
  // F16 regrouped likewise (repack_f16_r16; n % 16 == 0): the same bytes per 16 rows
  // (below, "F16 in groups of 16 rows").
  kF16R16,
};
std::string_view weight_format_name(WeightFormat f);  // "f32", "f16", "bf16", "q8_0"
std::optional<WeightFormat> parse_weight_format(std::string_view name);

inline constexpr int kQ8Block = 32;
inline constexpr int kQ8BlockBytes = 34;

struct WeightView {
  WeightFormat format = WeightFormat::kF32;
  int64_t n = 0;  // rows (output channels)
  int64_t k = 0;  // columns (inputs); a multiple of 32 for Q8_0
  const void* data = nullptr;  // rows contiguous, row_bytes(format, k) each
};
// Bytes of one row (kQ8_0R16: a sixteenth of a 16-row group, the same as Q8_0).
size_t row_bytes(WeightFormat f, int64_t k);

// ---- Q8_0 in groups of 16 rows (WeightFormat::kQ8_0R16) ----
// Rows 16g .. 16g + 15 form group g, stored at byte 16 g row_bytes(kQ8_0, k) as
//   quants  [k / 32 blocks][8 chunks][16 rows][4 bytes]: chunk j of block b holds weights
//           32 b + 4 j .. + 3 of each row as u = q + 128 (uint8), so one 64-byte load is 4 k
//           of 16 rows, the u8 operand of vpdpbusd against 4 broadcast bytes of x;
//   scales  [k / 32 blocks][16 rows] fp16 d.
// A GEMV then reads one sequential stream with one vpdpbusd per 64 bytes, where the row
// layout needs ~15 instructions per 68 (docs/gemm.md, "Q8_0 in groups of 16 rows"). llama.cpp
// regroups Q8_0 likewise at load on CPUs with AMX.
// Arithmetic: x is quantized to Q8_0 per row (quantize_q8_0_rows' bits); each output is
//   f = 0; for each block b in order: f = fma(float(s_b), d_w,b * d_x,b, f)
// with s_b the exact int32 block dot — the same bits on every ISA path, for every m, pool and
// chunking.
inline constexpr int kQ8R16Rows = 16;
// q8_0_rows [n, k] (n % 16 == 0, k % 32 == 0, |q| <= 127) regrouped into out (the same size).
Status repack_q8_0_r16(const void* q8_0_rows, int64_t n, int64_t k, void* out);
// Row r of a kQ8_0R16 matrix with k columns written back in Q8_0 row form (the exact inverse).
void q8_0_r16_row(const void* r16, int64_t k, int64_t r, void* q8_0_row);

// ---- F16 in groups of 16 rows (WeightFormat::kF16R16) ----
// Group g (rows 16g .. 16g + 15) at byte 32 g k: [k][16 rows] fp16, so one 32-byte load is
// one k of 16 rows, widened into one zmm and multiplied by x[k] broadcast. Arithmetic (x
// rounded to fp16 first under F16Activations::kF16): per output four fp32 accumulators,
// k into accumulator k % 4 by fma in k order, y = (a0 + a1) + (a2 + a3) — the same bits on
// every ISA path, for every m, pool and chunking. Two groups at a time (two streams) measured
// 1.07 of a one-stream sum-read on one core against 0.84 for the row kernel (docs/gemm.md).
Status repack_f16_r16(const void* f16_rows, int64_t n, int64_t k, void* out);
// Row r of a kF16R16 matrix with k columns written back as k fp16 (the exact inverse).
void f16_r16_row(const void* r16, int64_t k, int64_t r, void* f16_row);

// How gemm_stored treats activations against Q8_0 weights (knob kernel.gemm.q8_0_activations).
enum class Q8Activations : uint8_t {
  kF32,   // fp32 x against d·q widened in registers: fp32 products and accumulation
  kQ8_0,  // x quantized to Q8_0 too, byte for byte as ggml's quantize_row_q8_0 (fp16 block
          // scales; quantize_q8_0_rows), exact int8 block dots (vpdpbusd / vpmaddubsw), fp32
          // accumulation of dot (d_w d_x) — llama.cpp's arithmetic but for the fp32 summation
          // order, ~2x fewer instructions per weight
  kQ8_0Ggml,  // as kQ8_0, each output summed in ggml's order (gemm_q8_ggml.h): llama.cpp's bits;
              // Q8_0 rows only (a load under it keeps Q8_0 in rows), slower than kQ8_0
};
std::string_view q8_activations_name(Q8Activations a);  // "f32", "q8_0", "q8_0_ggml"
Result<Q8Activations> q8_activations_from_config(const Config& config);

// How gemm_stored treats activations against F16 weights (knob kernel.gemm.f16_activations).
enum class F16Activations : uint8_t {
  kF32,  // fp32 x against the widened weights
  kF16,  // x rounded to fp16 first (nearest even; overflow -> inf), then the same fp32 products
         // and accumulation — llama.cpp's arithmetic; the one-row GEMV reads x as fp16, half
         // the bytes next to the W stream (docs/gemm.md, "F16 activations")
};
std::string_view f16_activations_name(F16Activations a);  // "f32", "f16"
Result<F16Activations> f16_activations_from_config(const Config& config);

// How many 16-row groups the one-token AVX-512 GEMV of kF16R16 / kQ8_0R16 weights reads at once,
// each a sequential stream of its own (knob kernel.gemv.streams). Which is fastest depends on the
// core's prefetchers and the format (docs/gemm.md, "Streams"); kAuto takes what was measured best.
enum class GroupStreams : uint8_t { kAuto = 0, kOne = 1, kTwo = 2, kFour = 4 };
std::string_view group_streams_name(GroupStreams s);  // "auto", "1", "2", "4"
// The count a format's GEMV runs with on this CPU: s itself, or for kAuto the measured best.
int group_streams(GroupStreams s, WeightFormat format);

// The activation forms of gemm_stored, per weight format, and how its one-token GEMV over
// 16-row groups streams them. Built from a Q8Activations alone, F16 weights keep fp32 activations.
struct Activations {
  Q8Activations q8 = Q8Activations::kF32;
  F16Activations f16 = F16Activations::kF32;
  GroupStreams streams = GroupStreams::kAuto;
  constexpr Activations() = default;
  constexpr Activations(Q8Activations q8_form, F16Activations f16_form = F16Activations::kF32,  // NOLINT: implicit
                        GroupStreams group_streams = GroupStreams::kAuto)
      : q8(q8_form), f16(f16_form), streams(group_streams) {}
  friend constexpr bool operator==(const Activations&, const Activations&) = default;
};
// The knobs kernel.gemm.q8_0_activations, kernel.gemm.f16_activations and kernel.gemv.streams.
Result<Activations> activations_from_config(const Config& config);

// y[m, n] = sum_k x[m, k] w[n, k] with fp32 products of fp32 x and the exactly widened weights,
// fp32 accumulation (for Q8_0 with Q8Activations::kQ8_0 and F16 with F16Activations::kF16: see
// there). W is streamed once for any M; meant for M <= 8 (decode). ws may be null (a
// thread-local workspace is used).
Status gemm_stored(const WeightView& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                   Workspace* ws = nullptr, Activations act = {});

// W8A8 weights as a model file stores them (docs/engine.md, "W8A8"): int8 rows q [n, k]
// (|q| <= 127), an fp32 scale per row, and comp[n] = 128 sum_k q[n, k] (the VNNI path's
// compensation; w8a8_compensation computes it once per weight). x is quantized per row to int8
// (quantize_int8_rows: per-token scale amax / 127) and y[m, n] = s_x s_w sum_k q_x q_w, the
// integer sum exact, as gemm() computes Precision::kW8A8. Fails on bad sizes (k > 65536) or
// non-finite x. ws may be null (a thread-local workspace is used).
struct W8A8View {
  int64_t n = 0;
  int64_t k = 0;
  const int8_t* q = nullptr;
  const float* scales = nullptr;
  const int32_t* comp = nullptr;
};
void w8a8_compensation(const int8_t* q, int64_t n, int64_t k, int32_t* comp);
Status gemm_w8a8_stored(const W8A8View& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                        Workspace* ws = nullptr);

// BF16 weights read in place against x at a bf16-family precision (docs/gemm.md): kBf16 rounds
// x to bf16; kBf16x3 splits it into hi + lo, kBf16x6 into hi + mid + lo. W is exactly bf16, so
// the products with W's lower parts vanish and only x's parts remain: the parts are the rows of
// one bf16 GEMM (vdpbf16ps) that streams W once, and each output adds its parts' sums smallest
// first. kF32 is gemm_stored's widening GEMV; other precisions and formats are refused.
Status gemm_stored_bf16(const WeightView& w, Precision precision, const float* x, int64_t m, float* y,
                        ThreadPool* pool, Workspace* ws = nullptr);

}  // namespace recur::gemm
