// The scalar dot kernels: gemm_dot_impl.h over plain C++ with eight partial sums per output
// (chunk 8), the path every other one is checked against and the fallback without AVX2.
#include <cstring>

#include "core/convert.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_dot_impl.h"
#include "kernels/gemm/gemm_round.h"

namespace recur::gemm {
namespace {

struct Sum8 {
  float s[8];
  float total() const { return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])); }
};

// One row chunk: a pointer and how many elements of it are valid.
template <class T>
struct Chunk {
  const T* p;
  int len;
};

// X and W elements of types XT and WT, widened to fp32 by XV and WV.
template <class XT, class WT, float (*XV)(XT), float (*WV)(WT)>
struct PlainOp {
  static constexpr int kChunk = 8;
  static constexpr int kAccRegs = 1;
  using X = Chunk<XT>;
  using W = Chunk<WT>;
  using Acc = Sum8;
  explicit PlainOp(const DotArgs&) {}
  Acc zero() const { return Sum8{}; }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return {static_cast<const XT*>(a.x) + row * a.k + k, len};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return {static_cast<const WT*>(a.w) + row * a.k + k, len};
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    for (int i = 0; i < x.len; ++i) acc.s[i] += XV(x.p[i]) * WV(w.p[i]);
  }
  void store(const DotArgs& a, int64_t m, int64_t n, const Acc& acc) const { store_sum(a, m, n, acc.total()); }
};

float f32v(float x) { return x; }
float f16v(uint16_t h) { return fp16_to_fp32(h); }
float bf16v(uint16_t h) { return bf16_value(h); }

using F32Op = PlainOp<float, float, f32v, f32v>;
using F16WOp = PlainOp<float, uint16_t, f32v, f16v>;
using Bf16WOp = PlainOp<float, uint16_t, f32v, bf16v>;
using Bf16Op = PlainOp<uint16_t, uint16_t, bf16v, bf16v>;

struct Sum8x2 {
  Sum8 big, small;
};

// hi·hi into `big`, hi·lo + lo·hi into `small`; the two meet only at the end.
template <class T, float (*V)(T)>
struct Split3Op {
  static constexpr int kChunk = 8;
  static constexpr int kAccRegs = 2;
  struct X {
    const T* hi;
    const T* lo;
    int len;
  };
  using W = X;
  using Acc = Sum8x2;
  explicit Split3Op(const DotArgs&) {}
  Acc zero() const { return Sum8x2{}; }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return {static_cast<const T*>(a.x) + row * a.k + k, static_cast<const T*>(a.x_lo) + row * a.k + k, len};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return {static_cast<const T*>(a.w) + row * a.k + k, static_cast<const T*>(a.w_lo) + row * a.k + k, len};
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    for (int i = 0; i < x.len; ++i) {
      acc.small.s[i] += V(x.hi[i]) * V(w.lo[i]);
      acc.small.s[i] += V(x.lo[i]) * V(w.hi[i]);
      acc.big.s[i] += V(x.hi[i]) * V(w.hi[i]);
    }
  }
  void store(const DotArgs& a, int64_t m, int64_t n, const Acc& acc) const {
    store_sum(a, m, n, acc.big.total() + acc.small.total());
  }
};

using F32x3Op = Split3Op<float, f32v>;
using Bf16x3Op = Split3Op<uint16_t, bf16v>;

// bf16x6: hi·hi into `big`; hi·mid + mid·hi + hi·lo + mid·mid + lo·hi into `small`.
struct Bf16x6Op {
  static constexpr int kChunk = 8;
  static constexpr int kAccRegs = 2;
  struct X {
    const uint16_t* hi;
    const uint16_t* mid;
    const uint16_t* lo;
    int len;
  };
  using W = X;
  using Acc = Sum8x2;
  explicit Bf16x6Op(const DotArgs&) {}
  Acc zero() const { return Sum8x2{}; }
  static X parts(const void* hi, const void* mid, const void* lo, int64_t offset, int len) {
    return {static_cast<const uint16_t*>(hi) + offset, static_cast<const uint16_t*>(mid) + offset,
            static_cast<const uint16_t*>(lo) + offset, len};
  }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return parts(a.x, a.x_mid, a.x_lo, row * a.k + k, len);
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return parts(a.w, a.w_mid, a.w_lo, row * a.k + k, len);
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    for (int i = 0; i < x.len; ++i) {
      const float xh = bf16v(x.hi[i]), xm = bf16v(x.mid[i]), xl = bf16v(x.lo[i]);
      const float wh = bf16v(w.hi[i]), wm = bf16v(w.mid[i]), wl = bf16v(w.lo[i]);
      acc.small.s[i] += xh * wl + xl * wh + xm * wm;
      acc.small.s[i] += xh * wm + xm * wh;
      acc.big.s[i] += xh * wh;
    }
  }
  void store(const DotArgs& a, int64_t m, int64_t n, const Acc& acc) const {
    store_sum(a, m, n, acc.big.total() + acc.small.total());
  }
};

struct Q8Op {
  static constexpr int kChunk = kQ8Block;
  static constexpr int kAccRegs = 1;
  using X = Chunk<float>;
  struct W {
    const int8_t* q;
    float d;
  };
  using Acc = Sum8;
  explicit Q8Op(const DotArgs& a) : row_bytes(a.k / kQ8Block * kQ8BlockBytes) {}
  int64_t row_bytes;
  Acc zero() const { return Sum8{}; }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return {static_cast<const float*>(a.x) + row * a.k + k, len};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int) const {
    const auto* blk = static_cast<const std::byte*>(a.w) + row * row_bytes + k / kQ8Block * kQ8BlockBytes;
    uint16_t d;
    std::memcpy(&d, blk, 2);
    return {reinterpret_cast<const int8_t*>(blk + 2), fp16_to_fp32(d)};
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    float t[8] = {};
    for (int i = 0; i < kQ8Block; ++i) t[i % 8] += x.p[i] * float(w.q[i]);
    for (int j = 0; j < 8; ++j) acc.s[j] += w.d * t[j];
  }
  void store(const DotArgs& a, int64_t m, int64_t n, const Acc& acc) const { store_sum(a, m, n, acc.total()); }
};

struct I8Op {
  static constexpr int kChunk = 64;
  static constexpr int kAccRegs = 1;
  using X = Chunk<int8_t>;
  using W = Chunk<int8_t>;
  using Acc = int64_t;
  explicit I8Op(const DotArgs&) {}
  Acc zero() const { return 0; }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return {static_cast<const int8_t*>(a.x) + row * a.k + k, len};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return {static_cast<const int8_t*>(a.w) + row * a.k + k, len};
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    int32_t s = 0;
    for (int i = 0; i < x.len; ++i) s += int32_t(x.p[i]) * int32_t(w.p[i]);
    acc += s;
  }
  void store(const DotArgs& a, int64_t m, int64_t n, Acc acc) const { store_i8(a, m, n, acc); }
};

struct Q8Q8Op {
  static constexpr int kChunk = kQ8Block;
  static constexpr int kAccRegs = 1;
  struct X {
    const int8_t* q;
    float d;
  };
  using W = X;
  using Acc = float;
  explicit Q8Q8Op(const DotArgs& a) : row_bytes(a.k / kQ8Block * kQ8BlockBytes) {}
  int64_t row_bytes;
  Acc zero() const { return 0.0f; }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int) const {
    return {static_cast<const int8_t*>(a.x) + row * a.k + k, a.x_scale[(row * a.k + k) / kQ8Block]};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int) const {
    const auto* blk = static_cast<const std::byte*>(a.w) + row * row_bytes + k / kQ8Block * kQ8BlockBytes;
    uint16_t d;
    std::memcpy(&d, blk, 2);
    return {reinterpret_cast<const int8_t*>(blk + 2), fp16_to_fp32(d)};
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    int32_t s = 0;
    for (int i = 0; i < kQ8Block; ++i) s += int32_t(x.q[i]) * int32_t(w.q[i]);
    acc += float(s) * (x.d * w.d);
  }
  void store(const DotArgs& a, int64_t m, int64_t n, Acc acc) const { store_sum(a, m, n, acc); }
};

}  // namespace

const DotKernels kScalarDot{.f32 = dot_run<F32Op>,
                            .f16w = dot_run<F16WOp>,
                            .bf16w = dot_run<Bf16WOp>,
                            .q8_0w = dot_run<Q8Op>,
                            .bf16 = dot_run<Bf16Op>,
                            .f32x3 = dot_run<F32x3Op>,
                            .bf16x3 = dot_run<Bf16x3Op>,
                            .bf16x6 = dot_run<Bf16x6Op>,
                            .i8 = dot_run<I8Op>,
                            .q8_0q8 = dot_run<Q8Q8Op>};

}  // namespace recur::gemm
