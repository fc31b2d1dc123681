// The registered kernels (kernels/registry.h) the forward calls, each resolved once per batch
// from its knob kernel.<name>.variant as the kernel probes resolve it: "auto" is the best
// variant this machine runs (KernelSpec::best_variant), any other value must name a variant it
// can run. The blocks call the resolved ISA level's function directly (no per-element or per-row
// dispatch) and name the variant in their trace zone (arg variant=<name>), so the knob's effect
// is visible in every engine run. Kernels whose spec sets engine_calls are exactly these.
#pragma once

#include <string_view>

#include "core/cpu_features.h"
#include "core/knobs.h"
#include "core/status.h"

namespace recur {

struct KernelChoice {
  std::string_view variant = "scalar";  // the registered variant's name (the registry outlives it)
  Isa isa = Isa::kScalar;               // the ISA level whose function it runs
};

struct EngineKernels {
  KernelChoice rmsnorm;           // attention norm, final norm (kernels/rmsnorm)
  KernelChoice rmsnorm_residual;  // residual add fused with the FFN norm (kernels/layer)
  KernelChoice swiglu;            // dense FFN and MoE experts
  KernelChoice rope;              // q and k of attention layers, interleaved (GGUF) pairs
  KernelChoice route_topk;        // MoE routing: softmax, top k, renormalized
  KernelChoice mla_decode;        // MLA attention of one-token runs (kernels/mla): absorbed or expand
  KernelChoice mla_prefill;       // MLA attention otherwise
};

// Reads only the knobs of the kernels a model uses (attention: rope; experts: route_topk; mla:
// mla_decode and mla_prefill).
Result<EngineKernels> engine_kernels_from(const Config& knobs, bool attention, bool experts, bool mla = false);

}  // namespace recur
