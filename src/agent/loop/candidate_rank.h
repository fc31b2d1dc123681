// The order of the agent's open changes: by expected gain (docs/agent.md, "Ranking").
//
// A change's expected gain is the fraction of the deciding condition's metric it is predicted to
// remove: the measured share s of its component (time or error, from the attribution) times
// what the change model (change_model.h) predicts for the component, 1 - f; a change the model
// cannot predict is assumed to remove kUnmodelledGain of its component. A change predicted to
// break a condition that holds now (fp8 math under an error bound, a format 4x costlier under a
// speed bound) ranks after every change that is not. Ties keep the registry's order, with the
// changes a kernel check can screen first (the cheapest refutation).
//
// The same outlook states the prediction in the hypothesis ("kernel:gemm takes 80% of the time;
// bf16x6 -> f32 (cost per element 3 -> 1) should take `decode_ratio(cand vs base)` from 1 to
// ~2.1") and, after the gate ran, whether it held (prediction_note).
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loop/change_model.h"
#include "loop/evidence.h"
#include "loop/gate_state.h"
#include "loop/search_space.h"
#include "gate/spec.h"

namespace recur::agent {

inline constexpr double kUnmodelledGain = 0.25;

// What ranking needs: the gate (with the candidate's configuration), its state, the attribution.
struct RankContext {
  const gate::GateSpec* spec = nullptr;
  const GateState* gate = nullptr;
  const Evidence* evidence = nullptr;
  std::string candidate_arm;
};

struct ChangeOutlook {
  Aim aim = Aim::kTime;  // what the deciding condition measures of the component
  double share = 0;      // the component's measured share (0 when the attribution did not name it)
  std::optional<Prediction> prediction;  // on the component
  double expected_gain = 0;              // fraction of the deciding metric removed (< 0: harm)
  // The deciding metric (a call on the candidate arm), its value now and as predicted.
  std::string metric;
  int direction = 0;  // +1: the metric scales with the component's error or time, -1: inversely
  double overall_factor = 1;  // 1 - share + share * prediction->factor
  std::optional<double> now, predicted;
  std::string risk;  // "would take `logits_max_rel_err(cand vs f64)` from 1e-06 to ~0.07 over 0.0001"
  // One clause for a hypothesis: "bf16x6 -> f32 (cost per element 3 -> 1) should ..."; "" when
  // unmodelled.
  std::string text(const Candidate& c) const;
};

ChangeOutlook outlook_of(const Candidate& c, const RankContext& ctx);

// Fills each candidate's expected_gain and prediction text and sorts by the rule above.
void rank_changes(std::vector<Candidate>& changes, const RankContext& ctx);

// After the gate ran on the change: "prediction held: ... measured ..." (empty when the change had
// no modelled prediction or the metric was not measured both times).
std::string prediction_note(const ChangeOutlook& o, const GateState& after);

}  // namespace recur::agent
