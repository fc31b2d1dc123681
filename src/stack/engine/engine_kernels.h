// The registered kernels (kernels/registry.h) the forward calls, each resolved once per batch
// from its knob kernel.<name>.variant as the kernel probes resolve it: "auto" is the best
// variant this machine runs (KernelSpec::best_variant), any other value must name a variant it
// can run. The blocks call the resolved ISA level's function directly (no per-element or per-row
// dispatch) and name the variant in their trace zone (arg variant=<name>), so the knob's effect
// is visible in every engine run. Kernels whose spec sets engine_calls are exactly these and
// the KDA kernels (kda_decode, kda_replay_decode, kda_prefill), whose "auto" is the engine's own
// choice, engine.kda.decode_variant / engine.kda.prefill_variant (explicit_variant below).
#pragma once

#include <optional>
#include <string>
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
  KernelChoice rmsnorm;            // attention norm, final norm (kernels/rmsnorm)
  KernelChoice rmsnorm_residual;   // residual add fused with the FFN norm (kernels/layer)
  KernelChoice swiglu;             // dense FFN and MoE experts
  KernelChoice rope;               // q and k of attention layers, interleaved (GGUF) pairs
  KernelChoice route_topk;         // MoE routing: softmax, top k, renormalized
  KernelChoice attention_decode;   // paged attention of one-token runs (kernels/attention)
  int attention_decode_split_k = 1;  // its variant's split_k parameter
  KernelChoice attention_prefill;  // paged causal attention of longer runs
};

// Reads only the knobs of the kernels a model uses (attention: rope and the paged attention
// kernels; experts: route_topk).
Result<EngineKernels> engine_kernels_from(const Config& knobs, bool attention, bool experts);

// kernel.<kernel>.variant when it names a variant (checked as above: registered and runnable
// here); nullopt for "auto", where the engine keeps its own choice.
Result<std::optional<std::string>> explicit_variant(const Config& knobs, std::string_view kernel);

}  // namespace recur
