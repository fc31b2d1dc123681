#include "engine/engine_options.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "kernels/gemm/gemm_amx.h"

namespace recur {

namespace {

// A knob's choices from a kernel's own names of its enum's values.
template <class E, size_t N, class NameFn>
std::vector<std::string> kernel_choices(const E (&values)[N], NameFn name) {
  std::vector<std::string> out;
  for (E v : values) out.emplace_back(name(v));
  return out;
}

std::vector<std::string> kv_dtype_choices() {
  std::vector<std::string> out;
  for (int i = 0; i < kernels::attention::kNumKvDTypes; ++i)
    out.emplace_back(kernels::attention::kv_dtype_name(kernels::attention::KvDType(i)));
  return out;
}

}  // namespace

// ---- The forward pass.

RECUR_KNOB(engine_numerics, {.name = "engine.numerics", .type = KnobType::kEnum,
                             .choices = enum_choices(kNumericsNames), .default_value = "native",
                             .components = {"engine:numerics"},
                             .acts = KnobActs::kEngine,
                             .help = "native: the engine's fp32 forward pass; f64_reference: the float64 reference "
                                     "forward pass (hybrid only; slow, one thread, for small models), the arm "
                                     "others are judged against"});
RECUR_KNOB(engine_tp, {.name = "engine.tp", .type = KnobType::kEnum, .choices = enum_choices(kRankCountNames),
                       .default_value = "1", .components = {"engine:tp", "thread:rank"},
                       .acts = KnobActs::kEngine,
                       .help = "tensor-parallel ranks (pinned threads, each owning a weight shard); more ranks "
                               "than cores runs correctly, just not faster"});
RECUR_KNOB(engine_tp_reduce_dtype,
           {.name = "engine.tp.reduce_dtype", .type = KnobType::kEnum, .choices = enum_choices(kReduceDtypeNames),
            .default_value = "f32", .components = {"op:all_reduce", "engine:tp"},
            .acts = KnobActs::kEngine,
            .help = "element type of the TP all-reduce: bf16 rounds every rank's partial and the sum to bf16, "
                    "as a bf16 NCCL all-reduce does (half the bytes on a real interconnect)"});
RECUR_KNOB(engine_layer_split,
           {.name = "engine.layer_split", .type = KnobType::kEnum, .choices = enum_choices(kOnOffNames),
            .default_value = "off", .components = {"engine:kv_cache"},
            .acts = KnobActs::kEngine,
            .help = "with engine.tp > 1: each attention layer whole on one rank (round robin), holding that layer's "
                    "KV cache alone, instead of its heads split and KV heads replicated across ranks; no-op at tp = 1"});
RECUR_KNOB(engine_ep, {.name = "engine.ep", .type = KnobType::kEnum, .choices = enum_choices(kRankCountNames),
                       .default_value = "1", .components = {"engine:ep", "op:moe_dispatch", "op:moe_combine"},
                       .acts = KnobActs::kEngine,
                       .help = "expert-parallel ranks for MoE layers: each rank holds whole experts, tokens are "
                               "dispatched to their experts' ranks and combined at their owner (docs/engine.md)"});
RECUR_KNOB(engine_ep_dispatch_mode,
           {.name = "engine.ep.dispatch_mode", .type = KnobType::kEnum, .choices = enum_choices(kDispatchModeNames),
            .default_value = "normal", .components = {"op:moe_dispatch", "op:moe_combine"},
            .acts = KnobActs::kEngine,
            .help = "normal: a row-count round, then exactly the rows; low_latency: one fixed-size padded exchange "
                    "each way with no count round (for decode)"});
// Tagged with its own component only (not engine:tp): which backend runs the ranks is a launch
// choice, not a tuning step for the agent.
RECUR_KNOB(engine_collectives,
           {.name = "engine.collectives", .type = KnobType::kEnum, .choices = enum_choices(kCollectivesNames),
            .default_value = "threads", .components = {"engine:collectives"},
            .acts = KnobActs::kEngine,
            .help = "how ranks exchange data: threads of one process (threads) or one process per rank under "
                    "mpirun, possibly on several hosts (mpi; docs/engine.md)"});
RECUR_KNOB(engine_kda_decode_variant,
           {.name = "engine.kda.decode_variant", .type = KnobType::kEnum,
            .choices = kernel_choices(kda::kAllDecodeVariants, kda::decode_variant_name), .default_value = "hoisted",
            .components = {"kernel:kda_decode"},
            .acts = KnobActs::kEngine,
            .help = "KDA decode work split: prologue per V-tile (vtile, vtile_recip) or once per head (hoisted, "
                    "hoisted_recip); _recip: rsqrt/rcp + Newton step instead of divisions"});
RECUR_KNOB(engine_kda_prefill_variant,
           {.name = "engine.kda.prefill_variant", .type = KnobType::kEnum,
            .choices = kernel_choices(kda::kAllPrefillVariants, kda::prefill_variant_name),
            .default_value = "recurrent", .components = {"kernel:kda_prefill"},
            .acts = KnobActs::kEngine,
            .help = "KDA over a prompt run of several tokens: token by token (recurrent) or the WY/UT chunked form "
                    "with chunks of 64 or 16 tokens"});
RECUR_KNOB(engine_kda_replay,
           {.name = "engine.kda.replay", .type = KnobType::kEnum, .choices = enum_choices(kOnOffNames),
            .default_value = "off", .components = {"kernel:kda_decode"},
            .acts = KnobActs::kEngine,
            .help = "on: each sequence's KDA state is a ReplaySSM checkpoint plus the last engine.kda.replay_window "
                    "steps, decode steps run kda::replay_step (the state is written once per window)"});
RECUR_KNOB(engine_kda_replay_window,
           {.name = "engine.kda.replay_window", .type = KnobType::kInt, .min = 1, .max = 1024, .default_value = "16",
            .components = {"kernel:kda_decode"},
            .acts = KnobActs::kEngine,
            .help = "ReplaySSM window L: decode steps buffered before they are folded into the checkpoint"});
RECUR_KNOB(engine_kv_dtype_layer,
           {.name = "engine.kv_dtype.layer[]", .type = KnobType::kEnum, .choices = kv_dtype_choices(),
            .default_value = "f32",
            // The attention core reads the cache: its op tap carries the storage's rounding.
            .components = {"engine:kv_cache", "engine:attention"},
            .acts = KnobActs::kEngine,
            .help = "element type of layer N's paged KV cache (kernels/attention kv_cache.h); fp8_e4m3 with scale 1 "
                    "per KV head; layers without attention hold no KV and ignore it"});
RECUR_KNOB(engine_attention_operands,
           {.name = "engine.attention.operands", .type = KnobType::kEnum,
            .choices = enum_choices(kAttentionOperandsNames), .default_value = "f32",
            .components = {"engine:attention"},
            .acts = KnobActs::kEngine,
            .help = "cache_type: on layers whose KV cache is f16 or bf16, q and the softmax weights are rounded to "
                    "that type before their products and each row's softmax is taken whole, as ggml's non-flash "
                    "attention over an F16 cache (llama.cpp's default); f32: fp32 q and weights, online softmax. "
                    "GQA layers only (not MLA)"});
// Its own component, not engine:activation: the activation stays knobless for the agent (a slow
// activation asks for a code change), and this is a parity choice, not a tuning step.
RECUR_KNOB(engine_gelu,
           {.name = "engine.gelu", .type = KnobType::kEnum, .choices = enum_choices(kGeluFormNames),
            .default_value = "tanh", .components = {"engine:gelu"},
            .acts = KnobActs::kEngine,
            .help = "GELU of a gated GELU FFN (gemma2, gemma3): tanh (fp32 tanh approximation) or fp16_table "
                    "(gelu(fp16(x)) rounded to fp16, as the table llama.cpp's CPU build reads)"});
// Its own component too: a parity choice (llama.cpp's bits), never a tuning step for the agent.
RECUR_KNOB(engine_ggml_arithmetic,
           {.name = "engine.ggml_arithmetic", .type = KnobType::kEnum,
            .choices = enum_choices(kGgmlArithmeticNames), .default_value = "off",
            .components = {"engine:ggml_arithmetic"},
            .acts = KnobActs::kEngine,
            .help = "off: recur's own arithmetic; avx512 / avx2: llama.cpp's CPU arithmetic as a ggml build for that "
                    "ISA computes it (kernels/ggml_arith): RMSNorm with the squares summed in double, RoPE angles "
                    "chained in float, SiLU and softmax through ggml's vector exp with its tails and sums, F32 / F16 "
                    "matmuls in llamafile's or vec_dot's order, the MoE as llm_build_moe_ffn, and attention over "
                    "f16 / f32 KV layers in ggml's non-flash orders (scalar loops: slow). With an f16 cache, "
                    "engine.attention.operands=cache_type, engine.gelu=fp16_table and "
                    "kernel.gemm.q8_0_activations=q8_0_ggml a model computes llama.cpp's bits (docs/engine.md)",
            // Scalar emulations for another engine's bits: they run when set, but are no tuning step.
            .test_only = {"avx512", "avx2"}});
RECUR_KNOB(engine_hybrid_kv_pages,
           {.name = "engine.hybrid.kv_pages", .type = KnobType::kInt, .min = 0, .max = 1 << 30, .default_value = "0",
            .components = {"engine:kv_cache"},
            .acts = KnobActs::kEngine,
            .help = "pages of 16 tokens in a batch's attention KV pool; 0: enough for every sequence at max_tokens"});

// ---- Loading and the pool.

// Where the weights live while the model runs (docs/engine.md "Weights in memory"; anon decodes
// 1.1-1.3x faster on one thread, docs/performance.md "Issue #7: weights in anonymous huge pages").
RECUR_KNOB(engine_weights_memory,
           {.name = "engine.weights_memory", .type = KnobType::kEnum, .choices = enum_choices(kWeightsMemoryNames),
            .default_value = "anon", .components = {"engine:weights", "memory:tlb"},
            .acts = KnobActs::kEngineLoad,
            .help = "model bytes: mmap (the file's 4 KiB page-cache pages) or anon (read into 2 MiB-aligned "
                    "anonymous memory madvised for transparent huge pages; mmap if the file exceeds half "
                    "of MemAvailable)"});
// How Q8_0 and F16 projections are laid out while the model runs (docs/engine.md "Weight layout").
RECUR_KNOB(engine_weight_layout,
           {.name = "engine.weight_layout", .type = KnobType::kEnum, .choices = enum_choices(kWeightLayoutNames),
            .default_value = "r16", .components = {"engine:weights", "kernel:gemm"},
            .acts = KnobActs::kEngineLoad,
            .help = "Q8_0 and F16 projections: rows (the file's row layout, read in place) or r16 "
                    "(regrouped at load into 16-row groups: one load is 4 k (Q8_0) or 1 k (F16) of 16 rows, "
                    "GEMV near the read bandwidth; Q8_0 needs kernel.gemm.q8_0_activations=q8_0, else rows)"});
// How long the engine's pool threads poll for the next job before sleeping (ThreadPoolOptions).
RECUR_KNOB(engine_pool_spin_us,
           {.name = "engine.pool_spin_us", .type = KnobType::kInt, .min = 0, .max = 100000, .default_value = "200",
            .components = {"engine:threads", "core:thread_pool"},
            .acts = KnobActs::kEngineLoad,
            .help = "microseconds a pool thread polls for the next job (and the caller for the last chunk) before "
                    "sleeping on a futex: decode hands out ~113 GEMVs a token, each a futex wake-up without it; "
                    "0 sleeps at once; ignored when threads exceed the CPUs"});

namespace {

// The knob's value through its name table (the registry already checked it is a choice).
template <class E, size_t N>
Result<E> read_enum(const Config& knobs, std::string_view name, const std::array<EnumName<E>, N>& names) {
  RECUR_ASSIGN_OR_RETURN(std::string v, knobs.get(name));
  std::optional<E> e = enum_from_name(names, v);
  if (!e) return invalid_argument("{}={}: not one of its choices", name, v);
  return *e;
}

}  // namespace

Result<EngineOptions> engine_options_from(const Config& knobs, const ModelConfig& c) {
  EngineOptions o;
  RECUR_ASSIGN_OR_RETURN(o.numerics, read_enum(knobs, "engine.numerics", kNumericsNames));
  RECUR_ASSIGN_OR_RETURN(o.tp, read_enum(knobs, "engine.tp", kRankCountNames));
  RECUR_ASSIGN_OR_RETURN(o.reduce, read_enum(knobs, "engine.tp.reduce_dtype", kReduceDtypeNames));
  RECUR_ASSIGN_OR_RETURN(o.layer_split, read_enum(knobs, "engine.layer_split", kOnOffNames));
  RECUR_ASSIGN_OR_RETURN(o.ep.ep, read_enum(knobs, "engine.ep", kRankCountNames));
  RECUR_ASSIGN_OR_RETURN(o.ep.mode, read_enum(knobs, "engine.ep.dispatch_mode", kDispatchModeNames));
  RECUR_ASSIGN_OR_RETURN(o.collectives, read_enum(knobs, "engine.collectives", kCollectivesNames));
  // OpenMPI's mpirun sets OMPI_COMM_WORLD_SIZE in every process it launches; PMI_SIZE covers
  // other launchers (MPICH's hydra, srun).
  if (o.collectives == CollectivesBackend::kMpi && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr &&
      std::getenv("PMI_SIZE") == nullptr)
    return invalid_argument("engine.collectives=mpi: this process was not launched by mpirun "
                            "(no OMPI_COMM_WORLD_SIZE or PMI_SIZE in the environment)");
  RECUR_ASSIGN_OR_RETURN(o.precision, gemm::precision_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(o.act, gemm::activations_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(o.kv_pages, knobs.get_int("engine.hybrid.kv_pages"));
  bool any_kda = false;
  for (int l = 0; l < c.n_layers; ++l) {
    if (c.is_kda_layer(l)) {
      any_kda = true;
      continue;
    }
    RECUR_ASSIGN_OR_RETURN(std::string name, knobs.get(fmt::format("engine.kv_dtype.layer[{}]", l)));
    RECUR_ASSIGN_OR_RETURN(kernels::attention::KvDType t, kernels::attention::parse_kv_dtype(name));
    o.kv_dtypes.push_back(t);
  }
  // Read only where it acts: a GQA model with an f16 or bf16 cache layer.
  const bool sixteen_bit_cache = std::ranges::any_of(o.kv_dtypes, [](kernels::attention::KvDType t) {
    return t == kernels::attention::KvDType::kF16 || t == kernels::attention::KvDType::kBF16;
  });
  if (sixteen_bit_cache && !c.is_mla()) {
    RECUR_ASSIGN_OR_RETURN(o.attention_operands, read_enum(knobs, "engine.attention.operands", kAttentionOperandsNames));
  }
  RECUR_ASSIGN_OR_RETURN(o.ggml, read_enum(knobs, "engine.ggml_arithmetic", kGgmlArithmeticNames));
  if (c.ffn_gelu) {
    RECUR_ASSIGN_OR_RETURN(o.gelu, read_enum(knobs, "engine.gelu", kGeluFormNames));
  }
  RECUR_ASSIGN_OR_RETURN(o.kernels, engine_kernels_from(knobs, !o.kv_dtypes.empty(), c.n_experts > 0, c.is_mla()));
  if (!any_kda) return o;
  RECUR_ASSIGN_OR_RETURN(std::string decode, knobs.get("engine.kda.decode_variant"));
  auto dv = kda::parse_decode_variant(decode);
  if (!dv) return invalid_argument("engine.kda.decode_variant '{}' is not a KDA decode variant", decode);
  RECUR_ASSIGN_OR_RETURN(std::string prefill, knobs.get("engine.kda.prefill_variant"));
  auto pv = kda::parse_prefill_variant(prefill);
  if (!pv) return invalid_argument("engine.kda.prefill_variant '{}' is not a KDA prefill variant", prefill);
  // kernel.kda_{decode,replay_decode,prefill}.variant name the registered kernels' variants;
  // "auto" keeps the engine.kda.* choice above.
  RECUR_ASSIGN_OR_RETURN(auto kernel_decode, explicit_variant(knobs, "kda_decode"));
  RECUR_ASSIGN_OR_RETURN(auto kernel_replay, explicit_variant(knobs, "kda_replay_decode"));
  RECUR_ASSIGN_OR_RETURN(auto kernel_prefill, explicit_variant(knobs, "kda_prefill"));
  // A variant registered beside the engine's own (a test's) has no engine path.
  auto engine_path = [](const std::optional<std::string>& name, auto parsed, auto keep, std::string_view kernel)
      -> Result<decltype(keep)> {
    if (!name) return keep;
    if (!parsed) return unsupported("kernel.{}.variant={}: the engine has no path for this variant", kernel, *name);
    return *parsed;
  };
  RECUR_ASSIGN_OR_RETURN(o.kda.decode, engine_path(kernel_decode, kda::parse_decode_variant(kernel_decode.value_or("")),
                                                   *dv, "kda_decode"));
  RECUR_ASSIGN_OR_RETURN(o.kda.replay_decode,
                         engine_path(kernel_replay, kda::parse_decode_variant(kernel_replay.value_or("")), *dv,
                                     "kda_replay_decode"));
  RECUR_ASSIGN_OR_RETURN(o.kda.prefill,
                         engine_path(kernel_prefill, kda::parse_prefill_variant(kernel_prefill.value_or("")), *pv,
                                     "kda_prefill"));
  RECUR_ASSIGN_OR_RETURN(o.kda.replay, read_enum(knobs, "engine.kda.replay", kOnOffNames));
  RECUR_ASSIGN_OR_RETURN(int64_t window, knobs.get_int("engine.kda.replay_window"));
  o.kda.replay_window = int(window);
  return o;
}

Result<LoadOptions> load_options_from(const Config& knobs) {
  LoadOptions o;
  RECUR_ASSIGN_OR_RETURN(o.memory, read_enum(knobs, "engine.weights_memory", kWeightsMemoryNames));
  RECUR_ASSIGN_OR_RETURN(WeightLayout layout, read_enum(knobs, "engine.weight_layout", kWeightLayoutNames));
  RECUR_ASSIGN_OR_RETURN(gemm::Q8Activations q8, gemm::q8_activations_from_config(knobs));
  o.model = {.regroup_q8_0 = layout == WeightLayout::kR16 && q8 == gemm::Q8Activations::kQ8_0,
             .regroup_f16 = layout == WeightLayout::kR16};
  RECUR_ASSIGN_OR_RETURN(gemm::AmxMode amx, gemm::amx_mode_from_config(knobs));
  if (amx != gemm::AmxMode::kOff && q8 != gemm::Q8Activations::kQ8_0)
    return invalid_argument("kernel.gemm.amx={} needs kernel.gemm.q8_0_activations=q8_0 (the tiles multiply Q8_0 "
                            "activations), not {}",
                            gemm::amx_mode_name(amx), gemm::q8_activations_name(q8));
  RECUR_ASSIGN_OR_RETURN(o.model.amx_tiles, gemm::amx_tiles_for(amx));
  return o;
}

Result<ThreadPoolOptions> engine_pool_options(const Config& knobs, int threads) {
  RECUR_ASSIGN_OR_RETURN(int64_t spin, knobs.get_int("engine.pool_spin_us"));
  return ThreadPoolOptions{.threads = threads, .pin = true, .spin_us = int(spin)};
}

}  // namespace recur
