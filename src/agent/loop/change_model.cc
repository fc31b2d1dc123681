#include "loop/change_model.h"

#include <array>
#include <cmath>

#include <fmt/format.h>

namespace recur::agent {

namespace {

struct FormatRow {
  std::string_view name;
  int significand_bits;  // with the implicit bit: relative rounding error 2^-bits
  double cost;           // per element, f32 = 1
};

// Compound products keep the bits of their parts (bf16x3: hi*hi + hi*lo + lo*hi of two-part
// operands, ~16 bits; bf16x6: three parts, ~24 bits) at the cost of one bf16 pass (0.5) each.
// Integer formats count the bits of their scaled mantissa.
constexpr std::array<FormatRow, 15> kFormats = {{
    {"f64", 53, 2.0},    {"f32", 24, 1.0},    {"tf32", 11, 1.0},     {"tf32x3", 22, 3.0},
    {"bf16", 8, 0.5},    {"bf16x3", 16, 1.5}, {"bf16x6", 24, 3.0},   {"f16", 11, 0.5},
    {"fp16", 11, 0.5},   {"fp8_e4m3", 4, 0.25}, {"fp8_e5m2", 3, 0.25}, {"int8", 8, 0.25},
    {"q8_0", 8, 34.0 / 128}, {"w8a8", 8, 0.25}, {"q4_0", 4, 18.0 / 128},
}};

struct IsaRow {
  std::string_view name;
  int lanes;
};
constexpr std::array<IsaRow, 3> kIsas = {{{"scalar", 1}, {"avx2", 8}, {"avx512", 16}}};

std::optional<ValueTraits> exact_traits(std::string_view v) {
  for (const FormatRow& f : kFormats)
    if (f.name == v) return ValueTraits{.significand_bits = f.significand_bits, .cost = f.cost, .lanes = {}};
  for (const IsaRow& i : kIsas)
    if (i.name == v) return ValueTraits{.significand_bits = {}, .cost = {}, .lanes = i.lanes};
  return std::nullopt;
}

// Moves smaller than this many e-folds are noise to the judge (about 5%).
constexpr double kNoEffectEfolds = 0.05;

}  // namespace

std::optional<ValueTraits> value_traits(std::string_view value) {
  if (auto t = exact_traits(value)) return t;
  // "f32_tiled", "avx2_split4": a variant of the format or ISA its first word names.
  const size_t cut = value.find('_');
  if (cut == std::string_view::npos || cut == 0) return std::nullopt;
  return exact_traits(value.substr(0, cut));
}

std::optional<Prediction> predict_change(std::string_view from, std::string_view to, Aim aim) {
  const std::optional<ValueTraits> a = value_traits(from), b = value_traits(to);
  if (!a || !b) return std::nullopt;
  if (a->significand_bits && b->significand_bits) {
    if (aim == Aim::kError)
      return Prediction{.factor = std::ldexp(1.0, *a->significand_bits - *b->significand_bits),
                        .basis = fmt::format("significand {} -> {} bits", *a->significand_bits, *b->significand_bits)};
    return Prediction{.factor = *b->cost / *a->cost,
                      .basis = fmt::format("cost per element {:.3g} -> {:.3g} (f32 = 1)", *a->cost, *b->cost)};
  }
  if (a->lanes && b->lanes) {
    if (aim == Aim::kError) return Prediction{.factor = 1, .basis = "the same arithmetic on other vectors"};
    return Prediction{.factor = double(*a->lanes) / double(*b->lanes),
                      .basis = fmt::format("f32 lanes {} -> {}", *a->lanes, *b->lanes),
                      .upper_bound = true};
  }
  return std::nullopt;
}

PredictionHeld judge_prediction(double predicted, double measured, bool upper_bound) {
  if (!(predicted > 0) || !(measured > 0)) return PredictionHeld::kFailed;
  const double want = -std::log(predicted), got = -std::log(measured);  // e-folds of improvement
  if (std::abs(want) < kNoEffectEfolds)
    return std::abs(got) < 2 * kNoEffectEfolds ? PredictionHeld::kHeld : PredictionHeld::kFailed;
  const double sign = want > 0 ? 1 : -1;
  if (sign * got < kNoEffectEfolds) return PredictionHeld::kFailed;
  if (upper_bound) return PredictionHeld::kHeld;
  return sign * got >= 0.5 * sign * want ? PredictionHeld::kHeld : PredictionHeld::kPartly;
}

std::string_view prediction_held_name(PredictionHeld h) {
  switch (h) {
    case PredictionHeld::kHeld: return "held";
    case PredictionHeld::kPartly: return "held in part";
    case PredictionHeld::kFailed: return "did not hold";
  }
  return "?";
}

}  // namespace recur::agent
