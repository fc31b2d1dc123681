// The hot loops of ggml_arith's dot products (ggml_dot.cc): each lane's fma chain along k. They are
// compiled twice, for any x86-64 (ggml_dot_loops.cc) and with AVX2/FMA/F16C (ggml_dot_loops_avx2.cc),
// where the lanes become vector fmas: the same bits (an fma and an fp16 widening are exact
// operations, and the library is built with -ffp-contract=off), about 50x the speed of a libm fmaf
// call per product. dot_loops() picks the fastest the CPU runs (the --isa cap respected).
#pragma once

#include <cmath>
#include <cstdint>

namespace recur::ggml_arith {

// acc[a][j] += x[i + a L + j] y[i + a L + j] (fma) over whole steps i < np of 4 L; L = lanes.
// tile: acc[j] += a[i + j] b[i + j] (fma) over i < k in steps of L.
struct DotLoops {
  void (*vec_f16)(int lanes, int64_t np, const uint16_t* x, const uint16_t* y, float (*acc)[16]);
  void (*vec_f32)(int lanes, int64_t np, const float* x, const float* y, float (*acc)[16]);
  void (*tile_f16)(int lanes, int64_t k, const uint16_t* a, const uint16_t* b, float* acc);
  void (*tile_f32)(int lanes, int64_t k, const float* a, const float* b, float* acc);
};
extern const DotLoops kDotLoopsScalar;
extern const DotLoops kDotLoopsAvx2;
const DotLoops& dot_loops();

namespace loops {

// Instantiated in each ISA's file with its own fp16 widening (Widen).
template <int L, class T, class Widen>
void vec(int64_t np, const T* x, const T* y, float (*acc)[16], Widen widen) {
  for (int64_t i = 0; i < np; i += 4 * L)
    for (int a = 0; a < 4; ++a)
      for (int j = 0; j < L; ++j) {
        const int64_t at = i + a * L + j;
        acc[a][j] = std::fma(widen(x[at]), widen(y[at]), acc[a][j]);
      }
}

template <int L, class T, class Widen>
void tile(int64_t k, const T* a, const T* b, float* acc, Widen widen) {
  for (int64_t i = 0; i < k; i += L)
    for (int j = 0; j < L; ++j) acc[j] = std::fma(widen(a[i + j]), widen(b[i + j]), acc[j]);
}

struct WidenF32 {
  float operator()(float v) const { return v; }
};

// A DotLoops of one ISA's file: lanes 16 or 8 chosen at run time, the loops at compile time.
template <class WidenF16>
constexpr DotLoops make_dot_loops(WidenF16) {
  return DotLoops{
      .vec_f16 = [](int lanes, int64_t np, const uint16_t* x, const uint16_t* y, float (*acc)[16]) {
        lanes == 16 ? vec<16>(np, x, y, acc, WidenF16{}) : vec<8>(np, x, y, acc, WidenF16{});
      },
      .vec_f32 = [](int lanes, int64_t np, const float* x, const float* y, float (*acc)[16]) {
        lanes == 16 ? vec<16>(np, x, y, acc, WidenF32{}) : vec<8>(np, x, y, acc, WidenF32{});
      },
      .tile_f16 = [](int lanes, int64_t k, const uint16_t* a, const uint16_t* b, float* acc) {
        lanes == 16 ? tile<16>(k, a, b, acc, WidenF16{}) : tile<8>(k, a, b, acc, WidenF16{});
      },
      .tile_f32 = [](int lanes, int64_t k, const float* a, const float* b, float* acc) {
        lanes == 16 ? tile<16>(k, a, b, acc, WidenF32{}) : tile<8>(k, a, b, acc, WidenF32{});
      }};
}

}  // namespace loops
}  // namespace recur::ggml_arith
