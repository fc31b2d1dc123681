// The scalar KDA primitives: kda_ops_impl.h over one-lane float "vectors" and libm.
#include <cmath>

#include "kernels/kda/kda_ops_impl.h"

namespace recur::kda {
namespace {

struct ScalarVec {
  using R = float;
  static constexpr int W = 1;
  static R zero() { return 0.0f; }
  static R set1(float x) { return x; }
  static R load(const float* p) { return *p; }
  static void store(float* p, R x) { *p = x; }
  static R load_n(const float* p, int) { return *p; }
  static void store_n(float* p, R x, int) { *p = x; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, R b) { return a * b; }
  static R div(R a, R b) { return a / b; }
  static R fma(R a, R b, R c) { return a * b + c; }
  static R max(R a, R b) { return a > b ? a : b; }
  static R abs(R a) { return std::fabs(a); }
  static R sqrt(R a) { return std::sqrt(a); }
  static R rsqrt_nr(R a) { return 1.0f / std::sqrt(a); }
  static R rcp_nr(R a) { return 1.0f / a; }
  static R exp(R a) { return std::exp(a); }
  static R log(R a) { return std::log(a); }
  static R select_eq(R a, R b, R x, R y) { return a == b ? x : y; }
  static float hsum(R a) { return a; }
};

}  // namespace

const KdaOps kScalarOps = make_ops<ScalarVec>();

}  // namespace recur::kda
