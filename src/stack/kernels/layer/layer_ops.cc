// Run-time choice of the layer loops: AVX-512, then AVX2, then scalar.
#include "kernels/layer/layer_ops.h"

#include "core/dispatch.h"

namespace recur::kernels {

const LayerOps& layer_ops(Isa isa) {
  static constexpr IsaDispatch<const LayerOps*> kTables{
      .scalar = &kLayerOpsScalar, .avx2 = &kLayerOpsAvx2, .avx512 = &kLayerOpsAvx512};
  return *kTables.for_isa(isa);
}

const LayerOps& layer_ops() { return layer_ops(active_isa()); }

}  // namespace recur::kernels
