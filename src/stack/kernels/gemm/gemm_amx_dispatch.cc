// Whether the AMX kernels may run on the hardware (gemm_amx.h): CPUID and XCR0, Linux's
// permission for tile data, the user's opt-in (kernel.gemm.amx=on, or RECUR_AMX=on) and a
// first-use self-check of every kernel against the emulator. The probes keep the emulator when
// anything is missing; the engine and recur's main refuse `on` then (amx_tiles_for).
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/enum_names.h"
#include "core/knobs.h"
#include "core/log.h"
#include "kernels/gemm/gemm_amx.h"

namespace recur::gemm {

namespace {

constexpr int kArchReqXcompPerm = 0x1023;  // arch_prctl: request permission for an XSTATE feature
constexpr int kXfeatureXtiledata = 18;

constexpr std::array kAmxModeNames{EnumName<AmxMode>{AmxMode::kOff, "off"}, EnumName<AmxMode>{AmxMode::kOn, "on"},
                                   EnumName<AmxMode>{AmxMode::kEmulate, "emulate"}};

// RECUR_AMX when set, else the knob's default (recur's main applies the knob over it).
AmxMode initial_mode() {
  auto env = amx_mode_from_env();
  if (!env) {
    log(LogLevel::kWarn, "{}; the AMX mode stays off", env.error().message());
    return AmxMode::kOff;
  }
  return env->value_or(AmxMode::kOff);
}

std::atomic<AmxMode>& mode_cell() {
  static std::atomic<AmxMode> mode{initial_mode()};
  return mode;
}

AmxSupport detect() {
  const CpuFeatures& f = cpu_features();
  AmxSupport s;
  s.cpu = f.amx_tile && f.amx_int8 && f.amx_bf16;
  if (!s.cpu) {
    s.reason = fmt::format("the CPU lacks AMX (CPUID.7.0:EDX amx-tile={} amx-int8={} amx-bf16={})", int(f.amx_tile),
                           int(f.amx_int8), int(f.amx_bf16));
    return s;
  }
  s.os = f.os_saves_tiles;
  if (!s.os) {
    s.reason = "the OS does not enable tile state (XCR0 bits 17-18)";
    return s;
  }
  s.permission = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  if (!s.permission)
    s.reason = fmt::format("Linux refused tile data (arch_prctl ARCH_REQ_XCOMP_PERM: {})", std::strerror(errno));
  return s;
}

// Deterministic test data for the self-check (no <random> state shared with callers).
struct Lcg {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(s >> 33);
  }
  float uniform() { return float(next() % 2000001) / 1000000.0f - 1.0f; }  // [-1, 1]
};

Status check_bits(const char* kernel, const std::vector<float>& hw, const std::vector<float>& emu) {
  if (std::memcmp(hw.data(), emu.data(), hw.size() * sizeof(float)) == 0) return ok_status();
  for (size_t i = 0; i < hw.size(); ++i)
    if (std::memcmp(&hw[i], &emu[i], 4) != 0)
      return internal_error("AMX self-check: {} output {} is {} on the hardware, {} on the emulator", kernel, i, hw[i],
                            emu[i]);
  return ok_status();
}

}  // namespace

RECUR_KNOB(gemm_amx, {.name = "kernel.gemm.amx", .type = KnobType::kEnum, .choices = enum_choices(kAmxModeNames),
                      .default_value = "off", .components = {"kernel:gemm", "engine:weights"},
                      .acts = KnobActs::kEngineLoad,
                      .help = "AMX tiles for Q8_0 prefill (m >= 16; Q8_0 projections repacked at load, +1.06x their "
                              "bytes): off, on (the hardware; refused without AMX or if its self-check fails) or "
                              "emulate (the tile emulator: same bits, slow, for tests); the registry's AMX probes "
                              "run on the hardware only at on (RECUR_AMX=off|on|emulate overrides it there)",
                      .test_only = {"emulate"},
                      // `on` where CPUID has AMX (the OS permission and self-check decide at load).
                      .available = [](std::string_view choice) {
                        const CpuFeatures& f = cpu_features();
                        return choice != "on" || (f.amx_tile && f.amx_int8 && f.amx_bf16);
                      }});

std::string_view amx_mode_name(AmxMode mode) { return enum_name(kAmxModeNames, mode); }

Result<AmxMode> amx_mode_from_config(const Config& config) {
  RECUR_ASSIGN_OR_RETURN(std::string v, config.get("kernel.gemm.amx"));
  if (auto mode = enum_from_name(kAmxModeNames, v)) return *mode;
  return invalid_argument("kernel.gemm.amx={}: expected off, on or emulate", v);
}

Result<std::optional<AmxMode>> amx_mode_from_env() {
  const char* env = std::getenv("RECUR_AMX");
  if (env == nullptr || *env == '\0') return std::optional<AmxMode>();
  if (auto mode = enum_from_name(kAmxModeNames, env)) return std::optional<AmxMode>(*mode);
  return invalid_argument("RECUR_AMX='{}': expected off, on or emulate", env);
}

std::string_view tile_backend_name(TileBackend b) { return b == TileBackend::kHardware ? "hardware" : "emulator"; }

void set_amx_mode(AmxMode mode) { mode_cell().store(mode); }
AmxMode amx_mode() { return mode_cell().load(); }

const AmxSupport& amx_support() {
  static const AmxSupport s = detect();
  return s;
}

Status amx_self_check() {
  if (!amx_support().usable()) return unsupported("AMX self-check: {}", amx_support().reason);
  // Shapes that take every tile plan (2 x 2, 2 x 1, 1 x 2, 1 x 1), a K block boundary for Q8_0
  // (33 blocks) and K tails for W8A8 / bf16.
  const int64_t m = 40, n = 40, k = 1056;
  Lcg rng{0x5eed};
  std::vector<float> x(size_t(m * k)), w(size_t(n * k));
  for (auto& v : x) v = rng.uniform();
  for (auto& v : w) v = rng.uniform();
  std::vector<float> hw(size_t(m * n)), emu(size_t(m * n));

  std::vector<uint8_t> q8(size_t(n * k / kQ8Block * kQ8BlockBytes));
  for (size_t b = 0; b < q8.size(); b += kQ8BlockBytes) {
    const uint16_t d = fp32_to_fp16(0.001f + float(rng.next() % 1000) * 1e-5f);
    std::memcpy(&q8[b], &d, 2);
    for (int i = 0; i < kQ8Block; ++i) q8[b + 2 + i] = uint8_t(int8_t(int(rng.next() % 255) - 127));
  }
  RECUR_ASSIGN_OR_RETURN(AmxQ8Weights wq8, AmxQ8Weights::repack(q8.data(), n, k));
  RECUR_RETURN_IF_ERROR(gemm_q8_0_amx(wq8, x.data(), m, hw.data(), nullptr, TileBackend::kHardware));
  RECUR_RETURN_IF_ERROR(gemm_q8_0_amx(wq8, x.data(), m, emu.data(), nullptr, TileBackend::kEmulator));
  RECUR_RETURN_IF_ERROR(check_bits("q8_0", hw, emu));

  const int64_t k8 = k - 17;  // a K tail in the last 64-step
  std::vector<int8_t> qi(size_t(n * k8));
  std::vector<float> si(static_cast<size_t>(n));
  for (auto& v : qi) v = int8_t(int(rng.next() % 255) - 127);
  for (auto& v : si) v = 0.01f + float(rng.next() % 100) * 1e-4f;
  RECUR_ASSIGN_OR_RETURN(AmxI8Weights wi8, AmxI8Weights::repack(qi.data(), si.data(), n, k8));
  RECUR_RETURN_IF_ERROR(gemm_w8a8_amx(wi8, x.data(), m, hw.data(), nullptr, TileBackend::kHardware));
  RECUR_RETURN_IF_ERROR(gemm_w8a8_amx(wi8, x.data(), m, emu.data(), nullptr, TileBackend::kEmulator));
  RECUR_RETURN_IF_ERROR(check_bits("w8a8", hw, emu));

  // bf16x6 uses every part and both accumulators. The SDM leaves the hardware's internal order
  // within one TDPBF16PS open, so the two may differ by fp32 accumulation: within twice the
  // (K + 8) 2^-24 sum |x w| bound each meets against the exact sum.
  const int64_t kb = k - 7;
  RECUR_ASSIGN_OR_RETURN(AmxBf16Weights wb,
                         AmxBf16Weights::pack(std::span(w.data(), size_t(n * kb)), n, kb, Precision::kBf16x6));
  std::vector<float> xb(x.begin(), x.begin() + m * kb);
  RECUR_RETURN_IF_ERROR(gemm_bf16_amx(wb, xb.data(), m, hw.data(), nullptr, TileBackend::kHardware));
  RECUR_RETURN_IF_ERROR(gemm_bf16_amx(wb, xb.data(), m, emu.data(), nullptr, TileBackend::kEmulator));
  for (int64_t t = 0; t < m; ++t)
    for (int64_t r = 0; r < n; ++r) {
      double mag = 0;
      for (int64_t c = 0; c < kb; ++c) mag += std::fabs(double(xb[t * kb + c]) * double(w[r * kb + c]));
      const double bound = 2.0 * double(kb + 8) * std::exp2(-24.0) * mag;
      const size_t i = size_t(t * n + r);
      if (!(std::fabs(double(hw[i]) - double(emu[i])) <= bound))
        return internal_error("AMX self-check: bf16x6 output {} is {} on the hardware, {} on the emulator (bound {})",
                              i, hw[i], emu[i], bound);
    }
  return ok_status();
}

namespace {

// The self-check, run once per process on first need (it needs usable AMX); a failure is logged.
const Status& self_check_once() {
  static const Status check = [] {
    Status s = amx_self_check();
    if (!s) log(LogLevel::kWarn, "AMX kernels disabled: {}", s.error().message());
    return s;
  }();
  return check;
}

}  // namespace

TileBackend amx_backend() {
  if (amx_mode() != AmxMode::kOn || !amx_support().usable()) return TileBackend::kEmulator;
  return self_check_once() ? TileBackend::kHardware : TileBackend::kEmulator;
}

Result<std::optional<TileBackend>> amx_tiles_for(AmxMode mode) {
  if (mode == AmxMode::kOff) return std::optional<TileBackend>();
  if (mode == AmxMode::kEmulate) return std::optional<TileBackend>(TileBackend::kEmulator);
  if (!amx_support().usable())
    return unsupported("kernel.gemm.amx=on: {}; kernel.gemm.amx=emulate runs the tiles' arithmetic on the emulator "
                       "(slow, for tests), off keeps the AVX-512 / AVX2 kernels",
                       amx_support().reason);
  if (const Status& check = self_check_once(); !check)
    return unsupported("kernel.gemm.amx=on: {}; kernel.gemm.amx=off keeps the AVX-512 kernels",
                       check.error().message());
  return std::optional<TileBackend>(TileBackend::kHardware);
}

Status apply_process_amx_mode(const Config& config) {
  RECUR_ASSIGN_OR_RETURN(std::optional<AmxMode> env, amx_mode_from_env());
  AmxMode mode = AmxMode::kOff;
  if (env) {
    mode = *env;
  } else {
    RECUR_ASSIGN_OR_RETURN(mode, amx_mode_from_config(config));
  }
  if (mode == AmxMode::kOn) {
    if (auto tiles = amx_tiles_for(mode); !tiles) return unexpected(tiles.error());
  }
  set_amx_mode(mode);
  return ok_status();
}

std::string amx_backend_reason() {
  if (amx_mode() != AmxMode::kOn)
    return "kernel.gemm.amx is not on (the hardware path is opt-in until validated on an AMX machine)";
  if (!amx_support().usable()) return amx_support().reason;
  if (amx_backend() == TileBackend::kEmulator) return "the first-use self-check against the emulator failed";
  return "AMX on: CPU, OS and permission present, self-check passed";
}

}  // namespace recur::gemm
