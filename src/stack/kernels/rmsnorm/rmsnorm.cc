// The scalar path of rmsnorm, and the kernel's registry entry (shape, tensors, float64
// reference, cost model, partitioning over rows, variants).
#include "kernels/rmsnorm/rmsnorm.h"

#include <cmath>

#include "kernels/builtin_kernels.h"
#include "kernels/registry.h"

namespace recur::kernels {

void rmsnorm_scalar(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += xr[i] * xr[i];
    const float scale = 1.0f / std::sqrt(ss / float(n) + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale * w[i];
  }
}

RmsNormFn rmsnorm_fn(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return rmsnorm_avx512;
    case Isa::kAvx2: return rmsnorm_avx2;
    default: return rmsnorm_scalar;
  }
}

namespace {

KernelFn call(RmsNormFn fn) {
  return [fn](const KernelCall& c) {
    fn(c.inputs[0].ptr<float>(), c.inputs[1].ptr<float>(), c.outputs[0].ptr<float>(), c.shape["M"], c.shape["N"],
       kRmsNormEps);
  };
}

void rmsnorm_reference(const Shape& shape, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
               std::span<std::vector<double>> magnitude) {
  const int64_t m = shape["M"], n = shape["N"];
  const std::vector<double>& x = in[0];
  const std::vector<double>& w = in[1];
  for (int64_t r = 0; r < m; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += x[r * n + i] * x[r * n + i];
    const double scale = 1.0 / std::sqrt(ss / double(n) + double(kRmsNormEps));
    for (int64_t i = 0; i < n; ++i) {
      out[0][r * n + i] = x[r * n + i] * scale * w[i];
      magnitude[0][r * n + i] = std::fabs(out[0][r * n + i]);
    }
  }
}

}  // namespace

KernelSpec rmsnorm_spec() {
  KernelSpec k;
  k.name = "rmsnorm";
  k.help = "y[m,:] = x[m,:] / sqrt(mean(x[m,:]^2) + 1e-6) * w, fp32; rows split across shards";
  k.shape_params = {{.name = "M", .default_value = 64, .help = "rows (tokens)"},
                    {.name = "N", .default_value = 4096, .max = int64_t(1) << 24, .help = "row length (hidden size)"}};
  auto mn = [](const Shape& s) { return std::vector<int64_t>{s["M"], s["N"]}; };
  k.inputs = {{.name = "x", .dtype = DType::kF32, .dims = mn, .coords = {"row", "col"}, .tile = {8, 256}, .partition_dim = 0},
              {.name = "w", .dtype = DType::kF32, .dims = [](const Shape& s) { return std::vector<int64_t>{s["N"]}; },
               .coords = {"col"}, .tile = {256}}};
  k.outputs = {{.name = "y", .dtype = DType::kF32, .dims = mn, .coords = {"row", "col"}, .tile = {8, 256}, .partition_dim = 0}};
  k.reference = rmsnorm_reference;
  k.cost.bytes = [](const Shape& s) { return 4.0 * (2.0 * double(s["M"]) * double(s["N"]) + double(s["N"])); };
  // Per element: a square-accumulate (2) and two multiplies (2); per row a divide and a sqrt.
  k.cost.flops = [](const Shape& s) { return double(s["M"]) * (4.0 * double(s["N"]) + 3.0); };
  k.partitioning = Partitioning{.param = "M"};
  k.engine_calls = true;
  k.variants = {
      {.name = "scalar", .isa = Isa::kScalar, .help = "one row at a time, sequential fp32 sum", .run = call(rmsnorm_scalar)},
      {.name = "avx2", .isa = Isa::kAvx2, .params = {{"unroll", "2x8"}}, .help = "8-wide FMA, two accumulators",
       .run = call(rmsnorm_avx2)},
      {.name = "avx512", .isa = Isa::kAvx512, .params = {{"unroll", "2x16"}}, .help = "16-wide FMA, masked tails",
       .run = call(rmsnorm_avx512)},
  };
  return k;
}

}  // namespace recur::kernels
