// ggml's RMSNorm and RoPE (ggml_arith.h): scalar loops in ggml-cpu.c, so the same bits in every
// build, apart from the build's fp contraction where it fuses a product into a sum.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "kernels/ggml_arith/ggml_arith.h"

namespace recur::ggml_arith {

void rms_norm_row(int64_t n, float* y, const float* x, float eps, const float* w) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += double(x[i] * x[i]);
  const float mean = float(sum / double(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
  if (w != nullptr)
    for (int64_t i = 0; i < n; ++i) y[i] *= w[i];
}

namespace {

// ggml_rope_yarn_corr_dim: the dimension whose wavelength fits n_rot turns in the original context.
float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
  return float(n_dims) * std::log(float(n_ctx_orig) / (n_rot * 2.0f * float(std::numbers::pi))) / (2.0f * std::log(base));
}

}  // namespace

void rope_cache(int64_t p, const RopeParams& rp, const float* freq_factors, float* cos_sin) {
  const float theta_scale = std::pow(rp.freq_base, -2.0f / float(rp.n_dims));
  float corr[2] = {0.0f, 0.0f};
  if (rp.ext_factor != 0.0f) {
    const float start = std::floor(yarn_corr_dim(rp.n_dims, rp.n_ctx_orig, rp.beta_fast, rp.freq_base));
    const float end = std::ceil(yarn_corr_dim(rp.n_dims, rp.n_ctx_orig, rp.beta_slow, rp.freq_base));
    corr[0] = std::max(0.0f, start);
    corr[1] = std::min(float(rp.n_dims - 1), end);
  }
  float theta = float(p);
  for (int i0 = 0; i0 < rp.n_dims; i0 += 2) {
    const float extrap = freq_factors != nullptr ? theta / freq_factors[i0 / 2] : theta;
    const float interp = rp.freq_scale * extrap;
    float angle = interp, mscale = rp.attn_factor;
    if (rp.ext_factor != 0.0f) {
      const float y = (float(i0 / 2) - corr[0]) / std::max(0.001f, corr[1] - corr[0]);
      const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * rp.ext_factor;
      // theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix: gcc fuses the first product
      // (rope_yarn in libggml-cpu.so: vmulss extrap*ramp_mix, then vfmadd132ss).
      angle = std::fma(interp, 1.0f - ramp_mix, extrap * ramp_mix);
      mscale *= std::fma(0.1f, std::log(1.0f / rp.freq_scale), 1.0f);
    }
    cos_sin[i0] = std::cos(angle) * mscale;
    cos_sin[i0 + 1] = std::sin(angle) * mscale;
    theta *= theta_scale;
  }
}

void rope_rotate(int n_dims, bool neox, const float* cos_sin, const float* x, float* y) {
  const int pairs = n_dims / 2;
  for (int i = 0; i < pairs; ++i) {
    const int a = neox ? i : 2 * i, b = neox ? i + pairs : 2 * i + 1;
    const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
    const float x0 = x[a], x1 = x[b];
    y[a] = std::fma(x0, c, -(x1 * s));
    y[b] = std::fma(x0, s, x1 * c);
  }
}

}  // namespace recur::ggml_arith
