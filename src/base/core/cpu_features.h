// CPU feature detection (cpuid + xgetbv) and the instruction-set level recur dispatches to.
//
// Kernels ship up to three paths: AVX-512, AVX2 and scalar. active_isa() is the best level
// the CPU and OS support, lowered by RECUR_ISA=scalar|avx2|avx512 in the environment or by
// set_isa_cap() (the CLI's --isa flag), so every path can be forced and tested.
// Thread-safe: detection runs once; the cap is an atomic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace recur {

struct CpuFeatures {
  std::string vendor;  // "AuthenticAMD"
  std::string brand;   // "AMD EPYC 9R45 ..."
  bool sse42 = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avx_vnni = false;
  bool amx_tile = false;  // AMX tiles (gemm_amx.h); usable only with os_saves_tiles and Linux's permission
  bool amx_int8 = false;
  bool amx_bf16 = false;
  bool invariant_tsc = false;
  bool os_saves_ymm = false;  // XCR0 enables AVX state
  bool os_saves_zmm = false;  // XCR0 enables AVX-512 state
  bool os_saves_tiles = false;  // XCR0 enables AMX tile config and data (bits 17, 18)
};

const CpuFeatures& cpu_features();

// Ordered: a higher level implies every lower one.
enum class Isa : uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

std::string_view isa_name(Isa isa);
std::optional<Isa> parse_isa(std::string_view name);

// The best level this CPU and OS run: AVX-512 needs F+BW+VL+DQ with OS zmm state,
// AVX2 needs AVX2+FMA+F16C with OS ymm state.
Isa detected_isa();
// min(detected_isa(), cap). Kernels call this (through IsaDispatch) to choose a path.
Isa active_isa();
// Lowers (or restores) the level kernels dispatch to. Asking for more than the CPU has is an
// error rather than a silent downgrade, so a test never believes it ran a path it did not.
Status set_isa_cap(Isa cap);
// Every level this machine can run, lowest first; tests loop over it.
std::vector<Isa> runnable_isas();

// Scoped cap for tests and benchmarks: restores the previous cap on destruction.
class ScopedIsaCap {
 public:
  explicit ScopedIsaCap(Isa cap);
  ~ScopedIsaCap();
  ScopedIsaCap(const ScopedIsaCap&) = delete;
  ScopedIsaCap& operator=(const ScopedIsaCap&) = delete;

 private:
  Isa previous_;
};

// "avx2 fma f16c avx512f avx512bw avx512vl avx512dq avx512vnni avx512bf16"
std::string cpu_feature_string(const CpuFeatures& f);

}  // namespace recur
