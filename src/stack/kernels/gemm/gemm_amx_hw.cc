// The AMX kernels on the real tile instructions. This translation unit alone is compiled with
// -mamx-tile -mamx-int8 -mamx-bf16 (and the AVX-512 flags, for the epilogues): nothing here runs
// unless gemm_amx.cc found AMX in CPUID and XCR0, got the kernel's permission for tile data and
// the user opted in (kernel.gemm.amx=on), and the first call's self-check against the emulator
// passed.
#include <immintrin.h>

#include "kernels/gemm/gemm_amx_kernels.h"

namespace recur::gemm::amx {
namespace {

// The tile numbers are encoded in the instructions (GCC's intrinsics stringize them), so each
// operation picks its literal form at compile time.
class HwTiles {
 public:
  void configure(const TileConfig& c) {
    alignas(64) uint8_t image[64];
    c.image(image);
    _tile_loadconfig(image);
  }
  void release() { _tile_release(); }

  template <int T>
  void load(const void* base, int64_t stride) {
    if constexpr (T == 0) _tile_loadd(0, base, stride);
    else if constexpr (T == 1) _tile_loadd(1, base, stride);
    else if constexpr (T == 2) _tile_loadd(2, base, stride);
    else if constexpr (T == 3) _tile_loadd(3, base, stride);
    else if constexpr (T == 4) _tile_loadd(4, base, stride);
    else if constexpr (T == 5) _tile_loadd(5, base, stride);
    else if constexpr (T == 6) _tile_loadd(6, base, stride);
    else _tile_loadd(7, base, stride);
  }
  template <int T>
  void store(void* base, int64_t stride) const {
    if constexpr (T == 0) _tile_stored(0, base, stride);
    else if constexpr (T == 1) _tile_stored(1, base, stride);
    else if constexpr (T == 2) _tile_stored(2, base, stride);
    else _tile_stored(3, base, stride);
  }
  template <int T>
  void zero() {
    if constexpr (T == 0) _tile_zero(0);
    else if constexpr (T == 1) _tile_zero(1);
    else if constexpr (T == 2) _tile_zero(2);
    else _tile_zero(3);
  }
  // The int8 kernels' four products: C 0..3 = A 4/5 x B 6/7.
  template <int C, int A, int B>
  void dpbssd() {
    if constexpr (C == 0 && A == 4 && B == 6) _tile_dpbssd(0, 4, 6);
    else if constexpr (C == 1 && A == 4 && B == 7) _tile_dpbssd(1, 4, 7);
    else if constexpr (C == 2 && A == 5 && B == 6) _tile_dpbssd(2, 5, 6);
    else {
      static_assert(C == 3 && A == 5 && B == 7, "tile triple not in the int8 kernels' plan");
      _tile_dpbssd(3, 5, 7);
    }
  }
  // The bf16 kernels' products: C 0 (big) / 1 (small) = A 2..4 x B 5..7.
  template <int C, int A, int B>
  void dpbf16ps() {
    static_assert((C == 0 || C == 1) && A >= 2 && A <= 4 && B >= 5 && B <= 7, "tile triple not in the bf16 plan");
#define RECUR_AMX_BF16(c, a, b) \
  if constexpr (C == c && A == a && B == b) _tile_dpbf16ps(c, a, b);
    RECUR_AMX_BF16(0, 2, 5) RECUR_AMX_BF16(0, 2, 6) RECUR_AMX_BF16(0, 2, 7) RECUR_AMX_BF16(0, 3, 5)
    RECUR_AMX_BF16(0, 3, 6) RECUR_AMX_BF16(0, 3, 7) RECUR_AMX_BF16(0, 4, 5) RECUR_AMX_BF16(0, 4, 6)
    RECUR_AMX_BF16(0, 4, 7) RECUR_AMX_BF16(1, 2, 5) RECUR_AMX_BF16(1, 2, 6) RECUR_AMX_BF16(1, 2, 7)
    RECUR_AMX_BF16(1, 3, 5) RECUR_AMX_BF16(1, 3, 6) RECUR_AMX_BF16(1, 3, 7) RECUR_AMX_BF16(1, 4, 5)
    RECUR_AMX_BF16(1, 4, 6) RECUR_AMX_BF16(1, 4, 7)
#undef RECUR_AMX_BF16
  }
};

}  // namespace

const KernelTable kHardwareKernels{.q8 = Kernels<HwTiles>::q8_groups,
                                   .i8 = Kernels<HwTiles>::i8_groups,
                                   .bf16 = Kernels<HwTiles>::bf16_groups};

}  // namespace recur::gemm::amx
