// RoPE: per-token cos/sin tables in double, then the vector rotation of layer_ops.h per head.
#include <cmath>
#include <vector>

#include "kernels/layer/layer.h"

namespace recur::kernels {

void rope_tables(int64_t d, double pos, double theta, RopeLayout layout, float* c, float* s, double freq_scale,
                 const float* factors) {
  const bool neox = layout == RopeLayout::kHalfSplit;
  const int64_t half = d / 2;
  for (int64_t i = 0; i < half; ++i) {
    double a = pos * std::pow(theta, -2.0 * double(i) / double(d));
    if (freq_scale != 1.0) a *= freq_scale;
    if (factors != nullptr) a /= double(factors[i]);
    const float ci = float(std::cos(a)), si = float(std::sin(a));
    const int64_t lo = neox ? i : 2 * i, hi = neox ? i + half : 2 * i + 1;
    c[lo] = ci;
    c[hi] = ci;
    s[lo] = -si;
    s[hi] = si;
  }
}

Status rope(const float* x, float* y, int64_t tokens, int64_t heads, int64_t d, int64_t pos0, double theta,
            RopeLayout layout, const LayerOps& ops) {
  if (d < 2 || d % 2 != 0) return invalid_argument("rope: head dim {} must be even and >= 2", d);
  if (!(theta > 0)) return invalid_argument("rope: theta {} must be > 0", theta);
  const bool neox = layout == RopeLayout::kHalfSplit;
  // c and s of length d, laid out so y = x * c + rot(x) * s (layer_ops.h).
  std::vector<float> c(static_cast<size_t>(d)), s(static_cast<size_t>(d));
  for (int64_t t = 0; t < tokens; ++t) {
    rope_tables(d, double(pos0 + t), theta, layout, c.data(), s.data());
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t off = (t * heads + h) * d;
      ops.rope_row(x + off, y + off, c.data(), s.data(), d, neox);
    }
  }
  return ok_status();
}

}  // namespace recur::kernels
