// Registry entries of embedding_{f32,f16,bf16,q8_0} and sample, and the list of every layer spec.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/convert.h"
#include "kernels/layer/layer.h"
#include "kernels/layer/layer_specs.h"

namespace recur::kernels {
namespace {


// The ids the registered form gathers: (7919 t + 13) mod V, a function of the shape, because
// the check fills integer inputs with values that are not valid ids.
int32_t shape_id(int64_t t, int64_t vocab) { return int32_t((7919 * t + 13) % vocab); }

struct TableInfo {
  const char* suffix;
  TableType type;
  DType dtype;  // of the table tensor's elements
};

double table_value(const TableInfo& info, const std::vector<double>& table, int64_t row, int64_t col, int64_t n) {
  if (info.type != TableType::kQ8_0) return table[size_t(row * n + col)];
  const int64_t row_bytes = n / 32 * 34;
  const double* blk = table.data() + row * row_bytes + col / 32 * 34;
  const uint16_t bits = uint16_t(uint16_t(blk[0]) | uint16_t(uint16_t(blk[1]) << 8));
  const int8_t q = int8_t(uint8_t(blk[2 + col % 32]));
  return double(fp16_to_fp32(bits)) * double(q);
}

KernelSpec embedding_spec(const TableInfo& info) {
  KernelSpec k;
  k.name = std::string("embedding_") + info.suffix;
  k.engine_calls = true;  // engine/blocks/rows.cc: the token embedding rows of a table of this type
  k.help = std::string("out[t, :] = table[id_t, :] from a ") + info.suffix +
           " table[V, N] (q8_0: GGUF blocks of fp16 d + 32 int8), id_t = (7919 t + 13) mod V";
  k.shape_params = {{.name = "T", .default_value = 64, .help = "tokens"},
                    {.name = "V", .default_value = 32000, .max = int64_t(1) << 24, .help = "vocabulary rows"},
                    {.name = "N", .default_value = 4096, .max = 1 << 20, .help = "embedding width"}};
  if (info.type == TableType::kQ8_0)
    k.check_shape = [](const Shape& s) -> Status {
      if (s["N"] % 32) return invalid_argument("N={} must be a multiple of 32 for q8_0", s["N"]);
      return ok_status();
    };
  const TableType type = info.type;
  k.inputs = {{.name = "table", .dtype = info.dtype,
               .dims = [type](const Shape& s) {
                 return std::vector<int64_t>{s["V"], type == TableType::kQ8_0 ? s["N"] / 32 * 34 : s["N"]};
               },
               .coords = {"row", type == TableType::kQ8_0 ? "byte" : "col"}, .tile = {1, 256}}};
  k.outputs = {{.name = "out", .dtype = DType::kF32, .dims = [](const Shape& s) { return std::vector<int64_t>{s["T"], s["N"]}; },
                .coords = {"token", "col"}, .tile = {1, 256}}};
  k.reference = [info](const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                       std::span<std::vector<double>> mag) {
    const int64_t T = s["T"], N = s["N"];
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < N; ++c) {
        const double v = table_value(info, in[0], shape_id(t, s["V"]), c, N);
        out[0][size_t(t * N + c)] = v;
        mag[0][size_t(t * N + c)] = std::fabs(v);
      }
  };
  k.cost.bytes = [type](const Shape& s) {
    return double(s["T"]) * (double(table_row_bytes(type, s["N"])) + 4.0 * double(s["N"]));
  };
  k.cost.flops = [type](const Shape& s) { return type == TableType::kQ8_0 ? double(s["T"] * s["N"]) : 0.0; };
  auto make = [type](const LayerOps& ops) -> KernelFn {
    return [type, &ops](const KernelCall& c) {
      thread_local std::vector<int32_t> ids;
      ids.resize(size_t(c.shape["T"]));
      for (int64_t t = 0; t < c.shape["T"]; ++t) ids[size_t(t)] = shape_id(t, c.shape["V"]);
      must(embedding_gather(c.inputs[0].data(), type, c.shape["V"], c.shape["N"], ids, c.outputs[0].ptr<float>(), ops), "layer kernel");
    };
  };
  if (type == TableType::kQ8_0) {
    k.variants = isa_variants(make, "block dequantization d * q");
  } else {
    k.variants = {{.name = "convert", .isa = Isa::kScalar, .params = {{"copy", type == TableType::kF32 ? "memcpy" : "core/convert"}},
                   .help = "row copy or core/convert (dispatched by active_isa)", .run = make(layer_ops(Isa::kScalar))}};
  }
  return k;
}

}  // namespace

std::vector<KernelSpec> embedding_specs() {
  const TableInfo tables[] = {{"f32", TableType::kF32, DType::kF32},
                              {"f16", TableType::kF16, DType::kF16},
                              {"bf16", TableType::kBF16, DType::kBF16},
                              {"q8_0", TableType::kQ8_0, DType::kU8}};
  std::vector<KernelSpec> out;
  for (const TableInfo& t : tables) out.push_back(embedding_spec(t));
  return out;
}

KernelSpec sample_spec() {
  KernelSpec k;
  k.name = "sample";
  k.engine_calls = true;  // engine/sampler.h: generate's and serve's token picks
  k.help = "one token per row of logits[R, V]: TEMP (thousandths; 0 greedy), TOPP (thousandths), SEED; the "
           "reference repeats the double walk with the same seeded uniform";
  k.shape_params = {{.name = "R", .default_value = 8, .help = "rows (sequences)"},
                    {.name = "V", .default_value = 32000, .max = int64_t(1) << 24, .help = "vocabulary"},
                    {.name = "TEMP", .default_value = 800, .min = 0, .max = 100000, .help = "temperature x 1000"},
                    {.name = "TOPP", .default_value = 950, .min = 1, .max = 1000, .help = "top-p x 1000"},
                    {.name = "SEED", .default_value = 1, .min = 0, .help = "sampling seed"}};
  k.inputs = {{.name = "logits", .dtype = DType::kF32, .dims = [](const Shape& s) { return std::vector<int64_t>{s["R"], s["V"]}; },
               .coords = {"row", "token"}, .tile = {1, 1024}}};
  k.outputs = {{.name = "token", .dtype = DType::kI32, .dims = [](const Shape& s) { return std::vector<int64_t>{s["R"]}; },
                .coords = {"row"}}};
  k.reference = [](const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                   std::span<std::vector<double>> mag) {
    const int64_t R = s["R"], V = s["V"];
    const double temp = double(float(double(s["TEMP"]) / 1000.0)), top_p = double(float(double(s["TOPP"]) / 1000.0));
    for (int64_t r = 0; r < R; ++r) {
      const double* l = in[0].data() + r * V;
      int64_t best = 0;
      for (int64_t i = 1; i < V; ++i)
        if (l[i] > l[best]) best = i;
      mag[0][size_t(r)] = 0;
      if (temp <= 0) {
        out[0][size_t(r)] = double(best);
        continue;
      }
      std::vector<double> p(static_cast<size_t>(V));
      double total = 0;
      for (int64_t i = 0; i < V; ++i) total += p[size_t(i)] = std::exp((l[i] - l[best]) * (1.0 / temp));
      std::vector<int64_t> order(static_cast<size_t>(V));
      for (int64_t i = 0; i < V; ++i) order[size_t(i)] = i;
      int64_t n = V;
      double kept = total;
      if (top_p < 1) {
        std::stable_sort(order.begin(), order.end(), [l](int64_t a, int64_t b) { return l[a] > l[b]; });
        double acc = 0;
        for (n = 0; n < V;) {
          acc += p[size_t(order[size_t(n++)])];
          if (acc >= top_p * total) break;
        }
        kept = acc;
      }
      const double target = sample_uniform(uint64_t(s["SEED"]), r) * kept;
      double acc = 0;
      int64_t pick = order[size_t(n - 1)];
      for (int64_t j = 0; j < n; ++j) {
        acc += p[size_t(order[size_t(j)])];
        if (acc > target) {
          pick = order[size_t(j)];
          break;
        }
      }
      out[0][size_t(r)] = double(pick);
    }
  };
  k.cost.bytes = [](const Shape& s) { return 4.0 * double(s["R"]) * (double(s["V"]) + 1.0); };
  // max, exp, two sums and the top-p sort (~V log2 V comparisons) per row.
  k.cost.flops = [](const Shape& s) {
    const double v = double(s["V"]);
    return double(s["R"]) * (4.0 * v + (s["TOPP"] < 1000 ? v * std::log2(v + 1) : 0.0));
  };
  k.variants = {{.name = "sorted_walk", .isa = Isa::kScalar, .params = {{"sort", "stable_sort"}},
                 .help = "double probabilities, stable sort by logit for top-p, one seeded uniform per row",
                 .run = [](const KernelCall& c) {
                   const Shape& s = c.shape;
                   const SampleParams p{.temperature = float(double(s["TEMP"]) / 1000.0),
                                        .top_p = float(double(s["TOPP"]) / 1000.0), .seed = uint64_t(s["SEED"])};
                   must(sample(c.inputs[0].ptr<float>(), s["R"], s["V"], p, c.outputs[0].ptr<int32_t>()), "layer kernel");
                 }}};
  return k;
}

std::vector<KernelSpec> layer_kernel_specs() {
  std::vector<KernelSpec> out = {rmsnorm_residual_spec(), swiglu_spec(), softmax_spec(), rope_spec(),
                                 route_topk_spec(), grouped_gemm_spec()};
  for (KernelSpec& k : embedding_specs()) out.push_back(std::move(k));
  out.push_back(sample_spec());
  return out;
}

}  // namespace recur::kernels
