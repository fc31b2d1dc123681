// Per-op error localization (probe "check.engine_ops", tier 3): one forced forward pass under
// two configurations, compared op by op through the engine's op tap (engine/op_tap.h).
//
// Arm b (the reference) generates `decode_tokens` greedy tokens from each prompt with every
// op's output captured; arm a is fed the same tokens (teacher forcing, as measure_agreement
// does) and captured too. For each op and step:
//   err      = max_i |a_i - b_i| / max_i |b_i|   (normwise relative error of the whole tensor,
//              shards assembled; row-parallel partials summed)
//   added    = max(0, err - max over the op's inputs of their err)  (the error the op adds over
//              what it inherits; amplification by the op, and state carried across steps in
//              the KDA state or KV cache, count as added by that op)
// An op's metric is its err's maximum over steps and prompts. Attribution: each component's
// share of the total added error (summed over ops, steps and prompts); the shares sum to 1 (a
// decomposition of the added error, not of the final logits error; untagged ops would go to
// `unattributed`). Notes name the first op (in execution order) whose err exceeds the tolerance.
// Not thread-safe (one measurement at a time).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/feedback.h"
#include "core/status.h"
#include "engine/model.h"
#include "gate/engine_probe.h"

namespace recur::gate {

struct OpError {
  std::string name, component;
  double max_rel_err = 0;  // over steps and prompts
  double added = 0;        // summed over steps and prompts
};

struct OpErrorsResult {
  std::vector<OpError> ops;  // in execution order
  std::string first_over;    // first op whose max_rel_err exceeds the tolerance; "" if none
  Feedback feedback;         // probe "check.engine_ops", tier 3
};

struct OpErrorOptions {
  std::vector<std::string> prompts = {"Once upon a time"};
  int decode_tokens = 16;
  double tolerance = 1e-3;
};

// a against reference b, on `model` (architectures with op taps: hybrid).
Result<OpErrorsResult> measure_op_errors(const Model& model, std::string_view model_path, ThreadPool& pool,
                                         const OpErrorOptions& options, const NamedConfig& a, const NamedConfig& b);
// The same with each arm on its own model instance and pool (gate/arm_engines.h).
Result<OpErrorsResult> measure_op_errors(std::string_view model_path, const OpErrorOptions& options, const EngineArm& a,
                                         const EngineArm& b);

}  // namespace recur::gate
