// GEMM on AMX tiles (docs/gemm.md, "AMX"): Q8_0 x Q8_0 (the VNNI prefill's bits), W8A8 (the
// int8 dot path's bits) and the bf16 family (bf16, bf16x3, bf16x6 split precision) over weights
// repacked once into the tiles' layout. The kernels run either on the real instructions or on a
// software emulator of them (gemm_amx_tiles.h); the hardware path is opt-in and self-checked
// until a session on an AMX machine has validated it.
//
// Thread-safety: the weights are immutable after repack and may be shared; amx_backend() is
// thread-safe (detection, permission and self-check happen once per process).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/aligned_buffer.h"
#include "core/knobs.h"
#include "core/status.h"
#include "kernels/gemm/gemm.h"

namespace recur {
class ThreadPool;
}  // namespace recur

namespace recur::gemm {

enum class TileBackend : uint8_t {
  kEmulator,  // gemm_amx_tiles.h's EmuTiles: any CPU, slow (meant for tests and check)
  kHardware,  // AMX-TILE / AMX-INT8 / AMX-BF16 instructions
};
std::string_view tile_backend_name(TileBackend b);  // "emulator", "hardware"

// The knob kernel.gemm.amx (docs/gemm.md, "AMX"): off (no tiles in the engine; the registry's
// AMX probe variants still run, on the emulator), on (the hardware; refused where the CPU, the OS,
// Linux's permission or the first-use self-check says no: never a silent fall-back), emulate (the
// tiles' arithmetic on the emulator, any CPU: slow, for tests). The engine reads it at load
// (amx_tiles_for); recur's main also applies it process-wide for the probes
// (apply_process_amx_mode), where the environment's RECUR_AMX=off|on|emulate, when set, wins.
enum class AmxMode : uint8_t { kOff, kOn, kEmulate };
std::string_view amx_mode_name(AmxMode mode);  // "off", "on", "emulate"
Result<AmxMode> amx_mode_from_config(const Config& config);
void set_amx_mode(AmxMode mode);
AmxMode amx_mode();
// RECUR_AMX's mode when set (off|on|emulate), else nullopt; anything else is an error naming it.
Result<std::optional<AmxMode>> amx_mode_from_env();
// recur's main: set_amx_mode from RECUR_AMX if set, else kernel.gemm.amx; on is refused (the
// reason named) where the hardware would not run.
Status apply_process_amx_mode(const Config& config);

// What this CPU and OS allow: AMX-TILE, AMX-INT8, AMX-BF16 (CPUID leaf 7, EDX bits 24, 25, 22),
// the OS enabling tile state (XCR0 bits 17, 18), and Linux granting this process tile data
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); requested once, at the first call.
struct AmxSupport {
  bool cpu = false;         // the three CPUID bits
  bool os = false;          // XCR0 tile config + tile data
  bool permission = false;  // the arch_prctl request succeeded
  std::string reason;       // why not, when any is false
  bool usable() const { return cpu && os && permission; }
};
const AmxSupport& amx_support();

// The backend the registry's AMX probe variants run on here: kHardware only when amx_mode() is
// on, the CPU and OS support AMX, the permission was granted and the first call's self-check
// (one small GEMM per kernel on both backends: int8 bit for bit, bf16 within the fp32
// accumulation bound) passed; otherwise the emulator, and amx_backend_reason() says why (a
// failed self-check also logs a warning). recur's main refuses kernel.gemm.amx=on where this would
// not be the hardware (amx_tiles_for).
TileBackend amx_backend();
std::string amx_backend_reason();
// The self-check itself (hardware against emulator); also the hardware tests' core.
Status amx_self_check();
// Where kernel.gemm.amx=mode runs the tiles: nullopt for off, the emulator for emulate, the
// hardware for on, or an error naming the knob and why the hardware is not usable here.
Result<std::optional<TileBackend>> amx_tiles_for(AmxMode mode);

// int8 B tiles in groups of 16 rows (n padded with zero rows) plus fp32 scales: the two int8 forms.
class AmxInt8Tiles {
 public:
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  size_t bytes() const { return quants_.size() + scales_.size(); }
  const int8_t* quants() const { return reinterpret_cast<const int8_t*>(quants_.data()); }
  const float* scales() const { return reinterpret_cast<const float*>(scales_.data()); }

 protected:
  int64_t n_ = 0, k_ = 0;
  AlignedBuffer quants_, scales_;
};

// ---- Q8_0 weights in tile layout ----
// Per group and 32-block one 512-byte B tile [8 k-quads][16 rows][4 signed q], then the scales
// as fp32 [group][block][16]: 36 bytes per 32 weights against Q8_0's 34 (1.06x).
class AmxQ8Weights : public AmxInt8Tiles {
 public:
  // q8_0_rows: [n][k / 32] Q8_0 blocks (34 bytes: fp16 d, 32 int8 q).
  static Result<AmxQ8Weights> repack(const void* q8_0_rows, int64_t n, int64_t k);
};
// Whose fp32 order the Q8_0 tiles' epilogue follows (Q8Args::chain_blocks): the VNNI row-layout
// prefill's (gemm_stored on kQ8_0 at m > 8 on AVX-512 VNNI: one fma chain per K block of 1024,
// the blocks' sums added in order) or the 16-row groups' (kQ8_0R16, every ISA and m: one chain
// over the whole K). The integer block dots are exact either way.
enum class AmxQ8Order : uint8_t { kRowPrefill, kR16 };
// y [m][n] = x [m][k] against w with x quantized to Q8_0 per token (quantize_q8_0_rows' bits, by
// the vectorized quantizer of the 16-row groups, in parallel over tokens): the bits of
// gemm_stored on the same weights in `order`'s layout (for any m; the engine uses it at m >= 16).
Status gemm_q8_0_amx(const AmxQ8Weights& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                     TileBackend backend, AmxQ8Order order = AmxQ8Order::kRowPrefill);

// ---- W8A8 weights in tile layout ----
// k padded to a multiple of 64; per group and 64-k step one 1024-byte B tile [16 k-quads][16
// rows][4 q]; scales fp32 per row.
class AmxI8Weights : public AmxInt8Tiles {
 public:
  // q [n][k] int8 (|q| <= 127), scales [n] (gemm.h's W8A8View without comp).
  static Result<AmxI8Weights> repack(const int8_t* q, const float* scales, int64_t n, int64_t k);
};
// x quantized per token (quantize_int8_rows), int32 sums over the whole K in the tiles: the bits
// of gemm_w8a8_stored. Fails on k > 65536 or non-finite x.
Status gemm_w8a8_amx(const AmxI8Weights& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                     TileBackend backend);

// ---- bf16 parts in tile layout ----
// Groups of 16 rows, k padded to a multiple of 32; per weight part, group and 32-k step one
// 1024-byte B tile [16 k-pairs][16 rows][2 bf16]: 2 bytes per weight and part.
class AmxBf16Weights {
 public:
  // fp32 weights [n][k] split for the precision (kBf16: 1 part, kBf16x3: hi + lo, kBf16x6: hi +
  // mid + lo, as PackedWeights splits them).
  static Result<AmxBf16Weights> pack(std::span<const float> w, int64_t n, int64_t k, Precision precision);
  // bf16 weights [n][k] (exact: one part); x is still split per the precision.
  static Result<AmxBf16Weights> pack_bf16(const uint16_t* w, int64_t n, int64_t k, Precision precision);
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  Precision precision() const { return precision_; }
  int parts() const { return parts_; }
  size_t bytes() const { return data_.size(); }
  const uint16_t* part(int p) const;

 private:
  static Result<AmxBf16Weights> pack_rows(const uint16_t* const* rows, int parts, int64_t n, int64_t k,
                                          Precision precision);
  int64_t n_ = 0, k_ = 0;
  Precision precision_ = Precision::kBf16;
  int parts_ = 1;
  AlignedBuffer data_;
};
// y = sum over the precision's products of x part . w part in TDPBF16PS (fp32 accumulation over
// the whole K), the hi.hi product in one C tile and the rest in another, added at the end.
Status gemm_bf16_amx(const AmxBf16Weights& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                     TileBackend backend);

}  // namespace recur::gemm
