// Every engine knob, defined in one place (engine_options.cc) and read into typed options once
// at the engine's boundary: the forward's options (EngineOptions, what Model::new_session and
// new_batch take), the load options (LoadOptions: where the weights live and their layout) and
// the pool's (engine_pool_options). Each enum knob's choices come from one name table here, or
// from its kernel's own names (KDA variants, KV element types). The kernel.gemm.* knobs the
// forward reads are the gemm kernel's own (kernels/gemm); their values land here typed too.
//
// A knob is read (Config::track_reads, "only live knobs") only where it acts: engine_options_from
// reads the KDA knobs only for a model with KDA layers and engine.kv_dtype.layer[N] only for its
// attention layers.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/enum_names.h"
#include "core/knobs.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "engine/collectives.h"
#include "engine/engine_kernels.h"
#include "engine/model_config.h"
#include "engine/moe_ep.h"
#include "engine/weights.h"
#include "kernels/attention/attention.h"
#include "kernels/gemm/gemm.h"
#include "kernels/ggml_arith/ggml_arith.h"
#include "kernels/kda/kda.h"

namespace recur {

enum class Numerics : uint8_t { kNative, kF64Reference };
inline constexpr std::array kNumericsNames{EnumName<Numerics>{Numerics::kNative, "native"},
                                           EnumName<Numerics>{Numerics::kF64Reference, "f64_reference"}};
enum class WeightsMemory : uint8_t { kMmap, kAnon };
inline constexpr std::array kWeightsMemoryNames{EnumName<WeightsMemory>{WeightsMemory::kMmap, "mmap"},
                                                EnumName<WeightsMemory>{WeightsMemory::kAnon, "anon"}};
enum class WeightLayout : uint8_t { kRows, kR16 };
inline constexpr std::array kWeightLayoutNames{EnumName<WeightLayout>{WeightLayout::kRows, "rows"},
                                               EnumName<WeightLayout>{WeightLayout::kR16, "r16"}};
inline constexpr std::array kCollectivesNames{EnumName<CollectivesBackend>{CollectivesBackend::kThreads, "threads"},
                                              EnumName<CollectivesBackend>{CollectivesBackend::kMpi, "mpi"}};
inline constexpr std::array kReduceDtypeNames{EnumName<ReduceDtype>{ReduceDtype::kF32, "f32"},
                                              EnumName<ReduceDtype>{ReduceDtype::kBf16, "bf16"}};
inline constexpr std::array kDispatchModeNames{
    EnumName<moe::DispatchMode>{moe::DispatchMode::kNormal, "normal"},
    EnumName<moe::DispatchMode>{moe::DispatchMode::kLowLatency, "low_latency"}};
inline constexpr std::array kAttentionOperandsNames{
    EnumName<kernels::attention::AttentionOperands>{kernels::attention::AttentionOperands::kF32, "f32"},
    EnumName<kernels::attention::AttentionOperands>{kernels::attention::AttentionOperands::kCacheType, "cache_type"}};
// Gemma's GELU (tanh approximation): computed in fp32, or ggml's table of fp16 values
// (gelu(fp16(x)) rounded to fp16, x outside (-10, 10) as 0 or x), what llama.cpp's CPU build reads.
enum class GeluForm : uint8_t { kTanh, kFp16Table };
inline constexpr std::array kGeluFormNames{EnumName<GeluForm>{GeluForm::kTanh, "tanh"},
                                           EnumName<GeluForm>{GeluForm::kFp16Table, "fp16_table"}};
// engine.ggml_arithmetic: off, or the ISA of the llama.cpp build whose arithmetic to reproduce.
inline constexpr std::array kGgmlArithmeticNames{
    EnumName<std::optional<ggml_arith::GgmlIsa>>{std::nullopt, "off"},
    EnumName<std::optional<ggml_arith::GgmlIsa>>{ggml_arith::GgmlIsa::kAvx512, "avx512"},
    EnumName<std::optional<ggml_arith::GgmlIsa>>{ggml_arith::GgmlIsa::kAvx2, "avx2"}};
inline constexpr std::array kOnOffNames{EnumName<bool>{false, "off"}, EnumName<bool>{true, "on"}};
// engine.tp and engine.ep: rank counts.
inline constexpr std::array kRankCountNames{EnumName<int>{1, "1"}, EnumName<int>{2, "2"}, EnumName<int>{4, "4"},
                                            EnumName<int>{8, "8"}};

namespace hybrid {
// The KDA layers' kernels and state form (hybrid_kda.h).
struct KdaOptions {
  kda::DecodeVariant decode = kda::DecodeVariant::kHoisted;
  kda::DecodeVariant replay_decode = kda::DecodeVariant::kHoisted;  // a decode step of a ReplaySSM state
  kda::PrefillVariant prefill = kda::PrefillVariant::kRecurrent;
  bool replay = false;  // ReplaySSM state
  int replay_window = 16;
};
}  // namespace hybrid

// What the forward pass (forward.h) runs, for one model.
struct EngineOptions {
  Numerics numerics = Numerics::kNative;                 // engine.numerics
  int tp = 1;                                            // engine.tp
  ReduceDtype reduce = ReduceDtype::kF32;                // engine.tp.reduce_dtype
  bool layer_split = false;                              // engine.layer_split (takes effect with tp > 1)
  moe::EpOptions ep;                                     // engine.ep, engine.ep.dispatch_mode
  CollectivesBackend collectives = CollectivesBackend::kThreads;  // engine.collectives
  gemm::Precision precision = gemm::Precision::kF32;     // kernel.gemm.precision
  gemm::Activations act = kDefaultActivations;           // kernel.gemm.{q8_0,f16}_activations
  hybrid::KdaOptions kda;                                // engine.kda.*
  int64_t kv_pages = 0;  // engine.hybrid.kv_pages; 0: max_sequences * ceil(max_tokens / page size)
  // engine.kv_dtype.layer[N], one per attention layer of the model, in layer order.
  std::vector<kernels::attention::KvDType> kv_dtypes;
  // engine.attention.operands: how q and the softmax weights meet an f16 / bf16 cache.
  kernels::attention::AttentionOperands attention_operands = kernels::attention::AttentionOperands::kF32;
  GeluForm gelu = GeluForm::kTanh;  // engine.gelu (models with a GELU FFN)
  // engine.ggml_arithmetic: llama.cpp's CPU arithmetic for a build of this ISA (kernels/ggml_arith)
  // in RMSNorm, RoPE, SiLU, the softmaxes, the MoE combine and attention; nullopt: recur's own.
  std::optional<ggml_arith::GgmlIsa> ggml;
  EngineKernels kernels;  // kernel.<name>.variant of the registered kernels the forward calls
};

// The forward's options for `model` from the knobs (checks included: engine.collectives=mpi
// outside mpirun is an error here).
Result<EngineOptions> engine_options_from(const Config& knobs, const ModelConfig& model);

// How a model is prepared after its file is parsed (engine.weights_memory, engine.weight_layout).
struct ModelLoadOptions {
  // Q8_0 / F16 projections regrouped into 16-row groups for the GEMV (gemm.h, kQ8_0R16 /
  // kF16R16). Off for a process that only tokenizes.
  bool regroup_q8_0 = true;
  bool regroup_f16 = true;
  // kernel.gemm.amx: Q8_0 projections also repacked into AMX tiles, run on this backend for
  // prefill (weights.h, attach_amx_tiles); nullopt (off) keeps none.
  std::optional<gemm::TileBackend> amx_tiles;
};
struct LoadOptions {
  WeightsMemory memory = WeightsMemory::kAnon;
  ModelLoadOptions model;
};
// Regrouped Q8_0 always meets Q8_0 activations, so f32 activations keep its rows. AMX tiles need
// Q8_0 activations too: kernel.gemm.amx other than off with other activations is refused, as is
// kernel.gemm.amx=on where the hardware is not usable (gemm::amx_tiles_for).
Result<LoadOptions> load_options_from(const Config& knobs);

// The engine's thread pool for `threads` (0: every CPU), pinned, polling as the knob
// engine.pool_spin_us says.
Result<ThreadPoolOptions> engine_pool_options(const Config& knobs, int threads);

}  // namespace recur
