// The options of the one batched forward (forward.h), read from the knobs once per batch.
#pragma once

#include <vector>

#include "core/knobs.h"
#include "engine/collectives.h"
#include "engine/hybrid_kda.h"
#include "engine/model.h"
#include "engine/moe_ep.h"
#include "engine/tensor_parallel.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/gemm/gemm.h"

namespace recur {

struct ForwardOptions {
  BatchOptions batch;
  hybrid::KdaOptions kda;
  int tp = 1;
  moe::EpOptions ep;
  CollectivesBackend collectives = CollectivesBackend::kThreads;
  ReduceDtype reduce = ReduceDtype::kF32;
  gemm::Precision precision = gemm::Precision::kF32;
  gemm::Activations act = kDefaultActivations;
  int64_t kv_pages = 0;      // 0: max_sequences * ceil(max_tokens / page size)
  bool layer_split = false;  // engine.layer_split; takes effect with tp > 1
  std::vector<kernels::attention::KvDType> kv_dtypes;  // one per attention layer, in layer order
};

// Reads engine.tp, engine.tp.reduce_dtype, engine.layer_split, engine.ep, engine.ep.dispatch_mode,
// engine.collectives, kernel.gemm.precision, kernel.gemm.{q8_0,f16}_activations,
// engine.hybrid.kv_pages, engine.kv_dtype.layer[N] for every attention layer N of `c`, and, when
// `c` has KDA layers, engine.kda.{decode_variant, prefill_variant, replay, replay_window}.
Result<ForwardOptions> forward_options(const Config& knobs, const ModelConfig& c, const BatchOptions& batch);

}  // namespace recur
