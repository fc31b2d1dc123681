// What a single-knob change is predicted to do, before any probe runs: the agent ranks its
// candidates by these predictions (candidate_rank.h) and checks each against what the gate then
// measured. Nothing here knows an episode: the model reads only the values a knob moves between.
//
// Two kinds of value carry a model:
//   number formats (f32, bf16, f16, tf32, fp8_e4m3, int8, q8_0 and the compound forms bf16x3,
//       bf16x6, tf32x3, w8a8; a variant named "<format>_<suffix>" counts as its format):
//       significand bits (relative rounding error 2^-bits) and a cost per element relative to
//       f32 (bytes for a stored type, bf16 passes for a compound product; memory-bound decode and
//       the bf16 dot products both scale with it);
//   instruction sets (scalar, avx2, avx512, also as "<isa>_<suffix>"): vector lanes of f32.
// A format change predicts the component's error to scale by 2^(bits_old - bits_new) and its
// time by cost_new / cost_old; an ISA change predicts time to scale by at most lanes_old /
// lanes_new and the error not to change. Anything else is unmodelled (no prediction).
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace recur::agent {

struct ValueTraits {
  std::optional<int> significand_bits;  // number formats
  std::optional<double> cost;           // number formats: per element, f32 = 1
  std::optional<int> lanes;             // instruction sets: f32 lanes of a vector
};

// The traits a knob value names, or nullopt ("vtile", "on", "64").
std::optional<ValueTraits> value_traits(std::string_view value);

// What a deciding condition measures of the component: its error or its time.
enum class Aim { kError, kTime };

struct Prediction {
  double factor = 1;  // predicted multiplier on the component's error or time (< 1 helps)
  std::string basis;  // why: "significand 4 -> 8 bits", "cost per element 3 -> 1 (f32 = 1)"
  bool upper_bound = false;  // an ISA change's lanes ratio is the most it can give
};

// The predicted effect on `aim` of moving a knob from `from` to `to`, or nullopt when the model
// has nothing to say about these values.
std::optional<Prediction> predict_change(std::string_view from, std::string_view to, Aim aim);

// Whether a measured factor on the condition bears a prediction out: it moved the predicted way
// by at least half the predicted e-folds (an upper bound: by any significant amount).
enum class PredictionHeld { kHeld, kPartly, kFailed };
PredictionHeld judge_prediction(double predicted, double measured, bool upper_bound);
std::string_view prediction_held_name(PredictionHeld h);

}  // namespace recur::agent
