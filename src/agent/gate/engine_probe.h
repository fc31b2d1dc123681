// The engine measurements behind a gate's engine metrics.
//
// Throughput (prefill_tok_s, decode_tok_s): every arm runs `warmup_runs` untimed, then `runs`
// timed samples, interleaved across arms in alternating order (A B, B A, ...) so drift and other
// tenants' load spread evenly over the arms. A sample is the fastest of `best_of` back-to-back
// engine bench runs (fresh session, `prefill_tokens` prompt tokens, `decode_tokens` greedy
// tokens; engine/engine_bench.h): preemption only ever adds time, as in bench (docs/probes.md).
// A metric is the median over samples with a percentile-bootstrap 95% CI (probe/stats.h);
// prefill_ratio/decode_ratio(a vs b) take the median of the per-round ratios a/b instead.
//
// Agreement (tokens_equal, token_match_frac, logits_max_abs_err, logits_max_rel_err) of arm a
// against reference arm b: b generates `decode_tokens` greedy tokens from each prompt, a is fed
// the same tokens (teacher forcing) and its logits are compared with b's at every generated
// position. a's own greedy generation equals b's exactly when a's argmax matches b's token at
// every position, so one forced pass answers both questions, and the logits are compared on
// identical contexts even after a divergence.
// Not thread-safe (one measurement at a time).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/feedback.h"
#include "core/knobs.h"
#include "core/status.h"
#include "engine/model.h"
#include "gate/evaluate.h"
#include "gate/spec.h"

namespace recur {
class ThreadPool;
}

namespace recur::gate {

using Progress = std::function<void(std::string_view)>;

struct NamedConfig {
  std::string name;
  Config config;
};

// An arm and the model instance and pool it runs on (gate/arm_engines.h: arms that differ in a
// load-time knob run on their own instance).
struct EngineArm {
  NamedConfig arm;
  const Model* model = nullptr;
  ThreadPool* pool = nullptr;
};

// "k=v k2=v2" of the knobs that differ from their defaults, or "defaults".
std::string config_text(const Config& c);

// "engine:<arch> model=<path> arm a (<knobs>) vs b (<knobs>)": the subject of a two-arm probe.
std::string pair_subject(const Model& model, std::string_view model_path, const NamedConfig& a, const NamedConfig& b);

// The model file a workload names: the embedded default, a cached synthetic model, or a path.
Result<std::string> resolve_model_path(const EngineWorkload& w);

struct ThroughputResult {
  std::string arm;
  std::vector<double> prefill_tok_s, decode_tok_s;  // one per timed run
  MetricValue prefill, decode;                       // median with bootstrap CI
  Feedback feedback;                                 // probe "bench.engine", tier 3
};

// Fills t.prefill / t.decode (median and bootstrap CI of the samples it has) and t.feedback.
void summarize_throughput(ThroughputResult& t, std::string probe, double cost_s, std::string subject,
                          std::string note);

Result<std::vector<ThroughputResult>> measure_throughput(std::string_view model_path, const EngineWorkload& w,
                                                         const std::vector<EngineArm>& arms,
                                                         const Progress& progress);

// tok/s of a over b, one ratio per interleaved round (both arms ran in it, back to back):
// median with bootstrap 95% CI. `decode` picks the phase.
MetricValue paired_ratio(const ThroughputResult& a, const ThroughputResult& b, bool decode);

struct AgreementResult {
  bool tokens_equal = true;
  double token_match_frac = 1;
  double max_abs_err = 0, max_rel_err = 0;
  int positions = 0;  // generated positions compared, over all prompts
  Feedback feedback;  // probe "check.engine", tier 3
};

// a against reference b (each on its own model instance and pool; the two share a tokenizer).
Result<AgreementResult> measure_agreement(std::string_view model_path, const EngineWorkload& w, const EngineArm& a,
                                          const EngineArm& b);

}  // namespace recur::gate
