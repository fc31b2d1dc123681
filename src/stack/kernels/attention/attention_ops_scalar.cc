// The scalar path of attend() (attention_ops.h): attention_ops_impl.h over one-lane "vectors",
// with libm's expf. Also the scratch size every path shares.
#include <math.h>

#include <cstring>

#include "core/convert.h"
#include "kernels/attention/attention_ops_impl.h"
#include "kernels/simd/vec_scalar.h"

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

// The shared one-lane traits plus the KV cache's dequantizers.
struct ScalarVec : simd::ScalarVec {
  static R deq_bf16(const uint16_t* p) { return bf16_value(*p); }
  static R deq_bf16_n(const uint16_t* p, int) { return bf16_value(*p); }
  static R deq_f16(const uint16_t* p) { return fp16_to_fp32(*p); }
  static R deq_f16_n(const uint16_t* p, int) { return fp16_to_fp32(*p); }
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
