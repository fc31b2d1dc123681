// The scalar path of gemv, and the kernel's registry entry (shape, tensors, float64 reference
// with sum |w x| as the error scale, cost model, partitioning over output rows, variants).
#include "kernels/gemv/gemv.h"

#include <cmath>

#include "kernels/builtin_kernels.h"
#include "kernels/registry.h"

namespace recur::kernels {

void gemv_scalar(const float* w, const float* x, float* y, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    float s = 0;
    for (int64_t i = 0; i < n; ++i) s += w[r * n + i] * x[i];
    y[r] = s;
  }
}

namespace {

using GemvFn = void (*)(const float*, const float*, float*, int64_t, int64_t);

KernelFn call(GemvFn fn) {
  return [fn](const KernelCall& c) {
    fn(c.inputs[0].ptr<float>(), c.inputs[1].ptr<float>(), c.outputs[0].ptr<float>(), c.shape["M"], c.shape["N"]);
  };
}

void gemv_reference(const Shape& shape, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
               std::span<std::vector<double>> magnitude) {
  const int64_t m = shape["M"], n = shape["N"];
  for (int64_t r = 0; r < m; ++r) {
    double s = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      double t = in[0][r * n + i] * in[1][i];
      s += t;
      mag += std::fabs(t);
    }
    out[0][r] = s;
    magnitude[0][r] = mag;
  }
}

}  // namespace

KernelSpec gemv_spec() {
  KernelSpec k;
  k.name = "gemv";
  k.engine_calls = true;  // engine/projection.h: M = 1 products of F32 weights
  k.engine_note = "in the engine auto keeps its stored-weight GEMV (every weight type, regrouped r16 included); a "
                   "variant runs M = 1 products of F32 weights (others keep the stored GEMV, zone gemv variant=stored)";
  k.help = "y[m] = sum_n W[m,n] x[n], fp32; output rows split across shards";
  k.shape_params = {{.name = "M", .default_value = 1024, .help = "output rows"},
                    {.name = "N", .default_value = 1024, .max = int64_t(1) << 24, .help = "input length"}};
  k.inputs = {{.name = "W", .dtype = DType::kF32, .dims = [](const Shape& s) { return std::vector<int64_t>{s["M"], s["N"]}; },
               .coords = {"row", "col"}, .tile = {16, 256}, .partition_dim = 0},
              {.name = "x", .dtype = DType::kF32, .dims = [](const Shape& s) { return std::vector<int64_t>{s["N"]}; },
               .coords = {"col"}, .tile = {256}}};
  k.outputs = {{.name = "y", .dtype = DType::kF32, .dims = [](const Shape& s) { return std::vector<int64_t>{s["M"]}; },
                .coords = {"row"}, .tile = {16}, .partition_dim = 0}};
  k.reference = gemv_reference;
  k.cost.bytes = [](const Shape& s) { return 4.0 * (double(s["M"]) * double(s["N"]) + double(s["N"]) + double(s["M"])); };
  k.cost.flops = [](const Shape& s) { return 2.0 * double(s["M"]) * double(s["N"]); };
  k.partitioning = Partitioning{.param = "M"};
  k.variants = {
      {.name = "scalar", .isa = Isa::kScalar, .help = "one row at a time, sequential fp32 sum", .run = call(gemv_scalar)},
      {.name = "avx2", .isa = Isa::kAvx2, .params = {{"rows_per_pass", "4"}}, .help = "8-wide FMA, 4 rows share x",
       .run = call(gemv_avx2)},
      {.name = "avx512", .isa = Isa::kAvx512, .params = {{"rows_per_pass", "4"}}, .help = "16-wide FMA, 4 rows share x",
       .run = call(gemv_avx512)},
  };
  return k;
}

}  // namespace recur::kernels
