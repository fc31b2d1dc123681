#include "probe/check_inputs.h"

#include <cmath>

#include "probe/rng.h"

namespace recur::probe {

std::string_view distribution_name(Distribution d) {
  switch (d) {
    case Distribution::kUniform: return "uniform";
    case Distribution::kNormal: return "normal";
    case Distribution::kWideRange: return "wide_range";
    case Distribution::kCancellation: return "cancellation";
  }
  return "?";
}

std::optional<Distribution> parse_distribution(std::string_view name) {
  for (Distribution d : all_distributions())
    if (distribution_name(d) == name) return d;
  return std::nullopt;
}

std::vector<Distribution> all_distributions() {
  return {Distribution::kUniform, Distribution::kNormal, Distribution::kWideRange, Distribution::kCancellation};
}

void generate_values(Distribution d, uint64_t seed, int input_index, DType dtype, std::span<double> out) {
  SplitMix64 rng(seed * 0x100000001b3ull + uint64_t(input_index) * 0x9e37ull + uint64_t(d) + 1);
  const bool integer = dtype == DType::kI32 || dtype == DType::kI8 || dtype == DType::kU8;
  const double span = dtype == DType::kF16 ? 12.0 : 20.0;
  for (size_t i = 0; i < out.size(); ++i) {
    double v = 0;
    switch (d) {
      case Distribution::kUniform: v = 2 * rng.uniform() - 1; break;
      case Distribution::kNormal: {
        double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
        v = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
        break;
      }
      case Distribution::kWideRange: {
        double sign = rng.uniform() < 0.5 ? -1.0 : 1.0;
        v = sign * std::exp2(span * (2 * rng.uniform() - 1));
        break;
      }
      case Distribution::kCancellation: {
        double delta = (2 * rng.uniform() - 1) * 0x1.0p-10;
        if (input_index != 0) {
          v = 1.0 + delta;
        } else if (i % 2 == 0) {
          v = 0.5 + 1.5 * rng.uniform();
        } else {
          v = -out[i - 1] * (1.0 + delta);
        }
        break;
      }
    }
    out[i] = integer ? std::nearbyint(v * 64) : v;
  }
}

}  // namespace recur::probe
