// The scalar KDA primitives: kda_ops_impl.h over one-lane float "vectors" and libm.
#include <cmath>

#include "kernels/kda/kda_ops_impl.h"
#include "kernels/simd/vec_scalar.h"

namespace recur::kda {
namespace {

// The shared one-lane traits plus what only KDA uses.
struct ScalarVec : simd::ScalarVec {
  static R div(R a, R b) { return a / b; }
  static R max(R a, R b) { return a > b ? a : b; }
  static R abs(R a) { return std::fabs(a); }
  static R sqrt(R a) { return std::sqrt(a); }
  static R rsqrt_nr(R a) { return 1.0f / std::sqrt(a); }
  static R rcp_nr(R a) { return 1.0f / a; }
  static R exp(R a) { return std::exp(a); }
  static R log(R a) { return std::log(a); }
  static R select_eq(R a, R b, R x, R y) { return a == b ? x : y; }
};

}  // namespace

const KdaOps kScalarOps = make_ops<ScalarVec>();

}  // namespace recur::kda
