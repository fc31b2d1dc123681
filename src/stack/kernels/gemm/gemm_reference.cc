// The float64 references of gemm_reference.h.
#include "kernels/gemm/gemm_reference.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/convert.h"
#include "kernels/gemm/gemm_round.h"

namespace recur::gemm {
namespace {

// y[m, n] = sum_t sum_k a_t[m, k] b_t[n, k] over term pairs (a_t, b_t), in double.
void sum_terms(std::span<const std::pair<const double*, const double*>> terms, int64_t m, int64_t n, int64_t k,
               std::span<double> y, std::span<double> mag) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, a = 0;
      for (auto [xa, wb] : terms) {
        const double* xr = xa + i * k;
        const double* wr = wb + j * k;
        for (int64_t c = 0; c < k; ++c) {
          const double t = xr[c] * wr[c];
          s += t;
          a += std::fabs(t);
        }
      }
      y[size_t(i * n + j)] = s;
      mag[size_t(i * n + j)] = a;
    }
  }
}

template <class F>
std::vector<double> map(std::span<const float> v, F f) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = double(f(v[i]));
  return out;
}

}  // namespace

void reference_exact(std::span<const float> x, std::span<const float> w, int64_t m, int64_t n, int64_t k,
                     std::span<double> y, std::span<double> mag) {
  auto xd = map(x, [](float v) { return v; });
  auto wd = map(w, [](float v) { return v; });
  const std::pair<const double*, const double*> t[] = {{xd.data(), wd.data()}};
  sum_terms(t, m, n, k, y, mag);
}

Status reference_precision(Precision p, std::span<const float> x, std::span<const float> w, int64_t m, int64_t n,
                           int64_t k, std::span<double> y, std::span<double> mag) {
  auto bf = [](float v) { return bf16_value(bf16_round(v)); };
  auto bf_lo = [&](float v) { return bf(v - bf(v)); };
  auto tf = [](float v) { return round_to_tf32(v); };
  auto tf_lo = [&](float v) { return tf(v - tf(v)); };
  switch (p) {
    case Precision::kF32:
      reference_exact(x, w, m, n, k, y, mag);
      return ok_status();
    case Precision::kBf16:
    case Precision::kTf32: {
      auto xd = p == Precision::kBf16 ? map(x, bf) : map(x, tf);
      auto wd = p == Precision::kBf16 ? map(w, bf) : map(w, tf);
      const std::pair<const double*, const double*> t[] = {{xd.data(), wd.data()}};
      sum_terms(t, m, n, k, y, mag);
      return ok_status();
    }
    case Precision::kBf16x3:
    case Precision::kTf32x3: {
      const bool b = p == Precision::kBf16x3;
      auto xh = b ? map(x, bf) : map(x, tf);
      auto xl = b ? map(x, bf_lo) : map(x, tf_lo);
      auto wh = b ? map(w, bf) : map(w, tf);
      auto wl = b ? map(w, bf_lo) : map(w, tf_lo);
      const std::pair<const double*, const double*> t[] = {
          {xh.data(), wh.data()}, {xh.data(), wl.data()}, {xl.data(), wh.data()}};
      sum_terms(t, m, n, k, y, mag);
      return ok_status();
    }
    case Precision::kBf16x6: {
      // The three parts exactly as the kernel splits them; the six products kept.
      auto bf_mid = [&](float v) { return bf(v - bf(v)); };
      auto bf_lo3 = [&](float v) {
        const float r = v - bf(v);
        return bf(r - bf(r));
      };
      auto xh = map(x, bf), xm = map(x, bf_mid), xl = map(x, bf_lo3);
      auto wh = map(w, bf), wm = map(w, bf_mid), wl = map(w, bf_lo3);
      const std::pair<const double*, const double*> t[] = {{xh.data(), wh.data()}, {xh.data(), wm.data()},
                                                           {xm.data(), wh.data()}, {xh.data(), wl.data()},
                                                           {xm.data(), wm.data()}, {xl.data(), wh.data()}};
      sum_terms(t, m, n, k, y, mag);
      return ok_status();
    }
    case Precision::kW8A8: {
      std::vector<int8_t> qx(x.size()), qw(w.size());
      std::vector<float> sx(static_cast<size_t>(m)), sw(static_cast<size_t>(n));
      RECUR_RETURN_IF_ERROR(quantize_int8_rows(x, size_t(m), size_t(k), qx, sx));
      RECUR_RETURN_IF_ERROR(quantize_int8_rows(w, size_t(n), size_t(k), qw, sw));
      std::vector<double> xd(x.size()), wd(w.size());
      for (size_t i = 0; i < x.size(); ++i) xd[i] = double(qx[i]) * sx[i / size_t(k)];
      for (size_t i = 0; i < w.size(); ++i) wd[i] = double(qw[i]) * sw[i / size_t(k)];
      const std::pair<const double*, const double*> t[] = {{xd.data(), wd.data()}};
      sum_terms(t, m, n, k, y, mag);
      return ok_status();
    }
  }
  return internal_error("gemm: unknown precision");
}

void reference_stored(const WeightView& w, const float* x, int64_t m, std::span<double> y, std::span<double> mag) {
  const int64_t n = w.n, k = w.k;
  std::vector<double> wd(size_t(n * k));
  const auto* base = static_cast<const std::byte*>(w.data);
  const bool regrouped = w.format == WeightFormat::kQ8_0R16 || w.format == WeightFormat::kF16R16;
  std::vector<std::byte> unpacked(regrouped ? row_bytes(w.format, k) : 0);
  for (int64_t r = 0; r < n; ++r) {
    const std::byte* row = base + size_t(r) * row_bytes(w.format, k);
    if (w.format == WeightFormat::kQ8_0R16) q8_0_r16_row(w.data, k, r, unpacked.data());
    if (w.format == WeightFormat::kF16R16) f16_r16_row(w.data, k, r, unpacked.data());
    if (regrouped) row = unpacked.data();
    for (int64_t c = 0; c < k; ++c) {
      double v = 0;
      switch (w.format) {
        case WeightFormat::kF32: {
          float f;
          std::memcpy(&f, row + 4 * c, 4);
          v = f;
          break;
        }
        case WeightFormat::kF16:
        case WeightFormat::kF16R16:
        case WeightFormat::kBf16: {
          uint16_t h;
          std::memcpy(&h, row + 2 * c, 2);
          v = w.format == WeightFormat::kBf16 ? bf16_value(h) : fp16_to_fp32(h);
          break;
        }
        case WeightFormat::kQ8_0:
        case WeightFormat::kQ8_0R16: {
          const std::byte* blk = row + (c / kQ8Block) * kQ8BlockBytes;
          uint16_t d;
          std::memcpy(&d, blk, 2);
          v = double(fp16_to_fp32(d)) * double(static_cast<int8_t>(blk[2 + c % kQ8Block]));
          break;
        }
      }
      wd[size_t(r * k + c)] = v;
    }
  }
  std::vector<double> xd(size_t(m * k));
  for (size_t i = 0; i < xd.size(); ++i) xd[i] = x[i];
  const std::pair<const double*, const double*> t[] = {{xd.data(), wd.data()}};
  sum_terms(t, m, n, k, y, mag);
}

}  // namespace recur::gemm
