// Registry entries of route_topk and grouped_gemm.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "kernels/layer/layer.h"
#include "kernels/layer/layer_specs.h"

namespace recur::kernels {
namespace {


// Uneven group sizes with some empty experts: weight (5e + 3) % 7, remainder to the last.
std::vector<int64_t> group_offsets(int64_t tokens, int64_t experts) {
  std::vector<int64_t> w(static_cast<size_t>(experts)), off(static_cast<size_t>(experts + 1), 0);
  for (int64_t e = 0; e < experts; ++e) w[size_t(e)] = (5 * e + 3) % 7;
  const int64_t total = std::max<int64_t>(1, std::accumulate(w.begin(), w.end(), int64_t(0)));
  for (int64_t e = 0; e < experts; ++e) off[size_t(e + 1)] = off[size_t(e)] + tokens * w[size_t(e)] / total;
  off[size_t(experts)] = tokens;
  return off;
}

}  // namespace

KernelSpec route_topk_spec() {
  KernelSpec k;
  k.name = "route_topk";
  k.engine_calls = true;  // engine/engine_kernels.h
  k.help = "top-k MoE routing of logits[T, E]: SIG0 softmax / SIG1 sigmoid scores, NORM1 renormalized; ids "
           "descending, ties -> lower index";
  k.shape_params = {{.name = "T", .default_value = 64, .help = "tokens"},
                    {.name = "E", .default_value = 64, .max = 1 << 16, .help = "experts"},
                    {.name = "K", .default_value = 8, .max = 1 << 16, .help = "experts per token"},
                    {.name = "SIG", .default_value = 0, .min = 0, .max = 1, .help = "0 softmax, 1 sigmoid"},
                    {.name = "NORM", .default_value = 1, .min = 0, .max = 1, .help = "renormalize the k weights"}};
  k.check_shape = [](const Shape& s) -> Status {
    if (s["K"] > s["E"]) return invalid_argument("K={} exceeds E={}", s["K"], s["E"]);
    return ok_status();
  };
  auto tk = [](const Shape& s) { return std::vector<int64_t>{s["T"], s["K"]}; };
  k.inputs = {{.name = "logits", .dtype = DType::kF32, .dims = [](const Shape& s) { return std::vector<int64_t>{s["T"], s["E"]}; },
               .coords = {"token", "expert"}, .tile = {8, 64}, .partition_dim = 0}};
  k.outputs = {{.name = "ids", .dtype = DType::kI32, .dims = tk, .coords = {"token", "slot"}, .tile = {8, 8}, .partition_dim = 0},
               {.name = "weights", .dtype = DType::kF32, .dims = tk, .coords = {"token", "slot"}, .tile = {8, 8}, .partition_dim = 0}};
  k.reference = [](const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                   std::span<std::vector<double>> mag) {
    const int64_t T = s["T"], E = s["E"], K = s["K"];
    std::vector<int64_t> order(static_cast<size_t>(E));
    for (int64_t t = 0; t < T; ++t) {
      const double* l = in[0].data() + t * E;
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [l](int64_t a, int64_t b) { return l[a] > l[b]; });
      double sum = 0;
      for (int64_t e = 0; e < E; ++e) sum += std::exp(l[e] - l[order[0]]);
      std::vector<double> w(static_cast<size_t>(K));
      double kept = 0;
      for (int64_t j = 0; j < K; ++j) {
        const double v = l[order[size_t(j)]];
        w[size_t(j)] = s["SIG"] ? 1.0 / (1.0 + std::exp(-v)) : std::exp(v - l[order[0]]) / sum;
        kept += w[size_t(j)];
      }
      for (int64_t j = 0; j < K; ++j) {
        out[0][size_t(t * K + j)] = double(order[size_t(j)]);
        mag[0][size_t(t * K + j)] = 0;
        out[1][size_t(t * K + j)] = s["NORM"] && kept > 0 ? w[size_t(j)] / kept : w[size_t(j)];
        mag[1][size_t(t * K + j)] = std::fabs(out[1][size_t(t * K + j)]);
      }
    }
  };
  k.cost.bytes = [](const Shape& s) { return 4.0 * double(s["T"]) * (double(s["E"]) + 2.0 * double(s["K"])); };
  // exp per expert and the partial sort's comparisons (~E log2 K), counted as operations.
  k.cost.flops = [](const Shape& s) {
    return double(s["T"]) * (2.0 * double(s["E"]) + double(s["E"]) * std::log2(double(s["K"]) + 1) + 2.0 * double(s["K"]));
  };
  k.partitioning = Partitioning{.param = "T"};
  k.variants = {{.name = "partial_sort", .isa = Isa::kScalar, .params = {{"select", "partial_sort"}},
                 .help = "std::partial_sort on logits per token, fp32 scores",
                 .run = [](const KernelCall& c) {
                   const Shape& s = c.shape;
                   must(route_topk(c.inputs[0].ptr<float>(), s["T"], s["E"], s["K"],
                                   s["SIG"] ? RouteScore::kSigmoid : RouteScore::kSoftmax, s["NORM"] == 1,
                                   c.outputs[0].ptr<int32_t>(), c.outputs[1].ptr<float>()), "layer kernel");
                 }}};
  return k;
}

KernelSpec grouped_gemm_spec() {
  KernelSpec k;
  k.name = "grouped_gemm";
  k.engine_note = "probe-only: the engine runs each expert's rows through that expert's projections (its stored "
                   "Q8_0/F16/BF16/F32 weights, regrouped r16 included: kernel.gemv/gemm.variant), while grouped_gemm "
                   "needs every expert as fp32 in one [E, N, K] tensor, which the engine does not hold";
  k.help = "MoE expert GEMM: tokens x[T, K] grouped by expert (group sizes from the shape: weight (5e+3)%7, some "
           "empty), Y_e = X_e W_e^T with w[E, N, K]";
  k.shape_params = {{.name = "E", .default_value = 8, .max = 4096, .help = "experts"},
                    {.name = "T", .default_value = 64, .help = "routed token rows (sum of group sizes)"},
                    {.name = "N", .default_value = 512, .max = 1 << 20, .help = "output features"},
                    {.name = "K", .default_value = 1024, .max = 1 << 20, .help = "input features"}};
  k.inputs = {{.name = "x", .dtype = DType::kF32, .dims = [](const Shape& s) { return std::vector<int64_t>{s["T"], s["K"]}; },
               .coords = {"row", "k"}, .tile = {4, 256}},
              {.name = "w", .dtype = DType::kF32,
               .dims = [](const Shape& s) { return std::vector<int64_t>{s["E"], s["N"], s["K"]}; },
               .coords = {"expert", "n", "k"}, .tile = {1, 64, 256}}};
  k.outputs = {{.name = "y", .dtype = DType::kF32, .dims = [](const Shape& s) { return std::vector<int64_t>{s["T"], s["N"]}; },
                .coords = {"row", "n"}, .tile = {4, 64}}};
  k.reference = [](const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                   std::span<std::vector<double>> mag) {
    const int64_t E = s["E"], N = s["N"], K = s["K"];
    const std::vector<int64_t> off = group_offsets(s["T"], E);
    for (int64_t e = 0; e < E; ++e)
      for (int64_t r = off[size_t(e)]; r < off[size_t(e + 1)]; ++r)
        for (int64_t n = 0; n < N; ++n) {
          double acc = 0, m = 0;
          for (int64_t i = 0; i < K; ++i) {
            const double p = in[0][size_t(r * K + i)] * in[1][size_t((e * N + n) * K + i)];
            acc += p;
            m += std::fabs(p);
          }
          out[0][size_t(r * N + n)] = acc;
          mag[0][size_t(r * N + n)] = m;
        }
  };
  k.cost.bytes = [](const Shape& s) {
    return 4.0 * (double(s["T"] * s["K"]) + double(s["E"] * s["N"] * s["K"]) + double(s["T"] * s["N"]));
  };
  k.cost.flops = [](const Shape& s) { return 2.0 * double(s["T"]) * double(s["N"]) * double(s["K"]); };
  k.variants = isa_variants(
      [](const LayerOps& ops) -> KernelFn {
        return [&ops](const KernelCall& c) {
          thread_local std::vector<int64_t> off;
          off = group_offsets(c.shape["T"], c.shape["E"]);
          must(grouped_gemm(c.inputs[0].ptr<float>(), c.inputs[1].ptr<float>(), c.outputs[0].ptr<float>(), off,
                            c.shape["N"], c.shape["K"], ops), "layer kernel");
        };
      },
      "per expert: 4 token rows share each weight-row load");
  return k;
}

}  // namespace recur::kernels
