// Engine benchmark: prefill and decode throughput of one model, timed over fresh sessions.
//
// Each run builds a new session, prefills `prefill_tokens` prompt tokens (ids drawn from the
// vocabulary with a fixed seed, skipping control tokens), then decodes `decode_tokens` greedily.
// Reported: per-run tokens/s for both phases, their medians and [min, max], and the bytes of
// weights each decoded token reads (for the bandwidth roofline). Prefill is one batched
// Session::prefill. With batch B > 1 the run uses Model::new_batch: B sequences, each prompt
// prefilled in its own forward, then B sequences decoded together (one forward of B rows per
// step); tok/s are aggregates over the B sequences (weights are streamed once per step).
#pragma once

#include <vector>

#include "core/knobs.h"
#include "core/status.h"
#include "engine/model.h"

namespace recur {

class ThreadPool;

struct EngineBenchOptions {
  int prefill_tokens = 128;
  int decode_tokens = 32;
  int runs = 5;
  int warmup_runs = 1;
  int batch = 1;  // sequences decoded together
};

struct EngineBenchResult {
  std::vector<double> prefill_tok_s, decode_tok_s;  // one per run
  double weight_bytes_per_token = 0;                // weights streamed by one decode step
  double median_prefill() const;
  double median_decode() const;
};

Result<EngineBenchResult> bench_engine(const Model& model, ThreadPool& pool, const EngineBenchOptions& options,
                                       const Config& knobs);

// Median of a sample (0 for an empty one).
double median_of(std::vector<double> v);

}  // namespace recur
