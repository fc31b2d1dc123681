// Whether the AMX kernels may run on the hardware (gemm_amx.h): CPUID and XCR0, Linux's
// permission for tile data, the user's opt-in (RECUR_AMX=on) and a first-use self-check of
// every kernel against the emulator. Anything missing keeps them on the emulator.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <mutex>
#include <vector>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/log.h"
#include "kernels/gemm/gemm_amx.h"

namespace recur::gemm {

namespace {

constexpr int kArchReqXcompPerm = 0x1023;  // arch_prctl: request permission for an XSTATE feature
constexpr int kXfeatureXtiledata = 18;

// RECUR_AMX=on|off, read once; anything else keeps the hardware path off, with a warning.
AmxMode initial_mode() {
  const char* env = std::getenv("RECUR_AMX");
  if (env == nullptr || *env == '\0' || std::string_view(env) == "off") return AmxMode::kOff;
  if (std::string_view(env) == "on") return AmxMode::kOn;
  log(LogLevel::kWarn, "RECUR_AMX='{}' is not on or off; the AMX hardware path stays off", env);
  return AmxMode::kOff;
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

struct Decision {
  bool checked = false;
  Status check = ok_status();
};

}  // namespace

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

TileBackend amx_backend() {
  if (amx_mode() != AmxMode::kOn || !amx_support().usable()) return TileBackend::kEmulator;
  static std::once_flag once;
  static Decision decision;
  std::call_once(once, [] {
    decision.check = amx_self_check();
    decision.checked = true;
    if (!decision.check)
      log(LogLevel::kWarn, "AMX kernels disabled, running on the tile emulator: {}", decision.check.error().message());
  });
  return decision.check ? TileBackend::kHardware : TileBackend::kEmulator;
}

std::string amx_backend_reason() {
  if (amx_mode() != AmxMode::kOn)
    return "RECUR_AMX is not on (the hardware path is opt-in until validated on an AMX machine)";
  if (!amx_support().usable()) return amx_support().reason;
  if (amx_backend() == TileBackend::kEmulator) return "the first-use self-check against the emulator failed";
  return "AMX on: CPU, OS and permission present, self-check passed";
}

}  // namespace recur::gemm
