// What the GEMM drivers (gemm.cc, gemm_stored.cc) and the per-ISA kernels share: the argument
// block of one dot-algorithm call, the kernel tables, and the packed layouts.
//
// Packed layouts (PackedWeights, per precision):
//   f32     hi = fp32 rows [n, k];                     panels = 64-column panels (below)
//   tf32    hi = tf32-rounded fp32 rows;               panels likewise, of the rounded values
//   tf32x3  hi, lo = tf32 parts as fp32 rows
//   bf16    hi = bf16 rows [n, k] (uint16)
//   bf16x3  hi, lo = bf16 parts (uint16 rows)
//   bf16x6  hi, mid, lo = bf16 parts (uint16 rows)
//   w8a8    hi = int8 rows, scales = fp32 [n], comp = int32 [n] = 128 * sum_k q[n, k]
// Panels: ceil(n / 64) panels, each [k][64] fp32 (column j of panel p is row 64 p + j of W),
// zero-padded past n. Packed A of the tiled algorithm: ceil(m / 6) strips, each [k][6], zero
// padded past m.
// Thread-safety: kernels are pure functions of their arguments.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "kernels/gemm/gemm.h"

namespace recur::gemm {

// One dot-algorithm call: outputs y[m, n] for m in [m0, m1), n in [n0, n1), over k in [k0, k1).
// k0 == 0 stores; k0 > 0 adds to y. X rows have stride k (elements of the X type); W rows have
// stride k elements (Q8_0: k / 32 * 34 bytes).
struct DotArgs {
  int64_t k = 0;
  int64_t m0 = 0, m1 = 0, n0 = 0, n1 = 0, k0 = 0, k1 = 0;
  const void* x = nullptr;
  const void* x_lo = nullptr;
  const void* x_mid = nullptr;  // bf16x6
  const void* w = nullptr;
  const void* w_lo = nullptr;
  const void* w_mid = nullptr;  // bf16x6
  const float* x_scale = nullptr;   // w8a8: per X row
  const float* w_scale = nullptr;   // w8a8: per W row
  const int32_t* w_comp = nullptr;  // w8a8 (VNNI path): 128 * sum_k w[n, k]
  float* y = nullptr;
  int64_t ldy = 0;
  // One W row per tile instead of up to 4 (set by run_dot for GEMV over weights beyond the
  // caches): each thread then reads W as one sequential stream, which DRAM and the hardware
  // prefetcher serve better than 4 interleaved short rows. Each output's arithmetic is the same.
  bool one_row_tiles = false;
};
using DotFn = void (*)(const DotArgs&);

// The dot kernels of one ISA path. A null entry means "not on this path" (use the next lower).
struct DotKernels {
  DotFn f32 = nullptr;     // f32 X, f32 W
  DotFn f16w = nullptr;    // f32 X, fp16 W
  DotFn bf16w = nullptr;   // f32 X, bf16 W widened
  DotFn q8_0w = nullptr;   // f32 X, Q8_0 W (k0, k1 multiples of 32)
  DotFn bf16 = nullptr;    // bf16 X, bf16 W
  DotFn f32x3 = nullptr;   // fp32 hi/lo pairs (tf32x3)
  DotFn bf16x3 = nullptr;  // bf16 hi/lo pairs
  DotFn bf16x6 = nullptr;  // bf16 hi/mid/lo triples
  DotFn i8 = nullptr;      // int8 X, int8 W (|w| <= 127), scaled epilogue; K0 must be 0, K1 = k
  DotFn q8_0q8 = nullptr;  // Q8_0 X (int8 x, fp32 scale per 32 in x_scale), Q8_0 W (|q| <= 127)
};

extern const DotKernels kScalarDot;
extern const DotKernels kAvx2Dot;
extern const DotKernels kAvx512Dot;  // bf16 needs avx512bf16, i8 needs avx512vnni

// The table to use at `isa`, with bf16 / i8 replaced by the AVX2 ones where the CPU lacks
// avx512bf16 / avx512vnni.
const DotKernels& dot_kernels(Isa isa);

// One-row GEMV (M = 1) over stored weights, rows [r0, r1) of y = W x: each W row is one
// sequential stream and meets x with several independent accumulator chains (the dot tiles
// have one chain per output), so neither FMA latency nor the widening bounds it below DRAM
// speed. Q8_0 takes x pre-quantized (prepare_q8_gemv_x): two blocks per 512-bit vpdpbusd.
struct GemvArgs {
  int64_t k = 0;
  const void* w = nullptr;
  size_t w_row_bytes = 0;
  const float* x = nullptr;           // f32 / f16 / bf16 weights: fp32 x [k]
  const uint16_t* x_f16 = nullptr;    // F16 weights with F16Activations::kF16 (f16w_f16x): x as fp16 [k]
  const int8_t* x_abs = nullptr;      // Q8_0: |q| of the quantized x, k bytes (zero-padded to 64)
  const uint64_t* x_neg = nullptr;    // Q8_0: bit i of word j set where q[64 j + i] < 0
  const float* x_scale16 = nullptr;   // Q8_0: per pair of blocks p, 16 floats: d[2p] x 8, d[2p+1] x 8
  const int8_t* x_q = nullptr;        // Q8_0 (AVX2): q of x as quantize_q8_0_rows gives it, k bytes
  const float* x_d = nullptr;         // Q8_0 (AVX2): its block scales, k / 32
  float* y = nullptr;
};
using GemvFn = void (*)(const GemvArgs&, int64_t r0, int64_t r1);
// x [k] quantized to Q8_0 as quantize_q8_0_rows does (the same bits), in the GemvArgs form.
struct GemvQ8X {
  int8_t* abs;        // ceil(blocks / 2) * 64 bytes
  uint64_t* neg;      // ceil(blocks / 2)
  float* scale16;     // ceil(blocks / 2) * 16
  float* d;           // blocks: the plain block scales
};
using GemvQ8PrepareFn = void (*)(const float* x, int64_t k, GemvQ8X& out);
struct GemvKernels {
  GemvFn f32 = nullptr;
  GemvFn f16w = nullptr;
  // F16 weights against x rounded to fp16, given both as x_f16 and as its fp32 values in x:
  // f16w's accumulators and order, so the bits f16w gives for the rounded x (AVX-512;
  // elsewhere f16w runs on the fp32 copy).
  GemvFn f16w_f16x = nullptr;
  GemvFn bf16w = nullptr;
  GemvFn q8_0q8 = nullptr;  // AVX-512: needs avx512vnni; AVX2: reads x_q / x_d
  GemvQ8PrepareFn q8_prepare = nullptr;  // AVX-512
  // AVX2: x [k] as quantize_q8_0_rows gives it (the same bits), into x_q / x_d.
  void (*q8_quantize)(const float* x, int64_t k, int8_t* q, float* d) = nullptr;
};
extern const GemvKernels kAvx512Gemv;
extern const GemvKernels kAvx2Gemv;

// Prefill GEMM over stored weights (AVX-512), for M > 8: y[m, n] = x[m, k] W^T with W read
// in place. X is packed once per call as X^T panels of 64 tokens ([k][64] fp32, zero past m;
// for Q8_0 weights with Q8_0 activations where the int8 GEMM below cannot run (no VNNI), x's
// Q8_0 values q d); each thread converts 6 W rows
// of one K block to fp32 at a time (contiguous, exact: f16, bf16, d q) and a 6 x 64 register
// tile (6 broadcast weights against 4 vectors of 16 tokens, 24 zmm accumulators) walks the
// block. Each output sums K in blocks of kPrefillKc, fp32 FMA in k order within a block, the
// blocks' sums added to y in order: independent of the thread count and of m.
inline constexpr int kPrefillTokens = 64;
inline constexpr int kPrefillRows = 6;
inline constexpr int64_t kPrefillKc = 1024;
struct PrefillArgs {
  WeightFormat format = WeightFormat::kF32;
  const void* w = nullptr;
  size_t w_row_bytes = 0;
  int64_t n = 0, k = 0, m = 0;
  const float* xt = nullptr;  // ceil(m / 64) panels of [k][64]
  float* y = nullptr;
};
struct PrefillKernels {
  // Columns [k0, k1) (multiples of 32 except at k) of the X^T panels; q8: x's Q8_0 values.
  void (*pack_x)(const float* x, int64_t m, int64_t k, bool q8, float* xt, int64_t k0, int64_t k1) = nullptr;
  // Outputs of W rows [r0, r1) for every token.
  void (*rows)(const PrefillArgs& a, int64_t r0, int64_t r1) = nullptr;
  int tokens = kPrefillTokens;  // tokens per X^T panel ([k][tokens] fp32, zero past m)
};
extern const PrefillKernels kAvx512Prefill;
extern const PrefillKernels kAvx2Prefill;  // the same on 8 lanes: panels of 16 tokens, 6 x 16 tiles

// The prefill GEMM of Q8_0 weights against Q8_0 activations (AVX-512 VNNI), llama.cpp's
// arithmetic: x quantized per token and block of 32 (quantize_q8_0_rows' bits) and packed as
// u = q + 128 in panels of 32 tokens, [k / 4][32 tokens][4 bytes] (one zmm holds 4 k of 16
// tokens); W's int8 read in place, 4 bytes broadcast. A 6-row x 32-token tile sums each block
// exactly in int32 (8 vpdpbusd), subtracts comp = 128 sum(q_w) of the block, and adds
// float(dot) * (d_x d_w) to fp32 accumulators; K in blocks of kPrefillKc as above.
inline constexpr int kPrefillQ8Tokens = 32;
struct PrefillQ8Args {
  const void* w = nullptr;
  size_t w_row_bytes = 0;
  int64_t n = 0, k = 0, m = 0;
  const uint8_t* xq = nullptr;  // ceil(m / 32) panels of [k / 4][32][4] bytes
  const float* dx = nullptr;    // ceil(m / 32) panels of [k / 32][32] block scales (0 past m)
  float* y = nullptr;
};
struct PrefillQ8Kernels {
  // Tokens [t0, t1) of the panels (past m: q = 0, d = 0).
  void (*pack_x)(const float* x, int64_t m, int64_t k, uint8_t* xq, float* dx, int64_t t0, int64_t t1) = nullptr;
  void (*rows)(const PrefillQ8Args& a, int64_t r0, int64_t r1) = nullptr;
};
extern const PrefillQ8Kernels kAvx512PrefillQ8;  // needs avx512vnni

// Q8_0 in groups of 16 rows (WeightFormat::kQ8_0R16, layout and arithmetic in gemm.h) against
// x quantized per token: groups [g0, g1) of y for all m tokens. A group (k / 32 * 544 bytes)
// stays in L1/L2 while the tokens pass over it in tiles, so W is read from memory once for
// any m.
struct Q8R16Args {
  int64_t k = 0, m = 0;
  const uint8_t* w = nullptr;    // the groups
  const int8_t* xq = nullptr;    // [m][k] quantized x
  const float* dx = nullptr;     // [m][k / 32] its block scales
  const int32_t* corr = nullptr; // [m][k / 32] 128 * the block's sum of q: vpdpbusd's u = q + 128 offset
  float* y = nullptr;            // y[t * ldy + row]
  int64_t ldy = 0;
  int streams = 2;  // one token: groups read at once (AVX-512: 1, 2 or 4)
};
struct Q8R16Kernels {
  void (*groups)(const Q8R16Args& a, int64_t g0, int64_t g1) = nullptr;
  // Token rows [t0, t1) of x [., k] into xq / dx (quantize_q8_0_rows' bits) and, for the
  // kernels that read it (scalar, AVX-512), corr. Use a table's prepare with its own groups.
  void (*prepare)(const float* x, int64_t k, int64_t t0, int64_t t1, int8_t* xq, float* dx, int32_t* corr) = nullptr;
};
extern const Q8R16Kernels kScalarQ8R16;
extern const Q8R16Kernels kAvx2Q8R16;
extern const Q8R16Kernels kAvx512Q8R16;  // needs avx512vnni
// The table for the running CPU: AVX-512 with VNNI, else AVX2, else scalar (at most `isa`).
const Q8R16Kernels& q8r16_kernels(Isa isa);

// F16 in groups of 16 rows (WeightFormat::kF16R16, gemm.h) against fp32 x (already rounded to
// fp16 where the activations say so): groups [g0, g1) of y for all m tokens, the tokens in
// tiles while a group stays in L1/L2.
struct F16R16Args {
  int64_t k = 0, m = 0;
  const uint16_t* w = nullptr;  // the groups
  const float* x = nullptr;     // [m][k]
  float* y = nullptr;           // y[t * ldy + row]
  int64_t ldy = 0;
  int streams = 2;  // one token: groups read at once (AVX-512: 1, 2 or 4)
};
using F16R16Fn = void (*)(const F16R16Args& a, int64_t g0, int64_t g1);
extern const F16R16Fn kScalarF16R16;
extern const F16R16Fn kAvx2F16R16;
extern const F16R16Fn kAvx512F16R16;
// AVX-512, else AVX2, else scalar (at most `isa`).
F16R16Fn f16r16_kernel(Isa isa);

// Tiled f32 microkernel (AVX-512): C[6 x 64] (+)= A strip [kc][6] · B panel slice [kc][64];
// only the first mr rows and nr columns of C are written (ldc floats per row).
using MicroFn = void (*)(const float* a, const float* b, int64_t kc, float* c, int64_t ldc, int mr, int nr,
                         bool accumulate);
inline constexpr int kTileM = 6;
inline constexpr int kTileN = 64;
extern const MicroFn kMicroAvx512;

}  // namespace recur::gemm

namespace recur {
class ThreadPool;
}

namespace recur::gemm {

// x [m, k] (k % 32 == 0) as Q8_0 activations, ggml's quantize_row_q8_0 (llama.cpp c392e50, the
// x86 AVX path its CPU backend runs for every Q8_0 matmul's activations): per block of 32,
// amax = max |x|, d = fp16(amax / 127) (nearest even; returned widened to fp32, exact) and
// q = round_half_even(x * (127 / amax)) in fp32 (|q| <= 127; a zero block gets d = 0, q = 0;
// when 127 / amax overflows, amax < 3.7e-37, q = -128 as ggml's conversion gives, with d = 0).
void quantize_q8_0_rows(const float* x, int64_t m, int64_t k, int8_t* q, float* d);
// One element and one scale of it: q8_0_round(x * id) and q8_0_scale(amax).
int8_t q8_0_round(float v);
float q8_0_scale(float amax);

// Runs fn over every output of `base` (m rows, n columns, K = base.k), W rows split statically
// over the pool in blocks of 4; K in blocks of kc (a multiple of the kernel's chunk, or >= K),
// X rows in blocks of mc. base's m0/m1/n0/n1/k0/k1 are ignored.
// `w_row_bytes`: one W row in its stored form, which (with n) decides one_row_tiles.
void run_dot(DotFn fn, const DotArgs& base, int64_t m, int64_t n, int64_t kc, int64_t mc, size_t w_row_bytes,
             ThreadPool* pool);

}  // namespace recur::gemm
