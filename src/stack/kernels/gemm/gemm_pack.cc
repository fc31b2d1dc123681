// PackedWeights::pack: the per-precision weight conversions of gemm_internal.h's layouts.
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/convert.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_round.h"

namespace recur::gemm {
namespace {

// Packed weights live as long as the model and are streamed on every call, so buffers of 2 MiB
// and more are 2 MiB-aligned and madvised for transparent huge pages before the first touch
// (THP "madvise" mode is the common default): a GEMV then takes no TLB miss every 4 KiB.
AlignedBuffer weight_buffer(size_t bytes, bool zeroed = false) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (bytes < kHuge) return AlignedBuffer(bytes, zeroed);
  AlignedBuffer b(bytes, /*zeroed=*/false, kHuge);
  madvise(b.data(), (bytes + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE);  // advice: failure is harmless
  if (zeroed) std::memset(b.data(), 0, bytes);
  return b;
}
template <typename T>
AlignedBuffer weight_array(size_t n) {
  return weight_buffer(n * sizeof(T));
}

// 64-column panels [ceil(n / 64)][k][64] of row-major w [n, k], zero-padded past n.
AlignedBuffer make_panels(const float* w, int64_t n, int64_t k) {
  const int64_t panels = (n + kTileN - 1) / kTileN;
  AlignedBuffer buf = weight_buffer(size_t(panels * k * kTileN) * sizeof(float), /*zeroed=*/true);
  auto* out = reinterpret_cast<float*>(buf.data());
  for (int64_t r = 0; r < n; ++r) {
    float* dst = out + (r / kTileN) * k * kTileN + r % kTileN;
    const float* src = w + r * k;
    for (int64_t c = 0; c < k; ++c) dst[c * kTileN] = src[c];
  }
  return buf;
}

}  // namespace

size_t PackedWeights::weight_bytes() const {
  const size_t nk = size_t(n_ * k_);
  switch (precision_) {
    case Precision::kF32:
    case Precision::kTf32: return 4 * nk;
    case Precision::kTf32x3: return 8 * nk;
    case Precision::kBf16: return 2 * nk;
    case Precision::kBf16x3: return 4 * nk;
    case Precision::kBf16x6: return 6 * nk;
    case Precision::kW8A8: return nk + 8 * size_t(n_);
  }
  return 0;
}

Result<PackedWeights> PackedWeights::pack(std::span<const float> w, int64_t n, int64_t k, Precision precision) {
  if (n < 1 || k < 1 || n > (int64_t(1) << 31) || k > (int64_t(1) << 31))
    return invalid_argument("gemm: weights [{}, {}]: expected 1 <= n, k <= 2^31", n, k);
  if (w.size() != size_t(n * k))
    return invalid_argument("gemm: weights have {} elements, expected n * k = {} * {} = {}", w.size(), n, k, n * k);
  if (precision == Precision::kW8A8 && k > 65536)
    return invalid_argument("gemm: w8a8 needs k <= 65536 (int32 sums), got {}", k);
  PackedWeights p;
  p.precision_ = precision;
  p.n_ = n;
  p.k_ = k;
  const size_t nk = size_t(n * k);
  switch (precision) {
    case Precision::kF32:
      p.hi_ = weight_array<float>(nk);
      std::memcpy(p.hi_.data(), w.data(), nk * sizeof(float));
      p.panels_ = make_panels(w.data(), n, k);
      break;
    case Precision::kTf32: {
      p.hi_ = weight_array<float>(nk);
      auto hi = p.hi_.as<float>();
      for (size_t i = 0; i < nk; ++i) hi[i] = tf32_round(w[i]);
      p.panels_ = make_panels(hi.data(), n, k);
      break;
    }
    case Precision::kTf32x3: {
      p.hi_ = weight_array<float>(nk);
      p.lo_ = weight_array<float>(nk);
      auto hi = p.hi_.as<float>();
      auto lo = p.lo_.as<float>();
      for (size_t i = 0; i < nk; ++i) {
        hi[i] = tf32_round(w[i]);
        lo[i] = tf32_round(w[i] - hi[i]);
      }
      break;
    }
    case Precision::kBf16: {
      p.hi_ = weight_array<uint16_t>(nk);
      RECUR_RETURN_IF_ERROR(fp32_to_bf16(w, p.hi_.as<uint16_t>()));
      break;
    }
    case Precision::kBf16x3: {
      p.hi_ = weight_array<uint16_t>(nk);
      p.lo_ = weight_array<uint16_t>(nk);
      auto hi = p.hi_.as<uint16_t>();
      auto lo = p.lo_.as<uint16_t>();
      for (size_t i = 0; i < nk; ++i) {
        hi[i] = bf16_round(w[i]);
        lo[i] = bf16_round(w[i] - bf16_value(hi[i]));
      }
      break;
    }
    case Precision::kBf16x6: {
      p.hi_ = weight_array<uint16_t>(nk);
      p.mid_ = weight_array<uint16_t>(nk);
      p.lo_ = weight_array<uint16_t>(nk);
      split_bf16x3_parts(w, p.hi_.as<uint16_t>(), p.mid_.as<uint16_t>(), p.lo_.as<uint16_t>());
      break;
    }
    case Precision::kW8A8: {
      p.hi_ = weight_array<int8_t>(nk);
      p.scales_ = make_aligned<float>(size_t(n));
      p.comp_ = make_aligned<int32_t>(size_t(n));
      auto q = p.hi_.as<int8_t>();
      RECUR_RETURN_IF_ERROR(quantize_int8_rows(w, size_t(n), size_t(k), q, p.scales_.as<float>()));
      auto comp = p.comp_.as<int32_t>();
      for (int64_t r = 0; r < n; ++r) {
        int32_t s = 0;
        for (int64_t c = 0; c < k; ++c) s += q[size_t(r * k + c)];
        comp[size_t(r)] = 128 * s;
      }
      break;
    }
  }
  return p;
}

}  // namespace recur::gemm
