// gemm(): activations converted for the weights' precision, then the dot or tiled algorithm.
#include <algorithm>
#include <cstring>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_round.h"

namespace recur::gemm {
namespace {

// K block of the dot algorithm: all of K for GEMV (M <= 8), else about 4 KiB of each W row,
// so 4 W rows stay in L1 while a block of X rows meets them. w8a8 never splits K (the VNNI
// compensation term covers the whole row).
int64_t dot_kc(Precision p, int64_t m, int64_t k) {
  if (m <= 8 || p == Precision::kW8A8) return k;
  switch (p) {
    case Precision::kBf16: return 2048;
    case Precision::kTf32x3:
    case Precision::kBf16x3:
    case Precision::kBf16x6: return 512;
    default: return 1024;
  }
}
constexpr int64_t kDotMc = 64;

// A strips [ceil(m / 6)][k][6] of x [m, k], zero-padded past m; strips split over the pool.
void pack_a(const float* x, int64_t m, int64_t k, float* out, ThreadPool* pool) {
  const int64_t strips = (m + kTileM - 1) / kTileM;
  auto body = [&](int64_t s0, int64_t s1, int) {
    for (int64_t s = s0; s < s1; ++s) {
      float* dst = out + s * k * kTileM;
      for (int i = 0; i < kTileM; ++i) {
        const int64_t r = s * kTileM + i;
        if (r < m) {
          const float* src = x + r * k;
          for (int64_t c = 0; c < k; ++c) dst[c * kTileM + i] = src[c];
        } else {
          for (int64_t c = 0; c < k; ++c) dst[c * kTileM + i] = 0.0f;
        }
      }
    }
  };
  if (pool != nullptr) pool->parallel_for(strips, body);
  else body(0, strips, 0);
}

void run_tiled(const PackedWeights& w, const float* x, int64_t m, float* y, const Options& o, ThreadPool* pool,
               Workspace& ws) {
  const int64_t n = w.n(), k = w.k();
  const int64_t strips = (m + kTileM - 1) / kTileM;
  auto* a = reinterpret_cast<float*>(ws.bytes(2, size_t(strips * k * kTileM) * sizeof(float)));
  pack_a(x, m, k, a, pool);
  const int64_t kc = std::clamp<int64_t>(o.kc, 1, k);
  const int64_t mc = std::max<int64_t>(kTileM, (o.mc + kTileM - 1) / kTileM * kTileM);
  const float* panels = w.panels();
  const int64_t npanels = (n + kTileN - 1) / kTileN;
  auto body = [&](int64_t p0, int64_t p1, int) {
    for (int64_t pc = 0; pc < k; pc += kc) {
      const int64_t kb = std::min(kc, k - pc);
      for (int64_t ic = 0; ic < m; ic += mc) {
        const int64_t ie = std::min(m, ic + mc);
        for (int64_t p = p0; p < p1; ++p) {
          const float* b = panels + (p * k + pc) * kTileN;
          const int nr = int(std::min<int64_t>(kTileN, n - p * kTileN));
          for (int64_t ir = ic; ir < ie; ir += kTileM) {
            const float* as = a + ((ir / kTileM) * k + pc) * kTileM;
            kMicroAvx512(as, b, kb, y + ir * n + p * kTileN, n, int(std::min<int64_t>(kTileM, m - ir)), nr,
                         pc > 0);
          }
        }
      }
    }
  };
  if (pool != nullptr) pool->parallel_for(npanels, body);
  else body(0, npanels, 0);
}

}  // namespace

bool runs_tiled(Precision p, int64_t m, const Options& options) {
  return (p == Precision::kF32 || p == Precision::kTf32) && active_isa() >= Isa::kAvx512 &&
         (options.algo == Algo::kTiled || (options.algo == Algo::kAuto && m > 8));
}

Status gemm(const PackedWeights& w, const float* x, int64_t m, float* y, const Options& options, ThreadPool* pool,
            Workspace& ws) {
  if (m < 1 || x == nullptr || y == nullptr)
    return invalid_argument("gemm: m={} x={} y={}: expected m >= 1 and both pointers set", m,
                            static_cast<const void*>(x), static_cast<const void*>(y));
  if (w.n() < 1) return invalid_argument("gemm: weights are empty (not packed)");
  const int64_t n = w.n(), k = w.k();
  const size_t mk = size_t(m * k);
  const Precision p = w.precision();
  const Isa isa = active_isa();

  // Activations in the form the kernels read.
  const float* xf = x;
  if (p == Precision::kTf32 || p == Precision::kTf32x3) {
    auto* hi = reinterpret_cast<float*>(ws.bytes(0, mk * sizeof(float)));
    for (size_t i = 0; i < mk; ++i) hi[i] = tf32_round(x[i]);
    xf = hi;
  }
  if (runs_tiled(p, m, options)) {
    run_tiled(w, xf, m, y, options, pool, ws);
    return ok_status();
  }

  const DotKernels& kern = dot_kernels(isa);
  DotArgs a{.k = k, .w = w.hi(), .w_lo = w.lo(), .w_mid = w.mid(), .w_scale = w.scales(), .w_comp = w.comp(), .y = y, .ldy = n};
  DotFn fn = nullptr;
  switch (p) {
    case Precision::kF32:
    case Precision::kTf32:
      a.x = xf;
      fn = kern.f32;
      break;
    case Precision::kTf32x3: {
      auto* lo = reinterpret_cast<float*>(ws.bytes(1, mk * sizeof(float)));
      for (size_t i = 0; i < mk; ++i) lo[i] = tf32_round(x[i] - xf[i]);
      a.x = xf;
      a.x_lo = lo;
      fn = kern.f32x3;
      break;
    }
    case Precision::kBf16: {
      auto* hi = reinterpret_cast<uint16_t*>(ws.bytes(0, mk * sizeof(uint16_t)));
      RECUR_RETURN_IF_ERROR(fp32_to_bf16(std::span(x, mk), std::span(hi, mk)));
      a.x = hi;
      fn = kern.bf16;
      break;
    }
    case Precision::kBf16x3: {
      auto* hi = reinterpret_cast<uint16_t*>(ws.bytes(0, mk * sizeof(uint16_t)));
      auto* lo = reinterpret_cast<uint16_t*>(ws.bytes(1, mk * sizeof(uint16_t)));
      for (size_t i = 0; i < mk; ++i) {
        hi[i] = bf16_round(x[i]);
        lo[i] = bf16_round(x[i] - bf16_value(hi[i]));
      }
      a.x = hi;
      a.x_lo = lo;
      fn = kern.bf16x3;
      break;
    }
    case Precision::kBf16x6: {
      auto* hi = reinterpret_cast<uint16_t*>(ws.bytes(0, mk * sizeof(uint16_t)));
      auto* mid = reinterpret_cast<uint16_t*>(ws.bytes(1, mk * sizeof(uint16_t)));
      auto* lo = reinterpret_cast<uint16_t*>(ws.bytes(2, mk * sizeof(uint16_t)));
      split_bf16x3_parts(std::span(x, mk), std::span(hi, mk), std::span(mid, mk), std::span(lo, mk));
      a.x = hi;
      a.x_mid = mid;
      a.x_lo = lo;
      fn = kern.bf16x6;
      break;
    }
    case Precision::kW8A8: {
      auto* q = reinterpret_cast<int8_t*>(ws.bytes(0, mk));
      auto* s = reinterpret_cast<float*>(ws.bytes(1, size_t(m) * sizeof(float)));
      RECUR_RETURN_IF_ERROR(quantize_int8_rows(std::span(x, mk), size_t(m), size_t(k), std::span(q, mk),
                                               std::span(s, size_t(m))));
      a.x = q;
      a.x_scale = s;
      fn = kern.i8;
      break;
    }
  }
  run_dot(fn, a, m, n, dot_kc(p, m, k), kDotMc, w.weight_bytes() / size_t(n), pool);
  return ok_status();
}

}  // namespace recur::gemm
