// One-lane "vector" traits: the scalar path of the kernel families' *_impl.h templates, with the
// names of vec_avx2.h / vec_avx512.h (the arithmetic ones; a family derives for what only it
// needs) and libm's expf. Internal linkage like the vector headers.
#pragma once

#include <math.h>

namespace recur::simd {
namespace {

struct ScalarVec {
  using R = float;
  static constexpr int W = 1;
  static R zero() { return 0.0f; }
  static R set1(float x) { return x; }
  static R load(const float* p) { return *p; }
  static R load_n(const float* p, int) { return *p; }
  static void store(float* p, R x) { *p = x; }
  static void store_n(float* p, R x, int) { *p = x; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, R b) { return a * b; }
  static R fma(R a, R b, R c) { return a * b + c; }
  static R max(R a, R b) { return a < b ? b : a; }
  static R keep_n(R a, int) { return a; }
  static float hsum(R a) { return a; }
  static float hmax(R a) { return a; }
  static R exp(R a) { return expf(a); }
};

}  // namespace
}  // namespace recur::simd
