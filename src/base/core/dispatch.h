// IsaDispatch: pick one of a kernel's AVX-512 / AVX2 / scalar implementations at run time.
//
//   inline constexpr IsaDispatch<void (*)(const float*, uint16_t*, size_t)> kToBf16{
//       .scalar = to_bf16_scalar, .avx2 = to_bf16_avx2, .avx512 = to_bf16_avx512};
//   kToBf16.get()(src, dst, n);
//
// get() returns the best path at or below active_isa(); a missing path falls through to the
// next lower one, and scalar must always exist. Paths are compiled in their own translation
// units (recur_isa_sources in CMake) so the rest of the binary stays baseline x86-64.
#pragma once

#include "core/cpu_features.h"

namespace recur {

template <typename Fn>
struct IsaDispatch {
  Fn scalar = nullptr;
  Fn avx2 = nullptr;
  Fn avx512 = nullptr;

  // The path that would run at `level`, and the level it actually belongs to.
  Fn for_isa(Isa level, Isa* chosen = nullptr) const {
    if (level >= Isa::kAvx512 && avx512 != nullptr) {
      if (chosen) *chosen = Isa::kAvx512;
      return avx512;
    }
    if (level >= Isa::kAvx2 && avx2 != nullptr) {
      if (chosen) *chosen = Isa::kAvx2;
      return avx2;
    }
    if (chosen) *chosen = Isa::kScalar;
    return scalar;
  }
  Fn get(Isa* chosen = nullptr) const { return for_isa(active_isa(), chosen); }
};

}  // namespace recur
