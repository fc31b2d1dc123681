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

#include "core/convert.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_amx.h"
#include "kernels/gemm/gemm_cost.h"
#include "kernels/gemm/gemm_internal.h"
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

// Weights packed once per (data, n, k, tag) for one packed type: PackedWeights by precision, or
// the AMX tile layouts (gemm_amx.h). Thread-safe; LRU of 8 per type.
template <class Packed, class PackFn>
Result<std::shared_ptr<const Packed>> cached_pack(const float* w, int64_t n, int64_t k, Precision tag,
                                                  const PackFn& pack) {
  struct Entry {
    const float* data;
    int64_t n, k;
    Precision tag;
    uint64_t print;
    std::shared_ptr<const Packed> packed;
  };
  static std::mutex mu;
  static std::list<Entry> cache;
  const uint64_t print = fingerprint(w, n * k);
  {
    std::lock_guard lock(mu);
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if (it->data == w && it->n == n && it->k == k && it->tag == tag && it->print == print) {
        cache.splice(cache.begin(), cache, it);
        return cache.front().packed;
      }
    }
  }
  RECUR_ASSIGN_OR_RETURN(Packed packed, pack());
  auto shared = std::make_shared<const Packed>(std::move(packed));
  std::lock_guard lock(mu);
  cache.push_front(Entry{w, n, k, tag, print, shared});
  if (cache.size() > 8) cache.pop_back();
  return shared;
}

Result<std::shared_ptr<const gemm::PackedWeights>> packed_for(const float* w, int64_t n, int64_t k, Precision p) {
  return cached_pack<gemm::PackedWeights>(
      w, n, k, p, [&] { return gemm::PackedWeights::pack(std::span<const float>(w, size_t(n * k)), n, k, p); });
}

// The AMX variants: weights in tile layout (W8A8: quantized per row as PackedWeights does), on
// the backend amx_backend() picks (the emulator unless kernel.gemm.amx=on, or RECUR_AMX=on, on an AMX CPU).
Status run_amx(Precision p, const float* x, const float* w, int64_t m, int64_t n, int64_t k, float* y) {
  const gemm::TileBackend backend = gemm::amx_backend();
  if (p == Precision::kW8A8) {
    RECUR_ASSIGN_OR_RETURN(auto packed, cached_pack<gemm::AmxI8Weights>(w, n, k, p, [&]() -> Result<gemm::AmxI8Weights> {
                             std::vector<int8_t> q(size_t(n * k));
                             std::vector<float> scales(static_cast<size_t>(n));
                             RECUR_RETURN_IF_ERROR(quantize_int8_rows(std::span(w, q.size()), size_t(n), size_t(k), q,
                                                                      scales));
                             return gemm::AmxI8Weights::repack(q.data(), scales.data(), n, k);
                           }));
    return gemm::gemm_w8a8_amx(*packed, x, m, y, nullptr, backend);
  }
  RECUR_ASSIGN_OR_RETURN(auto packed, cached_pack<gemm::AmxBf16Weights>(w, n, k, p, [&] {
                           return gemm::AmxBf16Weights::pack(std::span(w, size_t(n * k)), n, k, p);
                         }));
  return gemm::gemm_bf16_amx(*packed, x, m, y, nullptr, backend);
}

// X [M,K] and W [N,K] arrive contiguous (W's shard is a run of whole rows); Y's shard is a
// column block of the full [M,N] output, so it is computed densely and copied into place.
KernelFn run_precision(Precision p, gemm::Algo algo, bool amx) {
  return [p, algo, amx](const KernelCall& c) {
    const int64_t m = c.shape["M"], n = c.shape["N"], k = c.shape["K"];
    thread_local gemm::Workspace ws;
    thread_local std::vector<float> dense;
    const TensorView& y = c.outputs[0];
    const bool contiguous = y.stride(0) == n;
    float* out = y.ptr<float>();
    if (!contiguous) {
      dense.resize(size_t(m * n));
      out = dense.data();
    }
    const float* x = c.inputs[0].ptr<float>();
    if (amx) {
      // Failures (non-finite w8a8 inputs) leave Y with check's sentinels, which fail loudly.
      if (!run_amx(p, x, c.inputs[1].ptr<float>(), m, n, k, out)) return;
    } else {
      auto packed = packed_for(c.inputs[1].ptr<float>(), n, k, p);
      if (!packed) return;  // non-finite weights for w8a8: Y keeps check's sentinels, which fail loudly
      if (!gemm::gemm(**packed, x, m, out, gemm::Options{.algo = algo}, nullptr, ws)) return;
    }
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

constexpr const char* kAmxNote =
    "; AMX tiles (gemm_amx.h), on the tile emulator unless kernel.gemm.amx=on on an AMX CPU (not yet validated on AMX "
    "hardware)";

constexpr const char* kAmxProbeOnly =
    "probe-only: the engine does not call the AMX kernels yet (an AMX machine validates and integrates them, "
    "docs/gemm.md AMX)";

VariantSpec variant(Precision p, gemm::Algo algo, Isa isa, std::string help, double tolerance, bool amx = false) {
  std::string name(gemm::precision_name(p));
  if (algo == gemm::Algo::kTiled) name += "_tiled";
  if (amx) help += kAmxNote;
  return VariantSpec{.name = name,
                     .isa = isa,
                     .params = {{"precision", std::string(gemm::precision_name(p))},
                                {"algo", amx ? std::string("amx") : std::string(gemm::algo_name(algo))}},
                     .help = std::move(help),
                     .run = run_precision(p, algo, amx),
                     .tolerances = rtol(tolerance)};
}

// W [n][k] (k % 32 == 0) as Q8_0 rows, llama.cpp's quantizer: d = max |w| / 127 stored as fp16,
// q = round(w / d) (the gemm_q8_0 kernel's weights and its reference's).
std::vector<std::byte> q8_0_rows(const float* w, int64_t n, int64_t k) {
  std::vector<std::byte> out(size_t(n * k / gemm::kQ8Block * gemm::kQ8BlockBytes));
  for (int64_t b = 0; b < n * k / gemm::kQ8Block; ++b) {
    const float* src = w + b * gemm::kQ8Block;
    float amax = 0;
    for (int i = 0; i < gemm::kQ8Block; ++i) amax = std::max(amax, std::fabs(src[i]));
    const float d = amax / 127;
    const uint16_t d16 = fp32_to_fp16(d);
    std::byte* blk = out.data() + b * gemm::kQ8BlockBytes;
    std::memcpy(blk, &d16, 2);
    for (int i = 0; i < gemm::kQ8Block; ++i)
      blk[2 + i] = std::byte(uint8_t(int8_t(d > 0 ? std::clamp(std::nearbyint(src[i] / d), -127.0f, 127.0f) : 0.0f)));
  }
  return out;
}

// Q8_0 x Q8_0 in float64: x quantized as the kernels quantize it, W as q8_0_rows; the sum of
// d_x d_w q_x q_w over the blocks, exact in double.
void reference_q8_0(const Shape& s, std::span<const std::vector<double>> in, std::span<std::vector<double>> out,
                    std::span<std::vector<double>> magnitude) {
  const int64_t m = s["M"], n = s["N"], k = 32 * s["B"], blocks = s["B"];
  std::vector<float> x(in[0].begin(), in[0].end()), w(in[1].begin(), in[1].end());
  std::vector<int8_t> xq(x.size());
  std::vector<float> dx(size_t(m * blocks));
  gemm::quantize_q8_0_rows(x.data(), m, k, xq.data(), dx.data());
  const auto wq = q8_0_rows(w.data(), n, k);
  for (int64_t t = 0; t < m; ++t)
    for (int64_t r = 0; r < n; ++r) {
      double sum = 0, mag = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        const std::byte* blk = wq.data() + (r * blocks + b) * gemm::kQ8BlockBytes;
        uint16_t d16;
        std::memcpy(&d16, blk, 2);
        const double d = double(dx[size_t(t * blocks + b)]) * double(fp16_to_fp32(d16));
        for (int i = 0; i < gemm::kQ8Block; ++i) {
          const double term = d * double(xq[size_t(t * k + b * 32 + i)]) * double(int8_t(blk[2 + i]));
          sum += term, mag += std::fabs(term);
        }
      }
      out[0][size_t(t * n + r)] = sum;
      magnitude[0][size_t(t * n + r)] = mag;
    }
}

// The Q8_0 x Q8_0 variants: gemm_stored's (the engine's: VNNI prefill for M > 8 where the CPU
// has it) and the AMX kernel, over the same Q8_0 weights.
KernelFn run_q8_0(bool amx) {
  return [amx](const KernelCall& c) {
    const int64_t m = c.shape["M"], n = c.shape["N"], k = 32 * c.shape["B"];
    const float* w = c.inputs[1].ptr<float>();
    thread_local std::vector<float> dense;
    const TensorView& y = c.outputs[0];
    const bool contiguous = y.stride(0) == n;
    dense.resize(size_t(m * n));
    float* out = contiguous ? y.ptr<float>() : dense.data();
    auto rows = cached_pack<std::vector<std::byte>>(w, n, k, Precision::kW8A8,
                                                    [&]() -> Result<std::vector<std::byte>> { return q8_0_rows(w, n, k); });
    if (!rows) return;
    if (amx) {
      auto packed = cached_pack<gemm::AmxQ8Weights>(w, n, k, Precision::kW8A8,
                                                    [&] { return gemm::AmxQ8Weights::repack((*rows)->data(), n, k); });
      if (!packed || !gemm::gemm_q8_0_amx(**packed, c.inputs[0].ptr<float>(), m, out, nullptr, gemm::amx_backend()))
        return;
    } else {
      const gemm::WeightView view{.format = gemm::WeightFormat::kQ8_0, .n = n, .k = k, .data = (*rows)->data()};
      if (!gemm::gemm_stored(view, c.inputs[0].ptr<float>(), m, out, nullptr, nullptr,
                             gemm::Activations(gemm::Q8Activations::kQ8_0)))
        return;
    }
    if (!contiguous) {
      for (int64_t r = 0; r < m; ++r) std::memcpy(y.ptr<float>() + r * y.stride(0), out + r * n, size_t(n) * 4);
    }
  };
}

// The shape, tensors, cost and partitioning the GEMM kernels share.
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

namespace {
// A probe-only AMX kernel: gemm_like_spec's shape and tensors, its engine note saying why.
KernelSpec amx_spec(std::string name, std::string help, ReferenceFn reference, Precision cost_precision) {
  KernelSpec k = gemm_like_spec(std::move(name), std::move(help), std::move(reference), cost_precision);
  k.engine_note = kAmxProbeOnly;
  return k;
}
}  // namespace

KernelSpec gemm_amx_spec() {
  KernelSpec k = amx_spec("gemm_amx",
                                "Y[M,N] = X[M,K] W[N,K]^T on AMX bf16 tiles (TDPBF16PS) by precision; reference: the "
                                "exact product (docs/gemm.md, AMX)",
                                reference_exact, Precision::kBf16);
  // The same bounds as gemm's bf16 variants: TDPBF16PS accumulates in fp32 like vdpbf16ps.
  const Isa any = Isa::kScalar;
  k.variants = {
      variant(Precision::kBf16, gemm::Algo::kDot, any, "bf16 operands", 8e-3, true),
      variant(Precision::kBf16x3, gemm::Algo::kDot, any, "bf16 hi/lo split, 3 products per step", 1e-4, true),
      variant(Precision::kBf16x6, gemm::Algo::kDot, any, "bf16 hi/mid/lo split, 6 products per step", 1e-5, true),
  };
  return k;
}

KernelSpec gemm_w8a8_amx_spec() {
  KernelSpec k = amx_spec("gemm_w8a8_amx",
                                "W8A8 on AMX int8 tiles (TDPBSSD, int32 over the whole K); reference: the same "
                                "quantization in float64",
                                reference_w8a8, Precision::kW8A8);
  k.variants = {variant(Precision::kW8A8, gemm::Algo::kDot, Isa::kScalar, "int32 sums in the C tiles", 1e-5, true)};
  k.cost.flops = [](const Shape&) { return 0.0; };  // int8 multiply-adds: only the memory roof applies (gemm_w8a8)
  return k;
}

KernelSpec gemm_q8_0_spec() {
  KernelSpec k = amx_spec("gemm_q8_0",
                                "Q8_0 W x Q8_0-quantized X (llama.cpp's arithmetic, K = 32 B); reference: the same "
                                "quantization in float64",
                                reference_q8_0, Precision::kW8A8);
  k.shape_params[2] = {.name = "B", .default_value = 32, .max = 1 << 15, .help = "Q8_0 blocks per row (K = 32 B)"};
  auto with_k = [](const char* a) { return [a](const Shape& s) { return std::vector<int64_t>{s[a], 32 * s["B"]}; }; };
  k.inputs[0].dims = with_k("M");
  k.inputs[1].dims = with_k("N");
  k.inputs[0].tile = {8, 256}, k.inputs[1].tile = {64, 256};
  k.cost.bytes = [](const Shape& s) {
    const double m = double(s["M"]), n = double(s["N"]), kk = 32.0 * double(s["B"]);
    return n * kk / 32 * gemm::kQ8BlockBytes + 4 * m * kk + 4 * m * n;  // Q8_0 W once, fp32 X and Y
  };
  k.cost.flops = [](const Shape&) { return 0.0; };  // int8 multiply-adds, as gemm_w8a8
  // fp32 accumulation of exact block dots: (K + 8) 2^-24 of sum |terms| at worst.
  k.variants = {
      VariantSpec{.name = "stored",
                  .isa = Isa::kScalar,
                  .params = {{"path", "gemm_stored"}},
                  .help = "gemm_stored's Q8_0 x Q8_0 (the engine's kernels: VNNI prefill for M > 8 where the CPU has "
                          "it)",
                  .run = run_q8_0(false),
                  .tolerances = rtol(1e-5)},
      VariantSpec{.name = "amx",
                  .isa = Isa::kScalar,
                  .params = {{"path", "amx"}},
                  .help = std::string("TDPBSSD per 32-block, the VNNI prefill's fp32 order") + kAmxNote,
                  .run = run_q8_0(true),
                  .tolerances = rtol(1e-5)},
  };
  return k;
}

}  // namespace recur::kernels
