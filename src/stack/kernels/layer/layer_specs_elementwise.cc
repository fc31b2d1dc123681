// Registry entries of rmsnorm_residual, swiglu, softmax and rope.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "kernels/layer/layer.h"
#include "kernels/layer/layer_specs.h"

namespace recur::kernels {
namespace {

constexpr float kEps = 1e-6f;
constexpr double kTheta = 10000.0;

std::vector<int64_t> mn(const Shape& s) { return {s["M"], s["N"]}; }
TensorSpec rows(std::string name) {
  return {.name = std::move(name), .dtype = DType::kF32, .dims = mn, .coords = {"row", "col"}, .tile = {8, 256},
          .partition_dim = 0};
}
std::vector<ShapeParam> mn_params(int64_t n) {
  return {{.name = "M", .default_value = 64, .help = "rows (tokens)"},
          {.name = "N", .default_value = n, .max = int64_t(1) << 24, .help = "row length"}};
}

}  // namespace

std::vector<VariantSpec> isa_variants(const std::function<KernelFn(const LayerOps&)>& make, const std::string& what) {
  return {{.name = "scalar", .isa = Isa::kScalar, .params = {{"lanes", "1"}}, .help = what + ", scalar",
           .run = make(kLayerOpsScalar)},
          {.name = "avx2", .isa = Isa::kAvx2, .params = {{"lanes", "8"}}, .help = what + ", AVX2 + FMA, masked tails",
           .run = make(kLayerOpsAvx2)},
          {.name = "avx512", .isa = Isa::kAvx512, .params = {{"lanes", "16"}}, .help = what + ", AVX-512, masked tails",
           .run = make(kLayerOpsAvx512)}};
}

KernelSpec rmsnorm_residual_spec() {
  KernelSpec k;
  k.name = "rmsnorm_residual";
  k.engine_calls = true;  // engine/engine_kernels.h
  k.help = "h = x + r; y = h / sqrt(mean(h^2) + 1e-6) * w, fp32, one pass over x and r";
  k.shape_params = mn_params(4096);
  k.inputs = {rows("x"), rows("r"),
              {.name = "w", .dtype = DType::kF32, .dims = [](const Shape& s) { return std::vector<int64_t>{s["N"]}; },
               .coords = {"col"}, .tile = {256}}};
  k.outputs = {rows("h"), rows("y")};
  k.reference = [](const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                   std::span<std::vector<double>> mag) {
    const int64_t m = s["M"], n = s["N"];
    for (int64_t r = 0; r < m; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) {
        const size_t j = size_t(r * n + i);
        out[0][j] = in[0][j] + in[1][j];
        mag[0][j] = std::fabs(in[0][j]) + std::fabs(in[1][j]);
        ss += out[0][j] * out[0][j];
      }
      const double scale = 1.0 / std::sqrt(ss / double(n) + double(kEps));
      for (int64_t i = 0; i < n; ++i) {
        const size_t j = size_t(r * n + i);
        out[1][j] = out[0][j] * scale * in[2][size_t(i)];
        // h is rounded to fp32 first: its error scale carries through.
        mag[1][j] = mag[0][j] * scale * std::fabs(in[2][size_t(i)]);
      }
    }
  };
  k.cost.bytes = [](const Shape& s) { return 4.0 * (4.0 * double(s["M"]) * double(s["N"]) + double(s["N"])); };
  k.cost.flops = [](const Shape& s) { return double(s["M"]) * (5.0 * double(s["N"]) + 3.0); };
  k.partitioning = Partitioning{.param = "M"};
  k.variants = isa_variants(
      [](const LayerOps& ops) -> KernelFn {
        return [&ops](const KernelCall& c) {
          rmsnorm_residual(c.inputs[0].ptr<float>(), c.inputs[1].ptr<float>(), c.inputs[2].ptr<float>(),
                           c.outputs[0].ptr<float>(), c.outputs[1].ptr<float>(), c.shape["M"], c.shape["N"], kEps, ops);
        };
      },
      "add, sum of squares and store h in one pass; scale pass");
  return k;
}

KernelSpec swiglu_spec() {
  KernelSpec k;
  k.name = "swiglu";
  k.engine_calls = true;  // engine/engine_kernels.h
  k.help = "y = silu(g) * u = g sigmoid(g) u, fp32 (the FFN gate of llama-style models)";
  k.shape_params = mn_params(11008);
  k.inputs = {rows("g"), rows("u")};
  k.outputs = {rows("y")};
  k.reference = [](const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                   std::span<std::vector<double>> mag) {
    for (size_t i = 0; i < out[0].size(); ++i) {
      const double g = in[0][i];
      out[0][i] = g / (1.0 + std::exp(-g)) * in[1][i];
      mag[0][i] = std::fabs(out[0][i]);
    }
    (void)s;
  };
  k.cost.bytes = [](const Shape& s) { return 12.0 * double(s["M"]) * double(s["N"]); };
  k.cost.flops = [](const Shape& s) { return 5.0 * double(s["M"]) * double(s["N"]); };  // + one exp each
  k.partitioning = Partitioning{.param = "M"};
  k.variants = isa_variants(
      [](const LayerOps& ops) -> KernelFn {
        return [&ops](const KernelCall& c) {
          swiglu(c.inputs[0].ptr<float>(), c.inputs[1].ptr<float>(), c.outputs[0].ptr<float>(),
                 c.shape["M"] * c.shape["N"], ops);
        };
      },
      "sigmoid from exp(-|g|) (no overflow)");
  return k;
}

KernelSpec softmax_spec() {
  KernelSpec k;
  k.name = "softmax";
  k.engine_note = "probe-only: the engine's softmaxes run inside the kernels that need them (attention's in the "
                   "paged attention kernels, the MoE router's in route_topk, sampling's in sample), whose variant "
                   "knobs act on the engine";
  k.help = "y[m, :] = exp(x[m, :] - max) / sum, fp32 rows (attention scores, router logits)";
  k.shape_params = mn_params(1000);
  k.inputs = {rows("x")};
  k.outputs = {rows("y")};
  k.reference = [](const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                   std::span<std::vector<double>> mag) {
    const int64_t m = s["M"], n = s["N"];
    for (int64_t r = 0; r < m; ++r) {
      const double* x = in[0].data() + r * n;
      double mx = -INFINITY, sum = 0;
      for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
      for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - mx);
      for (int64_t i = 0; i < n; ++i) {
        out[0][size_t(r * n + i)] = std::exp(x[i] - mx) / sum;
        mag[0][size_t(r * n + i)] = out[0][size_t(r * n + i)];
      }
    }
  };
  k.cost.bytes = [](const Shape& s) { return 8.0 * double(s["M"]) * double(s["N"]); };
  k.cost.flops = [](const Shape& s) { return 4.0 * double(s["M"]) * double(s["N"]); };  // max, sub, add, mul + exp
  k.partitioning = Partitioning{.param = "M"};
  k.variants = isa_variants(
      [](const LayerOps& ops) -> KernelFn {
        return [&ops](const KernelCall& c) {
          softmax_rows(c.inputs[0].ptr<float>(), c.outputs[0].ptr<float>(), c.shape["M"], c.shape["N"], ops);
        };
      },
      "three passes: max, exp and sum, scale");
  return k;
}

KernelSpec rope_spec() {
  KernelSpec k;
  k.name = "rope";
  k.engine_calls = true;  // engine/engine_kernels.h
  k.help = "rotary embedding of x[T, H, D] at positions P..P+T-1, theta 10000; NEOX0 interleaved pairs (GGUF "
           "llama), NEOX1 half-split (NeoX/HF)";
  k.shape_params = {{.name = "T", .default_value = 64, .help = "tokens"},
                    {.name = "H", .default_value = 32, .max = 4096, .help = "heads"},
                    {.name = "D", .default_value = 128, .min = 2, .max = 1 << 16, .help = "head dim (even)"},
                    {.name = "P", .default_value = 0, .min = 0, .max = int64_t(1) << 24, .help = "first position"},
                    {.name = "NEOX", .default_value = 0, .min = 0, .max = 1, .help = "layout: 0 interleaved, 1 half-split"}};
  k.check_shape = [](const Shape& s) -> Status {
    if (s["D"] % 2) return invalid_argument("D={} must be even", s["D"]);
    return ok_status();
  };
  auto thd = [](const Shape& s) { return std::vector<int64_t>{s["T"], s["H"], s["D"]}; };
  k.inputs = {{.name = "x", .dtype = DType::kF32, .dims = thd, .coords = {"token", "head", "dim"}, .tile = {8, 1, 64}}};
  k.outputs = {{.name = "y", .dtype = DType::kF32, .dims = thd, .coords = {"token", "head", "dim"}, .tile = {8, 1, 64}}};
  k.reference = [](const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                   std::span<std::vector<double>> mag) {
    const int64_t T = s["T"], H = s["H"], D = s["D"], half = D / 2;
    const bool neox = s["NEOX"] == 1;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const double a = double(s["P"] + t) * std::pow(kTheta, -2.0 * double(i) / double(D));
          const size_t base = size_t((t * H + h) * D);
          const size_t lo = base + size_t(neox ? i : 2 * i), hi = base + size_t(neox ? i + half : 2 * i + 1);
          const double x0 = in[0][lo], x1 = in[0][hi], c = std::cos(a), sn = std::sin(a);
          out[0][lo] = x0 * c - x1 * sn;
          out[0][hi] = x0 * sn + x1 * c;
          mag[0][lo] = mag[0][hi] = std::fabs(x0) + std::fabs(x1);  // cos/sin are rounded to fp32
        }
  };
  k.cost.bytes = [](const Shape& s) { return 8.0 * double(s["T"] * s["H"] * s["D"]); };
  k.cost.flops = [](const Shape& s) { return 3.0 * double(s["T"] * s["H"] * s["D"]); };  // + D sin/cos per token
  k.variants = isa_variants(
      [](const LayerOps& ops) -> KernelFn {
        return [&ops](const KernelCall& c) {
          const Shape& s = c.shape;
          must(rope(c.inputs[0].ptr<float>(), c.outputs[0].ptr<float>(), s["T"], s["H"], s["D"], s["P"], kTheta,
                    s["NEOX"] == 1 ? RopeLayout::kHalfSplit : RopeLayout::kInterleaved, ops), "layer kernel");
        };
      },
      "double cos/sin tables per token, vector rotation per head");
  return k;
}

}  // namespace recur::kernels
