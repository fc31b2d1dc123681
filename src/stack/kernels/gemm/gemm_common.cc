// Names, knobs, the Workspace and the dot driver shared by gemm() and gemm_stored().
#include <algorithm>

#include "core/cpu_features.h"
#include "core/knobs.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"

namespace recur::gemm {

RECUR_KNOB(gemm_precision, {.name = "kernel.gemm.precision", .type = KnobType::kEnum,
                            .choices = {"f32", "bf16", "bf16x3", "bf16x6", "tf32", "tf32x3", "w8a8"},
                            .default_value = "f32", .components = {"kernel:gemm"},
                            .acts = KnobActs::kEngine,
                            .help = "arithmetic of gemm() for callers that let the config choose (docs/gemm.md), "
                                    "including the engine's projections and LM head (docs/engine.md)"});
RECUR_KNOB(gemm_algo, {.name = "kernel.gemm.algo", .type = KnobType::kEnum, .choices = {"auto", "dot", "tiled"},
                       .default_value = "auto", .components = {"kernel:gemm"},
                       .acts = KnobActs::kEngine,
                       .help = "dot: register-blocked dot products; tiled: packed 6x64 AVX-512 microkernel (f32/tf32); "
                               "the engine's packed products (kernel.gemm.precision or .variant; a variant's own "
                               "algorithm must agree); without AVX-512 only auto is accepted"});
RECUR_KNOB(gemm_kc, {.name = "kernel.gemm.kc", .type = KnobType::kInt, .min = 16, .max = 8192,
                     .default_value = "256", .components = {"kernel:gemm"},
                     .acts = KnobActs::kEngine,
                     .help = "tiled: K block (B micro-panel kc x 64 floats); the engine's tiled products (zone args "
                             "kc, mc); without AVX-512 only the default is accepted"});
RECUR_KNOB(gemm_mc, {.name = "kernel.gemm.mc", .type = KnobType::kInt, .min = 6, .max = 4096,
                     .default_value = "120", .components = {"kernel:gemm"},
                     .acts = KnobActs::kEngine,
                     .help = "tiled: M block (rounded up to a multiple of 6); the engine's tiled products; without "
                             "AVX-512 only the default is accepted"});

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kF32: return "f32";
    case Precision::kBf16: return "bf16";
    case Precision::kBf16x3: return "bf16x3";
    case Precision::kBf16x6: return "bf16x6";
    case Precision::kTf32: return "tf32";
    case Precision::kTf32x3: return "tf32x3";
    case Precision::kW8A8: return "w8a8";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (Precision p : kAllPrecisions)
    if (precision_name(p) == name) return p;
  return std::nullopt;
}

std::string_view algo_name(Algo a) {
  switch (a) {
    case Algo::kAuto: return "auto";
    case Algo::kDot: return "dot";
    case Algo::kTiled: return "tiled";
  }
  return "?";
}

std::optional<Algo> parse_algo(std::string_view name) {
  for (Algo a : {Algo::kAuto, Algo::kDot, Algo::kTiled})
    if (algo_name(a) == name) return a;
  return std::nullopt;
}

std::string_view weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::kF32: return "f32";
    case WeightFormat::kF16: return "f16";
    case WeightFormat::kBf16: return "bf16";
    case WeightFormat::kQ8_0: return "q8_0";
    case WeightFormat::kQ8_0R16: return "q8_0r16";
    case WeightFormat::kF16R16: return "f16r16";
  }
  return "?";
}

std::optional<WeightFormat> parse_weight_format(std::string_view name) {
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBf16, WeightFormat::kQ8_0,
                         WeightFormat::kQ8_0R16, WeightFormat::kF16R16})
    if (weight_format_name(f) == name) return f;
  return std::nullopt;
}

Result<Options> options_from_config(const Config& config) {
  Options o;
  RECUR_ASSIGN_OR_RETURN(std::string algo, config.get("kernel.gemm.algo"));
  o.algo = *parse_algo(algo);  // the knob's choices are exactly the names
  RECUR_ASSIGN_OR_RETURN(int64_t kc, config.get_int("kernel.gemm.kc"));
  RECUR_ASSIGN_OR_RETURN(int64_t mc, config.get_int("kernel.gemm.mc"));
  o.kc = int(kc);
  o.mc = int(mc);
  return o;
}

Result<Precision> precision_from_config(const Config& config) {
  RECUR_ASSIGN_OR_RETURN(std::string p, config.get("kernel.gemm.precision"));
  return *parse_precision(p);
}

std::byte* Workspace::bytes(int slot, size_t n) {
  AlignedBuffer& b = buffers_[slot];
  if (b.size() < n) b = AlignedBuffer(n);
  return b.data();
}

const DotKernels& dot_kernels(Isa isa) {
  static const DotKernels avx512_mixed = [] {
    DotKernels k = kAvx512Dot;
    if (!cpu_features().avx512bf16) {
      k.bf16 = kAvx2Dot.bf16;
      k.bf16x3 = kAvx2Dot.bf16x3;
      k.bf16x6 = kAvx2Dot.bf16x6;
    }
    if (!cpu_features().avx512vnni) {
      k.i8 = kAvx2Dot.i8;
      k.q8_0q8 = kAvx2Dot.q8_0q8;
    }
    return k;
  }();
  static const IsaDispatch<const DotKernels*> tables{
      .scalar = &kScalarDot, .avx2 = &kAvx2Dot, .avx512 = &avx512_mixed};
  return *tables.for_isa(isa);
}

// GEMV (M <= 8) over more weight bytes than the caches closest to the cores hold, in rows
// shorter than 16 KiB, streams W one row at a time (DotArgs::one_row_tiles): 4 interleaved
// streams of 4-8 KiB each reached 0.55-0.75 of the in-run read peak at 2 threads (bf16, int8
// rows at K = 4096), one sequential stream 0.86-0.99 (docs/performance.md, "GEMM / GEMV").
// 16 KiB rows (f32, K = 4096) did as well or better with 4-row tiles, and cache-resident
// weights keep them for their 4 independent accumulator chains.
constexpr size_t kStreamMinBytes = size_t(4) << 20;
constexpr size_t kStreamMaxRowBytes = size_t(16) << 10;

void run_dot(DotFn fn, const DotArgs& base, int64_t m, int64_t n, int64_t kc, int64_t mc, size_t w_row_bytes,
             ThreadPool* pool) {
  const int64_t k = base.k;
  const bool one_row_tiles =
      m <= 8 && w_row_bytes < kStreamMaxRowBytes && w_row_bytes * size_t(n) > kStreamMinBytes;
  kc = std::max<int64_t>(1, std::min(kc, k));
  mc = std::max<int64_t>(1, mc);
  auto body = [&](int64_t b0, int64_t b1, int) {
    DotArgs a = base;
    a.one_row_tiles = one_row_tiles;
    a.n0 = b0 * 4;
    a.n1 = std::min(n, b1 * 4);
    for (a.k0 = 0; a.k0 < k; a.k0 += kc) {
      a.k1 = std::min(k, a.k0 + kc);
      for (a.m0 = 0; a.m0 < m; a.m0 += mc) {
        a.m1 = std::min(m, a.m0 + mc);
        fn(a);
      }
    }
  };
  const int64_t blocks = (n + 3) / 4;
  if (pool != nullptr) pool->parallel_for(blocks, body);
  else body(0, blocks, 0);
}

}  // namespace recur::gemm
