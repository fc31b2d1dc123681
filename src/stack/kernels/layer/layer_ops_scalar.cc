// The scalar layer loops: layer_ops_impl.h over one-lane "vectors" (plain floats, libm exp).
#include <cmath>

#include "kernels/layer/layer_ops_impl.h"

namespace recur::kernels {
namespace {

struct ScalarVec {
  using R = float;
  using M = bool;
  static constexpr int W = 1;
  static R zero() { return 0.0f; }
  static R set1(float x) { return x; }
  static R load(const float* p) { return *p; }
  static void store(float* p, R x) { *p = x; }
  static R load_n(const float* p, int) { return *p; }
  static void store_n(float* p, R x, int) { *p = x; }
  static R keep_n(R x, int, float) { return x; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, R b) { return a * b; }
  static R div(R a, R b) { return a / b; }
  static R fma(R a, R b, R c) { return a * b + c; }
  static R max(R a, R b) { return a > b ? a : b; }
  static R abs(R a) { return std::fabs(a); }
  static M lt(R a, R b) { return a < b; }
  static R blend(M m, R if_false, R if_true) { return m ? if_true : if_false; }
  static R exp(R a) { return std::exp(a); }
  static R swap_pairs(R a) { return a; }  // unused: rope_row_t has a scalar loop
  static R load_i8(const int8_t* q) { return float(*q); }
  static float hsum(R a) { return a; }
  static float hmax(R a) { return a; }
};

}  // namespace

const LayerOps kLayerOpsScalar = make_layer_ops<ScalarVec>(Isa::kScalar);

}  // namespace recur::kernels
