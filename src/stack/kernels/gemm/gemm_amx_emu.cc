// The AMX kernels on the tile emulator (gemm_amx_tiles.h): plain C++, built for every CPU, so
// every kernel's logic (layouts, tile shapes, edges, epilogues) is tested on any machine.
#include "kernels/gemm/gemm_amx_kernels.h"

namespace recur::gemm::amx {

const KernelTable kEmulatorKernels{.q8 = Kernels<EmuTiles>::q8_groups,
                                   .i8 = Kernels<EmuTiles>::i8_groups,
                                   .bf16 = Kernels<EmuTiles>::bf16_groups};

}  // namespace recur::gemm::amx
