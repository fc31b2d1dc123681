// The `gemm` kernel: shape, tensors, float64 reference (the exact product of the fp32 inputs,
// with sum |x w| as the error scale), cost model, N-partitioning and one variant per precision.
//
// Weights are packed once per precision, as a model load does, not on every call: a variant
// keeps a few packed copies keyed by the weight tensor's address and shape plus a fingerprint of
// sampled values, so new weights at the same address (check's fresh inputs) are packed again.
#include "kernels/gemm/gemm_register.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_cost.h"
#include "kernels/gemm/gemm_reference.h"

namespace recur::kernels {
namespace {

using gemm::Precision;

// 64 sampled values (and both ends) of W: equal fingerprints with different values would need
// every sampled float to match, which fresh random inputs never do.
uint64_t fingerprint(const float* w, int64_t count) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](int64_t i) {
    uint32_t bits;
    std::memcpy(&bits, w + i, 4);
    h = (h ^ bits) * 0x100000001b3ull;
  };
  const int64_t step = std::max<int64_t>(1, count / 64);
  for (int64_t i = 0; i < count; i += step) mix(i);
  mix(count - 1);
  return h;
}

struct PackedEntry {
  const float* data;
  int64_t n, k;
  Precision precision;
  uint64_t print;
  std::shared_ptr<const gemm::PackedWeights> packed;
};

// Packed weights for (data, n, k, precision), packing on a miss. Thread-safe; LRU of 8.
Result<std::shared_ptr<const gemm::PackedWeights>> packed_for(const float* w, int64_t n, int64_t k, Precision p) {
  static std::mutex mu;
  static std::list<PackedEntry> cache;
  const uint64_t print = fingerprint(w, n * k);
  {
    std::lock_guard lock(mu);
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if (it->data == w && it->n == n && it->k == k && it->precision == p && it->print == print) {
        cache.splice(cache.begin(), cache, it);
        return cache.front().packed;
      }
    }
  }
  RECUR_ASSIGN_OR_RETURN(gemm::PackedWeights packed,
                         gemm::PackedWeights::pack(std::span<const float>(w, size_t(n * k)), n, k, p));
  auto shared = std::make_shared<const gemm::PackedWeights>(std::move(packed));
  std::lock_guard lock(mu);
  cache.push_front(PackedEntry{w, n, k, p, print, shared});
  if (cache.size() > 8) cache.pop_back();
  return shared;
}

// X [M,K] and W [N,K] arrive contiguous (W's shard is a run of whole rows); Y's shard is a
// column block of the full [M,N] output, so it is computed densely and copied into place.
KernelFn run_precision(Precision p, gemm::Algo algo) {
  return [p, algo](const KernelCall& c) {
    const int64_t m = c.shape["M"], n = c.shape["N"], k = c.shape["K"];
    auto packed = packed_for(c.inputs[1].ptr<float>(), n, k, p);
    if (!packed) return;  // non-finite weights for w8a8: Y keeps check's sentinels, which fail loudly
    thread_local gemm::Workspace ws;
    thread_local std::vector<float> dense;
    const TensorView& y = c.outputs[0];
    const bool contiguous = y.stride(0) == n;
    float* out = y.ptr<float>();
    if (!contiguous) {
      dense.resize(size_t(m * n));
      out = dense.data();
    }
    if (!gemm::gemm(**packed, c.inputs[0].ptr<float>(), m, out, gemm::Options{.algo = algo}, nullptr, ws)) return;
    if (!contiguous) {
      for (int64_t r = 0; r < m; ++r) std::memcpy(y.ptr<float>() + r * y.stride(0), out + r * n, size_t(n) * 4);
    }
  };
}

void reference_exact(const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                     std::span<std::vector<double>> magnitude) {
  std::vector<float> x(in[0].begin(), in[0].end()), w(in[1].begin(), in[1].end());  // inputs are fp32 values
  gemm::reference_exact(x, w, s["M"], s["N"], s["K"], out[0], magnitude[0]);
}

// The int8 arithmetic itself in float64: X and W quantized as the kernel quantizes them.
void reference_w8a8(const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                    std::span<std::vector<double>> magnitude) {
  std::vector<float> x(in[0].begin(), in[0].end()), w(in[1].begin(), in[1].end());
  auto st = gemm::reference_precision(Precision::kW8A8, x, w, s["M"], s["N"], s["K"], out[0], magnitude[0]);
  if (!st) std::fill(out[0].begin(), out[0].end(), std::nan(""));  // non-finite input: nothing is comparable
}

std::map<DType, Tolerance> rtol(double r) { return {{DType::kF32, Tolerance{.atol = 1e-30, .rtol = r}}}; }

VariantSpec variant(Precision p, gemm::Algo algo, Isa isa, std::string help, double tolerance) {
  std::string name(gemm::precision_name(p));
  if (algo == gemm::Algo::kTiled) name += "_tiled";
  return VariantSpec{.name = name,
                     .isa = isa,
                     .params = {{"precision", std::string(gemm::precision_name(p))},
                                {"algo", std::string(gemm::algo_name(algo))}},
                     .help = std::move(help),
                     .run = run_precision(p, algo),
                     .tolerances = rtol(tolerance)};
}

// The shape, tensors, cost and partitioning both GEMM kernels share.
KernelSpec gemm_like_spec(std::string name, std::string help, ReferenceFn reference, Precision cost_precision) {
  KernelSpec k;
  k.name = std::move(name);
  k.help = std::move(help);
  k.shape_params = {{.name = "M", .default_value = 8, .max = 1 << 16, .help = "rows of X (tokens)"},
                    {.name = "N", .default_value = 512, .max = 1 << 20, .help = "rows of W (output channels)"},
                    {.name = "K", .default_value = 1024, .max = 1 << 20, .help = "reduction length"}};
  auto dims = [](const char* a, const char* b) {
    return [a, b](const Shape& s) { return std::vector<int64_t>{s[a], s[b]}; };
  };
  k.inputs = {{.name = "X", .dtype = DType::kF32, .dims = dims("M", "K"), .coords = {"token", "k"}, .tile = {8, 256}},
              {.name = "W", .dtype = DType::kF32, .dims = dims("N", "K"), .coords = {"channel", "k"}, .tile = {64, 256},
               .partition_dim = 0}};
  k.outputs = {{.name = "Y", .dtype = DType::kF32, .dims = dims("M", "N"), .coords = {"token", "channel"},
                .tile = {8, 64}, .partition_dim = 1}};
  k.reference = std::move(reference);
  k.cost.bytes = [cost_precision](const Shape& s) {
    return gemm::gemm_cost(cost_precision, s["M"], s["N"], s["K"]).bytes;
  };
  k.cost.flops = [](const Shape& s) { return gemm::gemm_cost(Precision::kF32, s["M"], s["N"], s["K"]).flops; };
  k.partitioning = Partitioning{.param = "N"};
  k.regions = {{.name = "pack", .function_substring = "PackedWeights::pack"},
               {.name = "dot", .function_substring = "dot"},
               {.name = "tiled", .function_substring = "tiled"}};
  return k;
}

}  // namespace

KernelSpec gemm_spec() {
  KernelSpec k = gemm_like_spec(
      "gemm", "Y[M,N] = X[M,K] W[N,K]^T by precision (docs/gemm.md); N split across shards (column-parallel TP)",
      reference_exact, Precision::kF32);
  k.engine_calls = true;  // engine/projection.h: M > 1 products
  k.engine_note = "in the engine auto keeps its stored-weight kernels (or kernel.gemm.precision's packed gemm); a "
                   "variant runs every M > 1 product at its precision and algorithm (weights widened and packed once "
                   "per batch, beside the stored ones)";
  // Tolerances relative to sum |x w| (docs/gemm.md, error vs K): the operand rounding of each
  // precision (bf16 2^-8 per product, tf32 2^-10, split forms ~2^-16 and below) plus fp32
  // accumulation. The roofline is the f32 form's; docs/gemm.md has each precision's bytes.
  const Isa any = Isa::kScalar;
  k.variants = {
      variant(Precision::kF32, gemm::Algo::kDot, any, "fp32 register-blocked dots", 1e-5),
      variant(Precision::kF32, gemm::Algo::kTiled, Isa::kAvx512, "fp32 packed 6x64 microkernel", 1e-5),
      variant(Precision::kBf16, gemm::Algo::kDot, any, "bf16 operands, fp32 accumulation", 8e-3),
      variant(Precision::kBf16x3, gemm::Algo::kDot, any, "bf16 hi/lo split, 3 products", 1e-4),
      variant(Precision::kBf16x6, gemm::Algo::kDot, any, "bf16 hi/mid/lo split, 6 products (fp32-level)", 1e-5),
      variant(Precision::kTf32, gemm::Algo::kDot, any, "tf32 operands (10-bit mantissa)", 2e-3),
      variant(Precision::kTf32x3, gemm::Algo::kDot, any, "3xTF32 split", 2e-5),
  };
  return k;
}

KernelSpec gemm_w8a8_spec() {
  // W8A8's int8 steps are a fraction of each channel's (token's) absmax, an error that does not
  // scale with |x w| (7-34% of sum |x w| on check's 2^-20..2^20 wide_range inputs, 0.2% on
  // normal ones; docs/gemm.md has the table against the exact product). So this kernel checks
  // the int8 arithmetic itself: the reference quantizes X and W exactly as the kernel does.
  KernelSpec k = gemm_like_spec(
      "gemm_w8a8", "Y = dequant(int8 X per token . int8 W per channel); reference: the same quantization in float64",
      reference_w8a8, Precision::kW8A8);
  k.engine_calls = true;  // engine/projection.h: the projections at kernel.gemm.precision=w8a8
  k.variants = {variant(Precision::kW8A8, gemm::Algo::kDot, Isa::kScalar,
                        "int32 dots (VNNI vpdpbusd / AVX2 maddubs / scalar), fp32 dequantization", 1e-5)};
  // Its operations are int8 multiply-adds, which the fp32 FMA roof does not bound (even the
  // scalar path, auto-vectorised, beats scalar fp32 FMA); only the memory roof applies.
  k.cost.flops = [](const Shape&) { return 0.0; };
  return k;
}

}  // namespace recur::kernels
