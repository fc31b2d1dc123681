// The AVX-512 dot kernels: gemm_dot_impl.h over 16-lane fp32 (FMA), 32-lane bf16 (vdpbf16ps,
// AVX512_BF16) and 64-lane int8 (vpdpbusd, AVX512_VNNI) registers, with masked tails.
// Compiled with the AVX-512 flags only (recur_isa_sources); reached through dot_kernels().
//
// w8a8 on VNNI: vpdpbusd multiplies unsigned by signed bytes, so X is fed as u = x + 128
// (x ^ 0x80) and the kernel subtracts comp[n] = 128 sum_k w[n, k], precomputed at pack time.
// Every partial sum is exact in int32 for K <= 65536 (255 * 127 * 65536 < 2^31).
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_dot_impl.h"
#include "kernels/gemm/gemm_simd_avx512.h"

namespace recur::gemm {
namespace {

// fp32 X against W loaded by L (T and load(p, len) -> 16 fp32 lanes; a type rather than a
// function pointer, which would drop the vector attributes of its return type).
template <class L>
struct WidenOp {
  static constexpr int kChunk = 16;
  static constexpr int kAccRegs = 1;
  using X = __m512;
  using W = __m512;
  using Acc = __m512;
  explicit WidenOp(const DotArgs&) {}
  Acc zero() const { return _mm512_setzero_ps(); }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return load_f32(static_cast<const float*>(a.x) + row * a.k + k, len);
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return L::load(static_cast<const typename L::T*>(a.w) + row * a.k + k, len);
  }
  void mac(Acc& acc, X x, W w) const { acc = _mm512_fmadd_ps(x, w, acc); }
  void store(const DotArgs& a, int64_t m, int64_t n, Acc acc) const { store_sum(a, m, n, hsum(acc)); }
};

using F32Op = WidenOp<WidenF32>;
using F16WOp = WidenOp<WidenF16>;
using Bf16WOp = WidenOp<WidenBf16>;

struct Q8Op {
  static constexpr int kChunk = kQ8Block;
  static constexpr int kAccRegs = 1;
  struct X {
    __m512 a, b;
  };
  struct W {
    __m512 a, b, d;
  };
  using Acc = __m512;
  explicit Q8Op(const DotArgs& a) : row_bytes(a.k / kQ8Block * kQ8BlockBytes) {}
  int64_t row_bytes;
  Acc zero() const { return _mm512_setzero_ps(); }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int) const {
    const float* p = static_cast<const float*>(a.x) + row * a.k + k;
    return {_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16)};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int) const {
    const auto* blk = static_cast<const uint8_t*>(a.w) + row * row_bytes + k / kQ8Block * kQ8BlockBytes;
    const uint16_t d16 = uint16_t(blk[0] | (blk[1] << 8));
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    return {_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q))),
            _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1))),
            _mm512_set1_ps(_cvtsh_ss(d16))};
  }
  // (x . q) of the block, then scaled by d into the running sum.
  void mac(Acc& acc, const X& x, const W& w) const {
    acc = _mm512_fmadd_ps(_mm512_fmadd_ps(x.a, w.a, _mm512_mul_ps(x.b, w.b)), w.d, acc);
  }
  void store(const DotArgs& a, int64_t m, int64_t n, Acc acc) const { store_sum(a, m, n, hsum(acc)); }
};

struct Bf16Op {
  static constexpr int kChunk = 32;
  static constexpr int kAccRegs = 1;
  using X = __m512i;
  using W = __m512i;
  using Acc = __m512;
  explicit Bf16Op(const DotArgs&) {}
  Acc zero() const { return _mm512_setzero_ps(); }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return load_u16x32(static_cast<const uint16_t*>(a.x) + row * a.k + k, len);
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return load_u16x32(static_cast<const uint16_t*>(a.w) + row * a.k + k, len);
  }
  void mac(Acc& acc, X x, W w) const { acc = _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w); }
  void store(const DotArgs& a, int64_t m, int64_t n, Acc acc) const { store_sum(a, m, n, hsum(acc)); }
};

struct PairI {
  __m512i hi, lo;
};
struct PairF {
  __m512 hi, lo;
};
struct Acc2 {
  __m512 big, small;
};

struct Bf16x3Op {
  static constexpr int kChunk = 32;
  static constexpr int kAccRegs = 2;
  using X = PairI;
  using W = PairI;
  using Acc = Acc2;
  explicit Bf16x3Op(const DotArgs&) {}
  Acc zero() const { return {_mm512_setzero_ps(), _mm512_setzero_ps()}; }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return {load_u16x32(static_cast<const uint16_t*>(a.x) + row * a.k + k, len),
            load_u16x32(static_cast<const uint16_t*>(a.x_lo) + row * a.k + k, len)};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return {load_u16x32(static_cast<const uint16_t*>(a.w) + row * a.k + k, len),
            load_u16x32(static_cast<const uint16_t*>(a.w_lo) + row * a.k + k, len)};
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    acc.small = _mm512_dpbf16_ps(acc.small, (__m512bh)x.hi, (__m512bh)w.lo);
    acc.small = _mm512_dpbf16_ps(acc.small, (__m512bh)x.lo, (__m512bh)w.hi);
    acc.big = _mm512_dpbf16_ps(acc.big, (__m512bh)x.hi, (__m512bh)w.hi);
  }
  void store(const DotArgs& a, int64_t m, int64_t n, const Acc& acc) const {
    store_sum(a, m, n, hsum(acc.big) + hsum(acc.small));
  }
};

struct TripleI {
  __m512i hi, mid, lo;
};

// bf16x6 with vdpbf16ps: hi·hi into `big`; the five smaller products into `small`.
struct Bf16x6Op {
  static constexpr int kChunk = 32;
  static constexpr int kAccRegs = 2;
  using X = TripleI;
  using W = TripleI;
  using Acc = Acc2;
  explicit Bf16x6Op(const DotArgs&) {}
  Acc zero() const { return {_mm512_setzero_ps(), _mm512_setzero_ps()}; }
  static TripleI parts(const void* hi, const void* mid, const void* lo, int64_t offset, int len) {
    return {load_u16x32(static_cast<const uint16_t*>(hi) + offset, len),
            load_u16x32(static_cast<const uint16_t*>(mid) + offset, len),
            load_u16x32(static_cast<const uint16_t*>(lo) + offset, len)};
  }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return parts(a.x, a.x_mid, a.x_lo, row * a.k + k, len);
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return parts(a.w, a.w_mid, a.w_lo, row * a.k + k, len);
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    acc.small = _mm512_dpbf16_ps(acc.small, (__m512bh)x.hi, (__m512bh)w.lo);
    acc.small = _mm512_dpbf16_ps(acc.small, (__m512bh)x.lo, (__m512bh)w.hi);
    acc.small = _mm512_dpbf16_ps(acc.small, (__m512bh)x.mid, (__m512bh)w.mid);
    acc.small = _mm512_dpbf16_ps(acc.small, (__m512bh)x.hi, (__m512bh)w.mid);
    acc.small = _mm512_dpbf16_ps(acc.small, (__m512bh)x.mid, (__m512bh)w.hi);
    acc.big = _mm512_dpbf16_ps(acc.big, (__m512bh)x.hi, (__m512bh)w.hi);
  }
  void store(const DotArgs& a, int64_t m, int64_t n, const Acc& acc) const {
    store_sum(a, m, n, hsum(acc.big) + hsum(acc.small));
  }
};

struct F32x3Op {
  static constexpr int kChunk = 16;
  static constexpr int kAccRegs = 2;
  using X = PairF;
  using W = PairF;
  using Acc = Acc2;
  explicit F32x3Op(const DotArgs&) {}
  Acc zero() const { return {_mm512_setzero_ps(), _mm512_setzero_ps()}; }
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return {load_f32(static_cast<const float*>(a.x) + row * a.k + k, len),
            load_f32(static_cast<const float*>(a.x_lo) + row * a.k + k, len)};
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return {load_f32(static_cast<const float*>(a.w) + row * a.k + k, len),
            load_f32(static_cast<const float*>(a.w_lo) + row * a.k + k, len)};
  }
  void mac(Acc& acc, const X& x, const W& w) const {
    acc.small = _mm512_fmadd_ps(x.hi, w.lo, acc.small);
    acc.small = _mm512_fmadd_ps(x.lo, w.hi, acc.small);
    acc.big = _mm512_fmadd_ps(x.hi, w.hi, acc.big);
  }
  void store(const DotArgs& a, int64_t m, int64_t n, const Acc& acc) const {
    store_sum(a, m, n, hsum(acc.big) + hsum(acc.small));
  }
};

struct I8VnniOp {
  static constexpr int kChunk = 64;
  static constexpr int kAccRegs = 1;
  using X = __m512i;
  using W = __m512i;
  using Acc = __m512i;
  explicit I8VnniOp(const DotArgs&) {}
  Acc zero() const { return _mm512_setzero_si512(); }
  // u = x + 128 as unsigned bytes; tail lanes become 128 but meet zero weights.
  X load_x(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return _mm512_xor_si512(load_i8x64(static_cast<const int8_t*>(a.x) + row * a.k + k, len),
                            _mm512_set1_epi8(char(0x80)));
  }
  W load_w(const DotArgs& a, int64_t row, int64_t k, int len) const {
    return load_i8x64(static_cast<const int8_t*>(a.w) + row * a.k + k, len);
  }
  void mac(Acc& acc, X x, W w) const { acc = _mm512_dpbusd_epi32(acc, x, w); }
  void store(const DotArgs& a, int64_t m, int64_t n, Acc acc) const {
    store_i8(a, m, n, int64_t(hsum_epi32(acc)) - a.w_comp[n]);
  }
};

inline float hsum256(__m256 a) {
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
  return _mm_cvtss_f32(s4);
}

// Q8_0 activations against Q8_0 weights: per block, the exact int32 dot of |x| (unsigned)
// and sign(x)·w (vpdpbusd on 256-bit registers (AVX512_VNNI + VL); |x|, |w| <= 127, so no pair saturates), then
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
    const __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), x.aq, _mm256_sign_epi8(w.q, x.q));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(x.d, w.d), acc);
  }
  void store(const DotArgs& a, int64_t m, int64_t n, Acc acc) const { store_sum(a, m, n, hsum256(acc)); }
};

}  // namespace

const DotKernels kAvx512Dot{.f32 = dot_run<F32Op>,
                            .f16w = dot_run<F16WOp>,
                            .bf16w = dot_run<Bf16WOp>,
                            .q8_0w = dot_run<Q8Op>,
                            .bf16 = dot_run<Bf16Op>,
                            .f32x3 = dot_run<F32x3Op>,
                            .bf16x3 = dot_run<Bf16x3Op>,
                            .bf16x6 = dot_run<Bf16x6Op>,
                            .i8 = dot_run<I8VnniOp>,
                          .q8_0q8 = dot_run<Q8Q8Op>};

}  // namespace recur::gemm
