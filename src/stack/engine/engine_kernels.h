// The registered kernels (kernels/registry.h) the forward calls, each resolved once per batch
// from its knob kernel.<name>.variant as the kernel probes resolve it: "auto" is the best
// variant this machine runs (KernelSpec::best_variant), any other value must name a variant it
// can run. The blocks call the resolved ISA level's function directly (no per-element or per-row
// dispatch) and name the variant in their trace zone (arg variant=<name>), so the knob's effect
// is visible in every engine run. Kernels whose spec sets engine_calls are exactly these and
// the KDA kernels (kda_decode, kda_replay_decode, kda_prefill), whose "auto" is the engine's own
// choice, engine.kda.decode_variant / engine.kda.prefill_variant (explicit_variant below).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "core/cpu_features.h"
#include "core/knobs.h"
#include "core/status.h"
#include "kernels/gemm/gemm.h"
#include "kernels/layer/layer.h"

namespace recur {

struct KernelChoice {
  std::string_view variant = "scalar";  // the registered variant's name (the registry outlives it)
  Isa isa = Isa::kScalar;               // the ISA level whose function it runs
};

// The registered gemm kernel's variant (kernels/gemm/gemm_register.cc): its precision and
// algorithm, which the projections run it at.
struct GemmVariant {
  std::string_view variant;
  gemm::Precision precision = gemm::Precision::kF32;
  gemm::Algo algo = gemm::Algo::kAuto;
};

// How the projections (engine/projection.h) multiply. "auto" for gemv and gemm keeps the engine's
// own stored-weight kernels (gemm_stored: F32/F16/BF16/Q8_0 read in place, the regrouped r16
// forms, Q8_0/F16 activations; or packed at kernel.gemm.precision), so the default's bits and
// speed are today's; a named variant runs that registered kernel where it applies.
struct ProjectionKernels {
  // kernel.gemv.variant: M = 1 products of F32 weights (row form, f32 precision) through the
  // registered gemv at this variant; other weights keep the stored GEMV (the zone says which ran).
  std::optional<KernelChoice> gemv;
  // kernel.gemm.variant: M > 1 products through the registered gemm at this variant's precision
  // and algorithm (weights widened and packed once per batch, beside the stored ones).
  std::optional<GemmVariant> gemm;
  // kernel.gemm.precision=w8a8: kernel.gemm_w8a8.variant (its one variant); named in the zone.
  KernelChoice gemm_w8a8;
  // kernel.gemm.algo, kc, mc: every packed gemm() call (kernel.gemm.variant's algorithm first).
  gemm::Options options;
};

struct EngineKernels {
  KernelChoice rmsnorm;           // attention norm, final norm (kernels/rmsnorm)
  KernelChoice rmsnorm_residual;  // residual add fused with the FFN norm (kernels/layer)
  KernelChoice swiglu;            // dense FFN and MoE experts
  KernelChoice rope;              // q and k of attention layers, interleaved (GGUF) pairs
  KernelChoice route_topk;        // MoE routing: softmax, top k, renormalized
  // Token embedding rows (kernels/layer embedding_gather), by the table's type (TableType
  // order: f32, f16, bf16, q8_0): kernel embedding_<type> at kernel.embedding_<type>.variant.
  std::array<KernelChoice, 4> embedding;
  ProjectionKernels projections;  // every Projection of the forward (engine/projection.h)
  KernelChoice attention_decode;   // paged attention of one-token runs (kernels/attention)
  int attention_decode_split_k = 1;  // its variant's split_k parameter
  KernelChoice attention_prefill;  // paged causal attention of longer runs
  KernelChoice mla_decode;        // MLA attention of one-token runs (kernels/mla): absorbed or expand
  KernelChoice mla_prefill;       // MLA attention otherwise
};

// Reads only the knobs of the kernels a model uses (attention: rope and the paged attention
// kernels; experts: route_topk; mla: mla_decode and mla_prefill).
Result<EngineKernels> engine_kernels_from(const Config& knobs, bool attention, bool experts, bool mla = false);

// One registered kernel's variant from kernel.<kernel>.variant, "auto" the best this machine runs
// (the sampler's kernel.sample.variant is read this way where tokens are picked).
Result<KernelChoice> resolve_kernel(const Config& knobs, std::string_view kernel);

// The projections' kernels from kernel.gemv.variant, kernel.gemm.variant, kernel.gemm_w8a8.variant
// and kernel.gemm.{algo,kc,mc}; the tiling knobs act only where the tiled algorithm can run (f32 /
// tf32 packed on AVX-512): elsewhere a value other than the default is refused, naming the knob.
Result<ProjectionKernels> projection_kernels_from(const Config& knobs);

// "embedding_q8_0" for kernels::TableType::kQ8_0.
std::string_view embedding_kernel_name(kernels::TableType type);

// kernel.<kernel>.variant when it names a variant (checked as above: registered and runnable
// here); nullopt for "auto", where the engine keeps its own choice.
Result<std::optional<std::string>> explicit_variant(const Config& knobs, std::string_view kernel);

}  // namespace recur
