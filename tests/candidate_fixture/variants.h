// The fixture's rmsnorm variants (y = x / sqrt(mean(x^2) + 1e-6) * w, per row).
#pragma once
#include <cmath>

struct Variant {
  const char* name;
  void (*fn)(const float* x, const float* w, float* y, long m, long n);
};

inline void rms_scalar(const float* x, const float* w, float* y, long m, long n) {
  for (long r = 0; r < m; ++r) {
    float ss = 0;
    for (long i = 0; i < n; ++i) ss += x[r * n + i] * x[r * n + i];
    const float scale = 1.0f / std::sqrt(ss / float(n) + 1e-6f);
    for (long i = 0; i < n; ++i) y[r * n + i] = x[r * n + i] * scale * w[i];
  }
}

static const Variant kVariants[] = {
    {"scalar", rms_scalar},
};
