// The dot algorithm, written once over an "Op" type and instantiated per ISA and operand kind
// by gemm_dot_scalar.cc, gemm_dot_avx2.cc and gemm_dot_avx512.cc.
//
// For each block of 4 W rows (outer, so those rows stay in L1/L2 while every X row meets them)
// and each block of MR <= 4 X rows, a tile keeps MR x NR accumulators (NR = 4, 2 or 1 so that
// MR * NR * Op::kAccRegs <= 16 registers) and walks k in chunks of Op::kChunk elements; the
// last, partial chunk is zero-padded by the Op. Include only from those files: everything has
// internal linkage, so the compilations with different -m flags never meet in the link.
//
// Op provides: kChunk, kAccRegs, types X, W, Acc; zero(); load_x(a, row, k, len);
// load_w(a, row, k, len) (len < kChunk only for the tail); mac(acc, x, w); and
// store(a, m, n, acc), which reduces the accumulator and stores (k0 == 0) or adds to y.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/gemm/gemm_internal.h"

namespace recur::gemm {
namespace {

constexpr int nr_for(int mr, int acc_regs) {
  return mr * 4 * acc_regs <= 16 ? 4 : mr * 2 * acc_regs <= 16 ? 2 : 1;
}

template <class Op, int MR, int NR>
inline void dot_tile(const Op& op, const DotArgs& a, int64_t m0, int64_t n0) {
  typename Op::Acc acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = op.zero();
  auto step = [&](int64_t k, int len) {
    typename Op::W w[NR];
    for (int j = 0; j < NR; ++j) w[j] = op.load_w(a, n0 + j, k, len);
    for (int i = 0; i < MR; ++i) {
      typename Op::X x = op.load_x(a, m0 + i, k, len);
      for (int j = 0; j < NR; ++j) op.mac(acc[i][j], x, w[j]);
    }
  };
  int64_t k = a.k0;
  for (; k + Op::kChunk <= a.k1; k += Op::kChunk) step(k, Op::kChunk);
  if (k < a.k1) step(k, int(a.k1 - k));
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) op.store(a, m0 + i, n0 + j, acc[i][j]);
}

// Whether an Op may use one-row tiles when run_dot asks for them (DotArgs::one_row_tiles): an
// Op opts out with kOneRowTiles = false where a single tile chain is slower than DRAM or X's
// conversion is shared by the 4-row tile (AVX2's 16-bit weights).
template <class Op>
constexpr bool one_row_tiles_ok() {
  if constexpr (requires { Op::kOneRowTiles; }) return Op::kOneRowTiles;
  else return true;
}

// Tiles covering X rows [m0, m0 + MR) against W rows [n0, n0 + nb), nb <= 4.
template <class Op, int MR>
inline void dot_cover(const Op& op, const DotArgs& a, int64_t m0, int64_t n0, int nb) {
  constexpr int NR = nr_for(MR, Op::kAccRegs);
  int j = 0;
  if (one_row_tiles_ok<Op>() && a.one_row_tiles) {
    for (; j < nb; ++j) dot_tile<Op, MR, 1>(op, a, m0, n0 + j);
    return;
  }
  for (; j + NR <= nb; j += NR) dot_tile<Op, MR, NR>(op, a, m0, n0 + j);
  for (; j < nb; ++j) dot_tile<Op, MR, 1>(op, a, m0, n0 + j);
}

template <class Op>
void dot_run(const DotArgs& a) {
  const Op op(a);
  for (int64_t n = a.n0; n < a.n1; n += 4) {
    const int nb = int(std::min<int64_t>(4, a.n1 - n));
    for (int64_t m = a.m0; m < a.m1; m += 4) {
      switch (std::min<int64_t>(4, a.m1 - m)) {
        case 1: dot_cover<Op, 1>(op, a, m, n, nb); break;
        case 2: dot_cover<Op, 2>(op, a, m, n, nb); break;
        case 3: dot_cover<Op, 3>(op, a, m, n, nb); break;
        default: dot_cover<Op, 4>(op, a, m, n, nb); break;
      }
    }
  }
}

// Stores one finished fp32 sum: y = s on the first K block, y += s after.
inline void store_sum(const DotArgs& a, int64_t m, int64_t n, float s) {
  float* p = a.y + m * a.ldy + n;
  *p = a.k0 == 0 ? s : *p + s;
}

// The w8a8 epilogue: y = (isum - comp) * sx * sw, in double so the only rounding is the last.
inline void store_i8(const DotArgs& a, int64_t m, int64_t n, int64_t isum) {
  a.y[m * a.ldy + n] = float(double(isum) * double(a.x_scale[m]) * double(a.w_scale[n]));
}

}  // namespace
}  // namespace recur::gemm
