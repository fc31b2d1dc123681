// The AVX2 dot kernels: gemm_dot_impl.h over 8-lane fp32 FMA; bf16 is widened to fp32 (no
// bf16 dot on AVX2); int8 uses vpmaddubsw. Partial chunks are copied into a zeroed buffer.
// Compiled with the AVX2 flags only (recur_isa_sources); reached through dot_kernels().
//
// w8a8 without VNNI: vpmaddubsw multiplies unsigned by signed bytes and adds adjacent pairs
// with int16 saturation. Feeding it |x| and sign(x)·w keeps every pair sum within
// 2 · 128 · 127 = 32512 < 32767, so it never saturates — exact for any int8 x (-128 included)
// as long as |w| <= 127, which PackedWeights guarantees. vpmaddwd then widens pairs to int32.
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_dot_impl.h"
#include "kernels/gemm/gemm_simd_avx2.h"

namespace recur::gemm {
namespace {

// X elements XT and W elements WT, each widened to 8 fp32 lanes. kAccRegs 2 keeps the tile
// within the 16 ymm registers (accumulators + W + X).
template <class LX, class LW>
struct WidenOp {
  static constexpr int kChunk = 8;
  static constexpr int kAccRegs = 2;
  // One 8-lane chain of 16-bit weights moves 16 bytes per FMA latency, under DRAM speed, and
  // bf16 X would be widened once per W row: keep 4-row tiles (gemm_dot_impl.h).
  static constexpr bool kOneRowTiles = sizeof(typename LW::T) == 4;
  using X = __m256;
  using W = __m256;
  using Acc = __m256;
  explicit WidenOp(const DotArgs&) {}
  Acc zero() const { return _mm256_setzero_ps(); }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return LX::load(static_cast<const typename LX::T*>(a.x) + row * a.k + k, len);
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return LW::load(static_cast<const typename LW::T*>(a.w) + row * a.k + k, len);
  }
  void mac(Acc& acc, X x, W w) const { acc = _mm256_fmadd_ps(x, w, acc); }
  void store(const DotArgs& a, int64_t m, int64_t n, Acc acc) const { store_sum(a, m, n, hsum(acc)); }
};

using F32Op = WidenOp<WidenF32, WidenF32>;
using F16WOp = WidenOp<WidenF32, WidenF16>;
using Bf16WOp = WidenOp<WidenF32, WidenBf16>;
using Bf16Op = WidenOp<WidenBf16, WidenBf16>;

struct Acc2 {
  __m256 big, small;
};
struct Pair {
  __m256 hi, lo;
};

template <class L>
struct Split3Op {
  static constexpr int kChunk = 8;
  static constexpr int kAccRegs = 4;
  static constexpr bool kOneRowTiles = sizeof(typename L::T) == 4;  // as WidenOp
  using X = Pair;
  using W = Pair;
  using Acc = Acc2;
  explicit Split3Op(const DotArgs&) {}
  Acc zero() const { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    using T = typename L::T;
    return {L::load(static_cast<const T*>(a.x) + row * a.k + k, len),
            L::load(static_cast<const T*>(a.x_lo) + row * a.k + k, len)};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    using T = typename L::T;
    return {L::load(static_cast<const T*>(a.w) + row * a.k + k, len),
            L::load(static_cast<const T*>(a.w_lo) + row * a.k + k, len)};
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    acc.small = _mm256_fmadd_ps(x.hi, w.lo, acc.small);
    acc.small = _mm256_fmadd_ps(x.lo, w.hi, acc.small);
    acc.big = _mm256_fmadd_ps(x.hi, w.hi, acc.big);
  }
  void store(const DotArgs& a, int64_t m, int64_t n, const Acc& acc) const {
    store_sum(a, m, n, hsum(acc.big) + hsum(acc.small));
  }
};

using F32x3Op = Split3Op<WidenF32>;
using Bf16x3Op = Split3Op<WidenBf16>;

struct Triple {
  __m256 hi, mid, lo;
};

// bf16x6: hi·hi into `big`; the five smaller products into `small`.
struct Bf16x6Op {
  static constexpr int kChunk = 8;
  static constexpr int kAccRegs = 2;
  static constexpr bool kOneRowTiles = false;  // as WidenOp
  using X = Triple;
  using W = Triple;
  using Acc = Acc2;
  explicit Bf16x6Op(const DotArgs&) {}
  Acc zero() const { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static Triple parts(const void* hi, const void* mid, const void* lo, int64_t offset, int len) {
    return {WidenBf16::load(static_cast<const uint16_t*>(hi) + offset, len),
            WidenBf16::load(static_cast<const uint16_t*>(mid) + offset, len),
            WidenBf16::load(static_cast<const uint16_t*>(lo) + offset, len)};
  }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return parts(a.x, a.x_mid, a.x_lo, row * a.k + k, len);
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return parts(a.w, a.w_mid, a.w_lo, row * a.k + k, len);
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    acc.small = _mm256_fmadd_ps(x.hi, w.lo, acc.small);
    acc.small = _mm256_fmadd_ps(x.lo, w.hi, acc.small);
    acc.small = _mm256_fmadd_ps(x.mid, w.mid, acc.small);
    acc.small = _mm256_fmadd_ps(x.hi, w.mid, acc.small);
    acc.small = _mm256_fmadd_ps(x.mid, w.hi, acc.small);
    acc.big = _mm256_fmadd_ps(x.hi, w.hi, acc.big);
  }
  void store(const DotArgs& a, int64_t m, int64_t n, const Acc& acc) const {
    store_sum(a, m, n, hsum(acc.big) + hsum(acc.small));
  }
};

struct Q8Op {
  static constexpr int kChunk = kQ8Block;
  static constexpr int kAccRegs = 5;
  struct X {
    __m256 v[4];
  };
  struct W {
    __m256 v[4];
    __m256 d;
  };
  using Acc = __m256;
  explicit Q8Op(const DotArgs& a) : row_bytes(a.k / kQ8Block * kQ8BlockBytes) {}
  int64_t row_bytes;
  Acc zero() const { return _mm256_setzero_ps(); }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int) const {
    const float* p = static_cast<const float*>(a.x) + row * a.k + k;
    return {{_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), _mm256_loadu_ps(p + 16), _mm256_loadu_ps(p + 24)}};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int) const {
    const auto* blk = static_cast<const uint8_t*>(a.w) + row * row_bytes + k / kQ8Block * kQ8BlockBytes;
    const uint16_t d16 = uint16_t(blk[0] | (blk[1] << 8));
    const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18));
    return {{_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q0)),
             _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(q0, q0))),
             _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q1)),
             _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(q1, q1)))},
            _mm256_set1_ps(_cvtsh_ss(d16))};
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    __m256 t = _mm256_mul_ps(x.v[0], w.v[0]);
    t = _mm256_fmadd_ps(x.v[1], w.v[1], t);
    t = _mm256_fmadd_ps(x.v[2], w.v[2], t);
    t = _mm256_fmadd_ps(x.v[3], w.v[3], t);
    acc = _mm256_fmadd_ps(t, w.d, acc);
  }
  void store(const DotArgs& a, int64_t m, int64_t n, Acc acc) const { store_sum(a, m, n, hsum(acc)); }
};

struct I8Op {
  static constexpr int kChunk = 32;
  static constexpr int kAccRegs = 2;
  struct X {
    __m256i x, ax;  // x and |x| (|-128| = 128 as an unsigned byte)
  };
  using W = __m256i;
  using Acc = __m256i;
  explicit I8Op(const DotArgs&) {}
  Acc zero() const { return _mm256_setzero_si256(); }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    const __m256i x = load_i8x32(static_cast<const int8_t*>(a.x) + row * a.k + k, len);
    return {x, _mm256_abs_epi8(x)};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return load_i8x32(static_cast<const int8_t*>(a.w) + row * a.k + k, len);
  }
  void mac(Acc& acc, const X& x, W w) const {
    const __m256i p16 = _mm256_maddubs_epi16(x.ax, _mm256_sign_epi8(w, x.x));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
  }
  void store(const DotArgs& a, int64_t m, int64_t n, Acc acc) const { store_i8(a, m, n, hsum_epi32(acc)); }
};

// Q8_0 activations against Q8_0 weights: per block, the exact int32 dot of |x| (unsigned)
// and sign(x)·w (vpmaddubsw + vpmaddwd; |x|, |w| <= 127, so no pair saturates), then
// acc += float(dot) · (d_x d_w).
struct Q8Q8Op {
  static constexpr int kChunk = kQ8Block;
  static constexpr int kAccRegs = 2;
  struct X {
    __m256i q, aq;
    __m256 d;
  };
  struct W {
    __m256i q;
    __m256 d;
  };
  using Acc = __m256;
  explicit Q8Q8Op(const DotArgs& a) : row_bytes(a.k / kQ8Block * kQ8BlockBytes) {}
  int64_t row_bytes;
  Acc zero() const { return _mm256_setzero_ps(); }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int) const {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const int8_t*>(a.x) + row * a.k + k));
    return {q, _mm256_abs_epi8(q), _mm256_set1_ps(a.x_scale[(row * a.k + k) / kQ8Block])};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int) const {
    const auto* blk = static_cast<const uint8_t*>(a.w) + row * row_bytes + k / kQ8Block * kQ8BlockBytes;
    const uint16_t d16 = uint16_t(blk[0] | (blk[1] << 8));
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)), _mm256_set1_ps(_cvtsh_ss(d16))};
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q8_block_dot(x.aq, x.q, w.q)), _mm256_mul_ps(x.d, w.d), acc);
  }
  void store(const DotArgs& a, int64_t m, int64_t n, Acc acc) const { store_sum(a, m, n, hsum(acc)); }
};

}  // namespace

const DotKernels kAvx2Dot{.f32 = dot_run<F32Op>,
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
