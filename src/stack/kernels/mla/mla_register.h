// Registry entries of MLA attention (mla.h): mla_decode (one new token per sequence over
// 1 + |lens| mod L cached latents) and mla_prefill (1 + |lens| mod T new tokens per sequence,
// causal), each with the variants absorbed and expand (knobs kernel.mla_decode.variant and
// kernel.mla_prefill.variant, which the engine's MLA mixer obeys: engine/engine_kernels.h).
// The registered form builds the paged latent cache of dtype C (0 f32, 1 bf16, 2 fp8_e4m3, 4 f16,
// 3 int8; fp8 scale 1/64) inside the call, like attention_register.h; the float64 reference
// (mla_reference.h, unabsorbed) reads the stored latents back, so the tolerance judges the
// kernel, not the cache's quantization. Softmax scale 1 / sqrt(N + E).
// Cost: the absorbed form's (reads the cache once, W_UK and W_UV once per call).
#pragma once

#include "kernels/registry.h"

namespace recur::kernels {

KernelSpec mla_decode_spec();
KernelSpec mla_prefill_spec();

}  // namespace recur::kernels
