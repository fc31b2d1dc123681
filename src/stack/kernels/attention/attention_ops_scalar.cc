// The scalar path of attend() (attention_ops.h): attention_ops_impl.h over one-lane "vectors",
// with libm's expf. Also the scratch size every path shares.
#include <math.h>

#include <cstring>

#include "kernels/attention/attention_ops_impl.h"

namespace recur::kernels::attention {
namespace {

float fp8_value(uint8_t b) {
  // E4M3FN without NaN (the cache never stores NaN): the 7 magnitude bits placed at fp32's
  // exponent/mantissa boundary read as a value 2^-120 of the fp8 one, subnormals included.
  uint32_t bits = (uint32_t(b & 0x7F) << 20) | (uint32_t(b & 0x80) << 24);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f * 0x1p120f;
}

float bf16_value(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

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
  static R deq_bf16(const uint16_t* p) { return bf16_value(*p); }
  static R deq_bf16_n(const uint16_t* p, int) { return bf16_value(*p); }
  static R deq_fp8(const uint8_t* p) { return fp8_value(*p); }
  static R deq_fp8_n(const uint8_t* p, int) { return fp8_value(*p); }
  static R deq_i8(const int8_t* p) { return float(*p); }
  static R deq_i8_n(const int8_t* p, int) { return float(*p); }
};

}  // namespace

void attend_scalar(const AttendArgs& args) { attend_impl<ScalarVec>(args); }

int64_t attend_scratch_floats(int page_size, int head_dim, int rows) {
  // K tile, V tile, scores [rows, page], fp8-scaled q [rows, head_dim], plus a line of slack.
  return 2 * int64_t(page_size) * head_dim + int64_t(rows) * page_size + int64_t(rows) * head_dim + 16;
}

}  // namespace recur::kernels::attention
