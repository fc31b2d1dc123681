// The AMX GEMM drivers (gemm_amx.h): weight repacking into the B tiles' layout, activation
// quantization / splitting into the A tiles' layout (rows padded to 16 tokens), and the split of
// 16-row groups over the pool. The tile work is gemm_amx_kernels.h's, on the chosen backend.
#include "kernels/gemm/gemm_amx.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm_amx_kernels.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_round.h"

namespace recur::gemm {
namespace {

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

const amx::KernelTable& kernels(TileBackend b) {
  return b == TileBackend::kHardware ? amx::kHardwareKernels : amx::kEmulatorKernels;
}

// Groups [0, groups) in pairs over the pool (a pair fills the kernels' 2 x 2 tile plan): each
// output is computed the same way wherever it runs, so the bits do not depend on the pool.
template <class Fn>
void over_groups(int64_t groups, ThreadPool* pool, const Fn& fn) {
  const int64_t pairs = (groups + 1) / 2;
  auto body = [&](int64_t p0, int64_t p1, int) { fn(2 * p0, std::min(groups, 2 * p1)); };
  if (pool != nullptr && pairs > 1) pool->parallel_for(pairs, body);
  else body(0, pairs, 0);
}

// fn(t0, t1) over the m tokens, in parallel over the pool where there is more than one chunk of
// 16; each token is prepared by one thread from its own x row, so the bits do not depend on the pool.
template <class Fn>
void over_tokens(int64_t m, ThreadPool* pool, const Fn& fn) {
  const int64_t chunks = (m + amx::kRows - 1) / amx::kRows;
  auto body = [&](int64_t c0, int64_t c1, int) { fn(c0 * amx::kRows, std::min(m, c1 * amx::kRows)); };
  if (pool != nullptr && chunks > 1) pool->parallel_for(chunks, body);
  else body(0, chunks, 0);
}

Status check_call(const char* what, int64_t wn, const float* x, int64_t m, const float* y) {
  if (m < 1 || x == nullptr || y == nullptr || wn < 1)
    return invalid_argument("{}: m={}: expected m >= 1, x and y set and packed weights", what, m);
  return ok_status();
}

// The precision's x parts and products (gemm_amx_kernels.h's Bf16Product: x part, w part, small).
int x_parts(Precision p) { return p == Precision::kBf16 ? 1 : p == Precision::kBf16x3 ? 2 : 3; }
std::span<const amx::Bf16Product> products(Precision p, int w_parts) {
  static constexpr amx::Bf16Product kBf16[] = {{0, 0, false}};
  static constexpr amx::Bf16Product kX3[] = {{0, 0, false}, {0, 1, true}, {1, 0, true}};
  static constexpr amx::Bf16Product kX3ExactW[] = {{0, 0, false}, {1, 0, true}};
  static constexpr amx::Bf16Product kX6[] = {{0, 0, false}, {0, 1, true}, {1, 0, true},
                                             {0, 2, true},  {1, 1, true}, {2, 0, true}};
  static constexpr amx::Bf16Product kX6ExactW[] = {{0, 0, false}, {1, 0, true}, {2, 0, true}};
  switch (p) {
    case Precision::kBf16: return kBf16;
    case Precision::kBf16x3: return w_parts == 1 ? std::span<const amx::Bf16Product>(kX3ExactW) : kX3;
    default: return w_parts == 1 ? std::span<const amx::Bf16Product>(kX6ExactW) : kX6;
  }
}

// x [count] split into `parts` bf16 parts, each its own contiguous row (1: RNE; 2: hi + lo;
// 3: hi + mid + lo, gemm_round.h): plain loops over contiguous rows, which the compiler vectorizes.
void split_row(const float* x, int64_t count, int parts, uint16_t* const out[3]) {
  const auto n = size_t(count);
  if (parts == 3) return split_bf16x3_parts(std::span(x, n), std::span(out[0], n), std::span(out[1], n),
                                            std::span(out[2], n));
  for (size_t i = 0; i < n; ++i) out[0][i] = bf16_round(x[i]);
  if (parts == 2)
    for (size_t i = 0; i < n; ++i) out[1][i] = bf16_round(x[i] - bf16_value(out[0][i]));
}

}  // namespace

// ---- Q8_0 ----

Result<AmxQ8Weights> AmxQ8Weights::repack(const void* q8_0_rows, int64_t n, int64_t k) {
  if (q8_0_rows == nullptr || n < 1 || k < kQ8Block || k % kQ8Block != 0)
    return invalid_argument("AmxQ8Weights::repack: n={} k={}: expected weights, n >= 1 and k a positive multiple of 32",
                            n, k);
  AmxQ8Weights w;
  w.n_ = n, w.k_ = k;
  const int64_t groups = (n + amx::kRows - 1) / amx::kRows, blocks = k / kQ8Block;
  w.quants_ = AlignedBuffer(size_t(groups * blocks * amx::kQ8TileBytes), true);
  w.scales_ = AlignedBuffer(size_t(groups * blocks * amx::kRows) * sizeof(float), true);
  auto* q = reinterpret_cast<int8_t*>(w.quants_.data());
  auto* d = reinterpret_cast<float*>(w.scales_.data());
  const auto* src = static_cast<const uint8_t*>(q8_0_rows);
  for (int64_t r = 0; r < n; ++r) {
    const int64_t g = r / amx::kRows, lane = r % amx::kRows;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* blk = src + (r * blocks + b) * kQ8BlockBytes;
      uint16_t h;
      std::memcpy(&h, blk, 2);
      d[(g * blocks + b) * amx::kRows + lane] = fp16_to_fp32(h);
      int8_t* tile = q + (g * blocks + b) * amx::kQ8TileBytes;
      for (int j = 0; j < amx::kQ8Quads; ++j) std::memcpy(tile + j * 64 + lane * 4, blk + 2 + 4 * j, 4);
    }
  }
  return w;
}

Status gemm_q8_0_amx(const AmxQ8Weights& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                     TileBackend backend, AmxQ8Order order) {
  RECUR_RETURN_IF_ERROR(check_call("gemm_q8_0_amx", w.n(), x, m, y));
  const int64_t k = w.k(), m_pad = round_up(m, amx::kRows), blocks = k / kQ8Block;
  thread_local std::vector<int8_t> xq;
  thread_local std::vector<float> dx;
  thread_local std::vector<int32_t> corr;  // the 16-row groups' offset sums: computed, not read
  xq.resize(size_t(m_pad * k));
  dx.resize(size_t(m_pad * blocks));
  corr.resize(size_t(m * blocks));
  std::fill(xq.begin() + m * k, xq.end(), int8_t{0});  // the padding tokens
  std::fill(dx.begin() + m * blocks, dx.end(), 0.0f);
  // The vectorized quantizer of the 16-row groups' kernels: quantize_q8_0_rows' bits (tested there).
  const Q8R16Kernels& quantizer = q8r16_kernels(active_isa());
  // (Pointers, not the thread_local vectors: named in the lambda, those would be the pool thread's own.)
  int8_t* q = xq.data();
  float* d = dx.data();
  int32_t* c = corr.data();
  over_tokens(m, pool, [&](int64_t t0, int64_t t1) { quantizer.prepare(x, k, t0, t1, q, d, c); });
  const amx::Q8Args a{.k = k, .chain_blocks = order == AmxQ8Order::kR16 ? blocks : amx::kQ8KBlock / kQ8Block,
                      .m = m, .n = w.n(), .m_pad = m_pad, .xq = q, .dx = d, .wq = w.quants(),
                      .dw = w.scales(), .y = y, .ldy = w.n()};
  const auto fn = kernels(backend).q8;
  over_groups((w.n() + amx::kRows - 1) / amx::kRows, pool, [&](int64_t g0, int64_t g1) { fn(a, g0, g1); });
  return ok_status();
}

// ---- W8A8 ----

Result<AmxI8Weights> AmxI8Weights::repack(const int8_t* q, const float* scales, int64_t n, int64_t k) {
  if (q == nullptr || scales == nullptr || n < 1 || k < 1 || k > 65536)
    return invalid_argument("AmxI8Weights::repack: n={} k={}: expected weights and scales, n >= 1 and 1 <= k <= 65536 "
                            "(int32 sums)",
                            n, k);
  AmxI8Weights w;
  w.n_ = n, w.k_ = k;
  const int64_t groups = (n + amx::kRows - 1) / amx::kRows, k_pad = round_up(k, amx::kI8Step);
  const int64_t steps = k_pad / amx::kI8Step;
  w.quants_ = AlignedBuffer(size_t(groups * amx::kRows * k_pad), true);
  w.scales_ = AlignedBuffer(size_t(groups * amx::kRows) * sizeof(float), true);
  auto* out = reinterpret_cast<int8_t*>(w.quants_.data());
  for (int64_t r = 0; r < n; ++r) {
    const int64_t g = r / amx::kRows, lane = r % amx::kRows;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t s = c / amx::kI8Step, quad = (c % amx::kI8Step) / 4;
      out[(g * steps + s) * 1024 + quad * 64 + lane * 4 + c % 4] = q[r * k + c];
    }
  }
  std::memcpy(w.scales_.data(), scales, size_t(n) * sizeof(float));
  return w;
}

Status gemm_w8a8_amx(const AmxI8Weights& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                     TileBackend backend) {
  RECUR_RETURN_IF_ERROR(check_call("gemm_w8a8_amx", w.n(), x, m, y));
  const int64_t k = w.k(), k_pad = round_up(k, amx::kI8Step), m_pad = round_up(m, amx::kRows);
  thread_local std::vector<int8_t> xq;
  thread_local std::vector<float> xs;
  xs.assign(size_t(m_pad), 0.0f);
  xq.resize(size_t(m_pad * k_pad));
  std::fill(xq.begin() + m * k_pad, xq.end(), int8_t{0});  // the padding tokens
  // Each token quantized straight into its padded row, tokens in parallel; the first refusal
  // (a non-finite x) in token order is returned.
  std::vector<Status> refused(size_t((m + amx::kRows - 1) / amx::kRows), ok_status());
  int8_t* q = xq.data();  // pointers: the lambda runs on pool threads, with their own thread_locals
  float* scales = xs.data();
  over_tokens(m, pool, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int8_t* row = q + t * k_pad;
      std::fill(row + k, row + k_pad, int8_t{0});
      Status s = quantize_int8_rows(std::span(x + t * k, size_t(k)), 1, size_t(k), std::span(row, size_t(k)),
                                    std::span(scales + t, 1));
      if (!s) {
        refused[size_t(t0 / amx::kRows)] =
            invalid_argument("gemm_w8a8_amx: token {} of {}: {}", t, m, s.error().message());
        return;
      }
    }
  });
  for (Status& s : refused) RECUR_RETURN_IF_ERROR(std::move(s));
  const amx::I8Args a{.k_pad = k_pad, .m = m, .n = w.n(), .m_pad = m_pad, .xq = xq.data(), .xs = xs.data(),
                      .wq = w.quants(), .ws = w.scales(), .y = y, .ldy = w.n()};
  const auto fn = kernels(backend).i8;
  over_groups((w.n() + amx::kRows - 1) / amx::kRows, pool, [&](int64_t g0, int64_t g1) { fn(a, g0, g1); });
  return ok_status();
}

// ---- bf16 family ----

const uint16_t* AmxBf16Weights::part(int p) const {
  const int64_t per_part = (n_ + amx::kRows - 1) / amx::kRows * amx::kRows * round_up(k_, amx::kBf16Step);
  return reinterpret_cast<const uint16_t*>(data_.data()) + p * per_part;
}

Result<AmxBf16Weights> AmxBf16Weights::pack_rows(const uint16_t* const* rows, int parts, int64_t n, int64_t k,
                                                 Precision precision) {
  AmxBf16Weights w;
  w.n_ = n, w.k_ = k, w.precision_ = precision, w.parts_ = parts;
  const int64_t groups = (n + amx::kRows - 1) / amx::kRows, k_pad = round_up(k, amx::kBf16Step);
  const int64_t steps = k_pad / amx::kBf16Step, per_part = groups * amx::kRows * k_pad;
  w.data_ = AlignedBuffer(size_t(parts * per_part) * 2, true);
  auto* out = reinterpret_cast<uint16_t*>(w.data_.data());
  for (int p = 0; p < parts; ++p)
    for (int64_t r = 0; r < n; ++r) {
      const int64_t g = r / amx::kRows, lane = r % amx::kRows;
      for (int64_t c = 0; c < k; ++c) {
        const int64_t s = c / amx::kBf16Step, pair = (c % amx::kBf16Step) / 2;
        out[p * per_part + (g * steps + s) * 512 + pair * 32 + lane * 2 + c % 2] = rows[p][r * k + c];
      }
    }
  return w;
}

Result<AmxBf16Weights> AmxBf16Weights::pack(std::span<const float> w, int64_t n, int64_t k, Precision precision) {
  if (precision != Precision::kBf16 && precision != Precision::kBf16x3 && precision != Precision::kBf16x6)
    return invalid_argument("AmxBf16Weights::pack: precision {}: expected bf16, bf16x3 or bf16x6",
                            precision_name(precision));
  if (n < 1 || k < 1 || w.size() != size_t(n * k))
    return invalid_argument("AmxBf16Weights::pack: {} weights for n={} k={}: expected n * k, n, k >= 1", w.size(), n,
                            k);
  const int parts = x_parts(precision);
  std::vector<uint16_t> split_rows[3];
  for (int p = 0; p < parts; ++p) split_rows[p].resize(size_t(n * k));
  uint16_t* const out[3] = {split_rows[0].data(), split_rows[1].data(), split_rows[2].data()};
  split_row(w.data(), n * k, parts, out);
  const uint16_t* rows[3] = {out[0], out[1], out[2]};
  return pack_rows(rows, parts, n, k, precision);
}

Result<AmxBf16Weights> AmxBf16Weights::pack_bf16(const uint16_t* w, int64_t n, int64_t k, Precision precision) {
  if (precision != Precision::kBf16 && precision != Precision::kBf16x3 && precision != Precision::kBf16x6)
    return invalid_argument("AmxBf16Weights::pack_bf16: precision {}: expected bf16, bf16x3 or bf16x6",
                            precision_name(precision));
  if (w == nullptr || n < 1 || k < 1)
    return invalid_argument("AmxBf16Weights::pack_bf16: n={} k={}: expected weights and n, k >= 1", n, k);
  const uint16_t* rows[3] = {w, nullptr, nullptr};
  return pack_rows(rows, 1, n, k, precision);
}

Status gemm_bf16_amx(const AmxBf16Weights& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                     TileBackend backend) {
  RECUR_RETURN_IF_ERROR(check_call("gemm_bf16_amx", w.n(), x, m, y));
  const int64_t k = w.k(), k_pad = round_up(k, amx::kBf16Step), m_pad = round_up(m, amx::kRows);
  const int parts = x_parts(w.precision());
  thread_local std::vector<uint16_t> xs;
  xs.assign(size_t(parts * m_pad * k_pad), 0);
  uint16_t* split_x = xs.data();  // a pointer: the lambda runs on pool threads, with their own thread_locals
  over_tokens(m, pool, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      uint16_t* out[3] = {};
      for (int p = 0; p < parts; ++p) out[p] = split_x + (p * m_pad + t) * k_pad;
      split_row(x + t * k, k, parts, out);
    }
  });
  const auto prods = products(w.precision(), w.parts());
  amx::Bf16Args a{.k_pad = k_pad, .m = m, .n = w.n(), .m_pad = m_pad, .products = prods.data(),
                  .product_count = int(prods.size()), .y = y, .ldy = w.n()};
  for (int p = 0; p < parts; ++p) a.x[p] = xs.data() + p * m_pad * k_pad;
  for (int p = 0; p < w.parts(); ++p) a.w[p] = w.part(p);
  const auto fn = kernels(backend).bf16;
  // One group per step (the split forms use all 8 tiles for one 16 x 16 output tile).
  const int64_t groups = (w.n() + amx::kRows - 1) / amx::kRows;
  auto body = [&](int64_t g0, int64_t g1, int) { fn(a, g0, g1); };
  if (pool != nullptr && groups > 1) pool->parallel_for(groups, body);
  else body(0, groups, 0);
  return ok_status();
}

}  // namespace recur::gemm
