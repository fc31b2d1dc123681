// gemm_stored(): fp32 activations against F32 / F16 / BF16 / Q8_0 weights read in place.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <span>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/knobs.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_q8_ggml.h"
#include "kernels/gemm/gemm_round.h"
#include "kernels/gemm/gemm_small_m.h"

namespace recur::gemm {

size_t row_bytes(WeightFormat f, int64_t k) {
  switch (f) {
    case WeightFormat::kF32: return size_t(k) * 4;
    case WeightFormat::kF16:
    case WeightFormat::kF16R16:
    case WeightFormat::kBf16: return size_t(k) * 2;
    case WeightFormat::kQ8_0:
    case WeightFormat::kQ8_0R16: return size_t(k / kQ8Block) * kQ8BlockBytes;
  }
  return 0;
}

RECUR_KNOB(gemm_q8_act, {.name = "kernel.gemm.q8_0_activations", .type = KnobType::kEnum,
                         .choices = {"f32", "q8_0", "q8_0_ggml"},
                         .default_value = "q8_0", .components = {"kernel:gemm"},
                         .acts = KnobActs::kEngineLoad | KnobActs::kEngine,
                         .help = "Q8_0 weights: fp32 activations, or activations quantized to Q8_0 (int8 block dots); "
                                 "q8_0_ggml sums each output in ggml's order too (llama.cpp's bits; Q8_0 kept in rows)"});

std::string_view q8_activations_name(Q8Activations a) {
  switch (a) {
    case Q8Activations::kF32: return "f32";
    case Q8Activations::kQ8_0: return "q8_0";
    case Q8Activations::kQ8_0Ggml: return "q8_0_ggml";
  }
  return "?";
}

Result<Q8Activations> q8_activations_from_config(const Config& config) {
  RECUR_ASSIGN_OR_RETURN(std::string v, config.get("kernel.gemm.q8_0_activations"));
  for (Q8Activations a : {Q8Activations::kF32, Q8Activations::kQ8_0, Q8Activations::kQ8_0Ggml})
    if (q8_activations_name(a) == v) return a;
  return invalid_argument("kernel.gemm.q8_0_activations={}: expected f32, q8_0 or q8_0_ggml", v);
}

RECUR_KNOB(gemm_f16_act, {.name = "kernel.gemm.f16_activations", .type = KnobType::kEnum, .choices = {"f32", "f16"},
                          .default_value = "f16", .components = {"kernel:gemm"},
                          .acts = KnobActs::kEngine,
                          .help = "F16 weights: fp32 activations, or activations rounded to fp16 (read at half the bytes)"});

std::string_view f16_activations_name(F16Activations a) { return a == F16Activations::kF32 ? "f32" : "f16"; }

Result<F16Activations> f16_activations_from_config(const Config& config) {
  RECUR_ASSIGN_OR_RETURN(std::string v, config.get("kernel.gemm.f16_activations"));
  return v == "f32" ? F16Activations::kF32 : F16Activations::kF16;
}

std::string_view group_streams_name(GroupStreams s) {
  switch (s) {
    case GroupStreams::kAuto: return "auto";
    case GroupStreams::kOne: return "1";
    case GroupStreams::kTwo: return "2";
    case GroupStreams::kFour: return "4";
  }
  return "?";
}

int group_streams(GroupStreams s, WeightFormat format) {
  if (s != GroupStreams::kAuto) return int(s);
  // Measured (docs/gemm.md, "Streams"): on the Xeon where the layout was built, two F16 streams
  // read at 1.07x one; on Zen 4 one F16 stream beats two, while Q8_0 (more work per byte) wants
  // more loads in flight.
  static const bool amd = cpu_features().vendor == "AuthenticAMD";
  if (format == WeightFormat::kF16R16) return amd ? 1 : 2;
  return 2;
}

RECUR_KNOB(gemv_streams, {.name = "kernel.gemv.streams", .type = KnobType::kEnum, .choices = {"auto", "1", "2", "4"},
                          .default_value = "auto", .components = {"kernel:gemm"},
                          .acts = KnobActs::kEngine,
                          .help = "one-token GEMV of regrouped F16 / Q8_0 weights (engine.weight_layout=r16) on "
                                  "AVX-512: 16-row groups read at once, each its own stream (zone arg streams); "
                                  "auto is the count measured best for the format on this CPU vendor (docs/gemm.md)"});

Result<Activations> activations_from_config(const Config& config) {
  RECUR_ASSIGN_OR_RETURN(Q8Activations q8, q8_activations_from_config(config));
  RECUR_ASSIGN_OR_RETURN(F16Activations f16, f16_activations_from_config(config));
  RECUR_ASSIGN_OR_RETURN(std::string streams, config.get("kernel.gemv.streams"));
  GroupStreams s = GroupStreams::kAuto;
  for (GroupStreams c : {GroupStreams::kOne, GroupStreams::kTwo, GroupStreams::kFour})
    if (group_streams_name(c) == streams) s = c;
  return Activations(q8, f16, s);
}

int8_t q8_0_round(float v) {
  // cvtps_epi32 then two saturating packs: NaN and |v| >= 2^31 give the integer indefinite
  // INT32_MIN, so -128; otherwise nearest even, saturated to int8.
  if (!(std::fabs(v) < 2147483648.0f)) return -128;
  return int8_t(std::clamp(std::nearbyint(v), -128.0f, 127.0f));
}

float q8_0_scale(float amax) { return fp16_to_fp32(fp32_to_fp16(amax / 127.0f)); }

void quantize_q8_0_rows(const float* x, int64_t m, int64_t k, int8_t* q, float* d) {
  for (int64_t b = 0; b < m * k / kQ8Block; ++b) {
    const float* xb = x + b * kQ8Block;
    float amax = 0;
    for (int i = 0; i < kQ8Block; ++i) amax = std::max(amax, std::fabs(xb[i]));
    d[b] = q8_0_scale(amax);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int i = 0; i < kQ8Block; ++i) q[b * kQ8Block + i] = q8_0_round(xb[i] * id);
  }
}

namespace {

// The one-row GEMV kernels for (format, activations) on this CPU: AVX-512 (Q8_0 x Q8_0 needs
// VNNI), else AVX2; null on scalar and for Q8_0 with fp32 activations (the dot tiles run).
const GemvKernels* stored_gemv_kernels(WeightFormat f, Q8Activations q8) {
  const Isa isa = active_isa();
  if (isa < Isa::kAvx2 || (f == WeightFormat::kQ8_0 && q8 != Q8Activations::kQ8_0)) return nullptr;
  if (isa >= Isa::kAvx512 && (f != WeightFormat::kQ8_0 || cpu_features().avx512vnni)) return &kAvx512Gemv;
  return &kAvx2Gemv;
}

GemvFn gemv_kernel_for(const GemvKernels& g, WeightFormat f) {
  switch (f) {
    case WeightFormat::kF32: return g.f32;
    case WeightFormat::kF16: return g.f16w;
    case WeightFormat::kBf16: return g.bf16w;
    case WeightFormat::kQ8_0: return g.q8_0q8;
    case WeightFormat::kQ8_0R16:
    case WeightFormat::kF16R16: break;  // gemm_stored sends them to their own kernels first
  }
  return nullptr;
}

// x [k] quantized to Q8_0 in the form gemv_q8q8_rows reads (GemvArgs).
void prepare_q8_gemv_x(const float* x, int64_t k, Workspace& s, GemvArgs& a) {
  const int64_t blocks = k / kQ8Block, pairs = (blocks + 1) / 2;
  GemvQ8X q{.abs = reinterpret_cast<int8_t*>(s.bytes(0, size_t(pairs * 64))),
            .neg = reinterpret_cast<uint64_t*>(s.bytes(2, size_t(pairs) * sizeof(uint64_t))),
            .scale16 = reinterpret_cast<float*>(s.bytes(3, size_t(pairs * 16) * sizeof(float))),
            .d = reinterpret_cast<float*>(s.bytes(1, size_t(blocks) * sizeof(float)))};
  kAvx512Gemv.q8_prepare(x, k, q);
  a.x_abs = q.abs;
  a.x_neg = q.neg;
  a.x_scale16 = q.scale16;
}

// x [k] quantized (quantize_q8_0_rows' bits) as the AVX2 GEMV reads it (x_q, x_d).
void prepare_q8_gemv8_x(const float* x, int64_t k, Workspace& s, GemvArgs& a) {
  auto* q = reinterpret_cast<int8_t*>(s.bytes(0, size_t(k)));
  auto* d = reinterpret_cast<float*>(s.bytes(1, size_t(k / kQ8Block) * sizeof(float)));
  kAvx2Gemv.q8_quantize(x, k, q, d);
  a.x_q = q;
  a.x_d = d;
}

// fn(i0, i1) over [0, items) in about 8 chunks per pool thread, claimed from a counter rather
// than split statically. Every kernel run this way computes each output on one thread from
// start to end, so the bits do not depend on who takes a chunk; a thread that wakes late or
// loses its vCPU to another process leaves its chunks to the others instead of holding up the
// call (ThreadPool::parallel_claim waits only for threads that took a chunk; decode runs ~113
// GEMVs a token, prefill ~7 GEMMs a layer).
template <class Fn>
void run_claimed_chunks(ThreadPool* pool, int64_t items, const Fn& fn) {
  if (pool == nullptr || pool->size() == 1) {
    fn(int64_t{0}, items);
    return;
  }
  const int64_t per_chunk = std::max<int64_t>(1, items / (8 * int64_t(pool->size())));
  const int64_t chunks = (items + per_chunk - 1) / per_chunk;
  pool->parallel_claim(chunks, [&](int64_t c, int) { fn(c * per_chunk, std::min(items, (c + 1) * per_chunk)); });
}

// Rows in chunks of whole 16-row blocks: a block is one cache line of y, so no two threads
// write one line.
void run_gemv(GemvFn fn, const GemvArgs& a, int64_t n, ThreadPool* pool) {
  constexpr int64_t kRows = 16;
  run_claimed_chunks(pool, (n + kRows - 1) / kRows,
                     [&](int64_t b0, int64_t b1) { fn(a, b0 * kRows, std::min(n, b1 * kRows)); });
}

// 2 <= m <= kSmallMMax (batched decode): each W row read once for all m x rows, with the GEMV's
// arithmetic per x row (gemm_small_m.h), so y row i has the bits of gemm_stored(x row i, m = 1).
// Rows in chunks of 16 as run_gemv.
void run_small_m(const GemvKernels& gk, const WeightView& w, const float* x, int64_t m, float* y, Workspace& s,
                 ThreadPool* pool) {
  const SmallMKernels& sk = &gk == &kAvx512Gemv ? kAvx512SmallM : kAvx2SmallM;
  SmallMArgs a{.m = m};
  for (int64_t i = 0; i < m; ++i)
    a.row[i] = {.k = w.k, .w = w.data, .w_row_bytes = row_bytes(w.format, w.k), .x = x + i * w.k, .y = y + i * w.n};
  if (w.format == WeightFormat::kQ8_0) {
    sk.q8_prepare(a, s);
  } else if (reinterpret_cast<uintptr_t>(x) % 64 != 0 || w.k % 16 != 0) {
    // The kernels read x in 64-byte loads, each across two cache lines when x is not 64-byte
    // aligned (std::vector's malloc gives 16): F16 M = 4 measured 1.4x slower. Copied rows hold
    // the same values, so the same bits.
    const int64_t stride = (w.k + 15) / 16 * 16;
    auto* xa = reinterpret_cast<float*>(s.bytes(0, size_t(m * stride) * sizeof(float)));
    for (int64_t i = 0; i < m; ++i) a.row[i].x = std::copy_n(x + i * w.k, w.k, xa + i * stride) - w.k;
  }
  const SmallMFn fn = w.format == WeightFormat::kF32 ? sk.f32
                      : w.format == WeightFormat::kF16 ? sk.f16w
                      : w.format == WeightFormat::kBf16 ? sk.bf16w
                                                         : sk.q8_0q8;
  constexpr int64_t kRows = 16;
  run_claimed_chunks(pool, (w.n + kRows - 1) / kRows,
                     [&](int64_t b0, int64_t b1) { fn(a, b0 * kRows, std::min(w.n, b1 * kRows)); });
}

// y = x W^T for a kQ8_0R16 matrix (gemm.h): x quantized per token, in parallel for m > 1,
// then the 16-row groups in claimed chunks.
Status run_q8r16(const WeightView& w, const float* x, int64_t m, float* y, GroupStreams streams, Workspace& s,
                 ThreadPool* pool) {
  if (w.n % kQ8R16Rows != 0)
    return invalid_argument("gemm_stored: q8_0r16 weights need n % 16 == 0, got n = {}", w.n);
  const Q8R16Kernels& kern = q8r16_kernels(active_isa());
  const int64_t blocks = w.k / kQ8Block;
  auto* xq = reinterpret_cast<int8_t*>(s.bytes(0, size_t(m * w.k)));
  auto* dx = reinterpret_cast<float*>(s.bytes(1, size_t(m * blocks) * sizeof(float)));
  auto* corr = reinterpret_cast<int32_t*>(s.bytes(2, size_t(m * blocks) * sizeof(int32_t)));
  const Q8R16Args a{.k = w.k, .m = m, .w = static_cast<const uint8_t*>(w.data), .xq = xq, .dx = dx, .corr = corr,
                    .y = y, .ldy = w.n, .streams = group_streams(streams, WeightFormat::kQ8_0R16)};
  auto prepare = [&](int64_t t0, int64_t t1) { kern.prepare(x, w.k, t0, t1, xq, dx, corr); };
  if (m == 1)
    prepare(0, 1);
  else
    run_claimed_chunks(pool, m, prepare);
  run_claimed_chunks(pool, w.n / kQ8R16Rows, [&](int64_t g0, int64_t g1) { kern.groups(a, g0, g1); });
  return ok_status();
}

// pack over [0, n1), then rows over [0, n2), each in claimed chunks.
template <class Pack, class Rows>
void run_pack_then_rows(ThreadPool* pool, int64_t n1, const Pack& pack, int64_t n2, const Rows& rows) {
  run_claimed_chunks(pool, n1, pack);
  run_claimed_chunks(pool, n2, rows);
}

// The prefill GEMM (gemm_internal.h, PrefillArgs) of one ISA: X^T packed in parallel over K,
// then W rows in blocks of 6 in claimed chunks.
void run_prefill(const PrefillKernels& kern, const WeightView& w, const float* x, int64_t m, float* y, bool q8,
                 Workspace& s, ThreadPool* pool) {
  const int64_t panels = (m + kern.tokens - 1) / kern.tokens;
  auto* xt = reinterpret_cast<float*>(s.bytes(0, size_t(panels * w.k * kern.tokens) * sizeof(float)));
  const int64_t kchunks = (w.k + 63) / 64;
  auto pack = [&](int64_t c0, int64_t c1) { kern.pack_x(x, m, w.k, q8, xt, c0 * 64, std::min(w.k, c1 * 64)); };
  const PrefillArgs a{.format = w.format, .w = w.data, .w_row_bytes = row_bytes(w.format, w.k), .n = w.n, .k = w.k,
                      .m = m, .xt = xt, .y = y};
  auto rows = [&](int64_t b0, int64_t b1) { kern.rows(a, b0 * kPrefillRows, std::min(w.n, b1 * kPrefillRows)); };
  run_pack_then_rows(pool, kchunks, pack, (w.n + kPrefillRows - 1) / kPrefillRows, rows);
}

// The Q8_0 x Q8_0 prefill GEMM (gemm_internal.h, PrefillQ8Args): x quantized and packed in
// parallel over tokens, then W rows in blocks of 6 in claimed chunks.
void run_prefill_q8(const WeightView& w, const float* x, int64_t m, float* y, Workspace& s, ThreadPool* pool) {
  const int64_t panels = (m + kPrefillQ8Tokens - 1) / kPrefillQ8Tokens, tokens = panels * kPrefillQ8Tokens;
  auto* xq = reinterpret_cast<uint8_t*>(s.bytes(0, size_t(tokens * w.k)));
  auto* dx = reinterpret_cast<float*>(s.bytes(1, size_t(tokens * (w.k / kQ8Block)) * sizeof(float)));
  auto pack = [&](int64_t t0, int64_t t1) { kAvx512PrefillQ8.pack_x(x, m, w.k, xq, dx, t0, t1); };
  const PrefillQ8Args a{.w = w.data, .w_row_bytes = row_bytes(w.format, w.k), .n = w.n, .k = w.k, .m = m, .xq = xq,
                        .dx = dx, .y = y};
  auto rows = [&](int64_t b0, int64_t b1) { kAvx512PrefillQ8.rows(a, b0 * 6, std::min(w.n, b1 * 6)); };
  run_pack_then_rows(pool, tokens, pack, (w.n + 5) / 6, rows);
}

// x [count] rounded to fp16 (core's conversion: nearest even, overflow -> inf), returned, and
// widened again into *back (exact), in workspace slots the F16 paths leave free (the small-M
// copy and the prefill pack use slot 0).
const uint16_t* round_x_to_f16(const float* x, int64_t count, Workspace& s, float** back) {
  auto* half = reinterpret_cast<uint16_t*>(s.bytes(2, size_t(count) * sizeof(uint16_t)));
  *back = reinterpret_cast<float*>(s.bytes(3, size_t(count) * sizeof(float)));
  // The spans have equal sizes, the one error these conversions report.
  (void)fp32_to_fp16(std::span(x, size_t(count)), std::span(half, size_t(count)));
  (void)fp16_to_fp32(std::span<const uint16_t>(half, size_t(count)), std::span(*back, size_t(count)));
  return half;
}

// y = x W^T for a kF16R16 matrix (gemm.h): x rounded to fp16 first under F16 activations, then
// the 16-row groups in claimed chunks.
Status run_f16r16(const WeightView& w, const float* x, int64_t m, float* y, Activations act, Workspace& s,
                  ThreadPool* pool) {
  if (w.n % kQ8R16Rows != 0)
    return invalid_argument("gemm_stored: f16r16 weights need n % 16 == 0, got n = {}", w.n);
  float* rounded = nullptr;
  if (act.f16 == F16Activations::kF16) round_x_to_f16(x, m * w.k, s, &rounded);
  const F16R16Args a{.k = w.k, .m = m, .w = static_cast<const uint16_t*>(w.data), .x = rounded ? rounded : x,
                     .y = y, .ldy = w.n, .streams = group_streams(act.streams, WeightFormat::kF16R16)};
  const F16R16Fn fn = f16r16_kernel(active_isa());
  run_claimed_chunks(pool, w.n / kQ8R16Rows, [&](int64_t g0, int64_t g1) { fn(a, g0, g1); });
  return ok_status();
}

// y = x W^T in ggml's order (Q8Activations::kQ8_0Ggml): x quantized per row, W rows split over
// the pool in blocks of 16 (each output is computed whole by one thread: the same bits on any pool).
void run_q8_ggml(const WeightView& w, const float* x, int64_t m, float* y, Workspace& s, ThreadPool* pool) {
  auto* q = reinterpret_cast<int8_t*>(s.bytes(0, size_t(m * w.k)));
  auto* d = reinterpret_cast<float*>(s.bytes(1, size_t(m * w.k / kQ8Block) * sizeof(float)));
  quantize_q8_0_rows(x, m, w.k, q, d);
  const Q8GgmlArgs a{.m = m, .k = w.k, .xq = q, .xd = d, .w = static_cast<const std::byte*>(w.data),
                     .w_row_bytes = row_bytes(w.format, w.k), .y = y, .ldy = w.n};
  const Q8GgmlFn fn = kQ8Ggml.get();
  const int64_t blocks = (w.n + 15) / 16;
  auto body = [&](int64_t b0, int64_t b1, int) { fn(a, b0 * 16, std::min(w.n, b1 * 16)); };
  if (pool != nullptr) pool->parallel_for(blocks, body);
  else body(0, blocks, 0);
}

}  // namespace

Status gemm_stored(const WeightView& w, const float* x, int64_t m, float* y, ThreadPool* pool, Workspace* ws,
                   Activations act) {
  const Q8Activations q8 = act.q8;
  if (w.n < 1 || w.k < 1 || w.data == nullptr)
    return invalid_argument("gemm_stored: weights {} [{}, {}]: expected n, k >= 1 and data", weight_format_name(w.format),
                            w.n, w.k);
  if ((w.format == WeightFormat::kQ8_0 || w.format == WeightFormat::kQ8_0R16) && w.k % kQ8Block != 0)
    return invalid_argument("gemm_stored: {} weights need k % 32 == 0, got k = {}", weight_format_name(w.format), w.k);
  if (m < 1 || x == nullptr || y == nullptr)
    return invalid_argument("gemm_stored: m={}: expected m >= 1 and x, y set", m);
  thread_local Workspace local;
  Workspace& s = ws != nullptr ? *ws : local;
  if (q8 == Q8Activations::kQ8_0Ggml && w.format == WeightFormat::kQ8_0R16)
    return invalid_argument("gemm_stored: q8_0_ggml activations need Q8_0 rows, not 16-row groups (a load under "
                            "kernel.gemm.q8_0_activations=q8_0_ggml keeps them)");
  if (q8 == Q8Activations::kQ8_0Ggml && w.format == WeightFormat::kQ8_0) {
    run_q8_ggml(w, x, m, y, s, pool);
    return ok_status();
  }
  if (w.format == WeightFormat::kQ8_0R16) return run_q8r16(w, x, m, y, act.streams, s, pool);
  if (w.format == WeightFormat::kF16R16) return run_f16r16(w, x, m, y, act, s, pool);
  const GemvKernels* gk = m <= kSmallMMax ? stored_gemv_kernels(w.format, q8) : nullptr;
  if (w.format == WeightFormat::kF16 && act.f16 == F16Activations::kF16) {
    // x rounded to fp16 and widened back into an fp32 copy (exact), which every path multiplies
    // as it would fp32 x; the one-row AVX-512 GEMV may read the fp16 values instead, with the
    // same bits.
    float* rounded = nullptr;
    const uint16_t* half = round_x_to_f16(x, m * w.k, s, &rounded);
    if (m == 1 && gk != nullptr && gk->f16w_f16x != nullptr) {
      GemvArgs g{.k = w.k, .w = w.data, .w_row_bytes = row_bytes(w.format, w.k), .x = rounded, .x_f16 = half, .y = y};
      run_gemv(gk->f16w_f16x, g, w.n, pool);
      return ok_status();
    }
    x = rounded;
  }
  if (gk != nullptr) {
    if (m > 1) {
      run_small_m(*gk, w, x, m, y, s, pool);
      return ok_status();
    }
    GemvArgs g{.k = w.k, .w = w.data, .w_row_bytes = row_bytes(w.format, w.k), .x = x, .y = y};
    if (w.format == WeightFormat::kQ8_0 && gk == &kAvx512Gemv) prepare_q8_gemv_x(x, w.k, s, g);
    if (w.format == WeightFormat::kQ8_0 && gk == &kAvx2Gemv) prepare_q8_gemv8_x(x, w.k, s, g);
    run_gemv(gemv_kernel_for(*gk, w.format), g, w.n, pool);
    return ok_status();
  }
  if (m > 8 && active_isa() >= Isa::kAvx512 && w.format == WeightFormat::kQ8_0 && q8 == Q8Activations::kQ8_0 &&
      cpu_features().avx512vnni) {
    run_prefill_q8(w, x, m, y, s, pool);
    return ok_status();
  }
  if (m > 8 && active_isa() >= Isa::kAvx2) {
    run_prefill(active_isa() >= Isa::kAvx512 ? kAvx512Prefill : kAvx2Prefill, w, x, m, y,
                w.format == WeightFormat::kQ8_0 && q8 == Q8Activations::kQ8_0, s, pool);
    return ok_status();
  }
  const DotKernels& kern = dot_kernels(active_isa());
  DotFn fn = nullptr;
  int64_t kc = 1024;
  switch (w.format) {
    case WeightFormat::kF32: fn = kern.f32; break;
    case WeightFormat::kF16: fn = kern.f16w; kc = 2048; break;
    case WeightFormat::kBf16: fn = kern.bf16w; kc = 2048; break;
    case WeightFormat::kQ8_0: fn = kern.q8_0w; kc = 2048; break;
    case WeightFormat::kQ8_0R16:
    case WeightFormat::kF16R16: break;  // gemm_stored sends them to their own kernels first
  }
  if (m <= 8) kc = w.k;
  DotArgs a{.k = w.k, .x = x, .w = w.data, .y = y, .ldy = w.n};
  if (w.format == WeightFormat::kQ8_0 && q8 == Q8Activations::kQ8_0) {
    auto* q = reinterpret_cast<int8_t*>(s.bytes(0, size_t(m * w.k)));
    auto* d = reinterpret_cast<float*>(s.bytes(1, size_t(m * w.k / kQ8Block) * sizeof(float)));
    quantize_q8_0_rows(x, m, w.k, q, d);
    a.x = q;
    a.x_scale = d;
    fn = kern.q8_0q8;
  }
  run_dot(fn, a, m, w.n, kc, 64, row_bytes(w.format, w.k), pool);
  return ok_status();
}

Status gemm_stored_bf16(const WeightView& w, Precision precision, const float* x, int64_t m, float* y,
                        ThreadPool* pool, Workspace* ws) {
  if (precision == Precision::kF32) return gemm_stored(w, x, m, y, pool, ws);
  const int parts = precision == Precision::kBf16 ? 1 : precision == Precision::kBf16x3 ? 2 : 3;
  if (w.format != WeightFormat::kBf16 || (parts == 3 && precision != Precision::kBf16x6))
    return invalid_argument("gemm_stored_bf16: {} weights at precision {}: expected bf16 weights and f32, bf16, "
                            "bf16x3 or bf16x6",
                            weight_format_name(w.format), precision_name(precision));
  if (w.n < 1 || w.k < 1 || w.data == nullptr || m < 1 || x == nullptr || y == nullptr)
    return invalid_argument("gemm_stored_bf16: [{}, {}] x m={}: expected n, k, m >= 1 and data", w.n, w.k, m);
  thread_local Workspace local;
  Workspace& s = ws != nullptr ? *ws : local;
  // Row p * m + i of xp is part p of x row i; row p * m + i of yp its sums.
  auto* xp = reinterpret_cast<uint16_t*>(s.bytes(0, size_t(parts * m * w.k) * sizeof(uint16_t)));
  const int64_t mk = m * w.k;
  for (int64_t i = 0; i < mk; ++i) {
    float r = x[i];
    for (int p = 0; p < parts; ++p) {
      xp[p * mk + i] = bf16_round(r);
      r -= bf16_value(xp[p * mk + i]);  // exact: the residual of a bf16 rounding fits fp32
    }
  }
  const int64_t rows = parts * m;
  float* yp = parts == 1 ? y : reinterpret_cast<float*>(s.bytes(1, size_t(rows * w.n) * sizeof(float)));
  DotArgs a{.k = w.k, .x = xp, .w = w.data, .y = yp, .ldy = w.n};
  run_dot(dot_kernels(active_isa()).bf16, a, rows, w.n, rows <= 8 ? w.k : 2048, 64,
          row_bytes(w.format, w.k), pool);
  if (parts == 1) return ok_status();
  const int64_t mn = m * w.n;
  for (int64_t i = 0; i < mn; ++i)
    y[i] = parts == 2 ? yp[i] + yp[mn + i] : yp[i] + (yp[mn + i] + yp[2 * mn + i]);
  return ok_status();
}

}  // namespace recur::gemm
