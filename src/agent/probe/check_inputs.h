// Input distributions for check: each trial draws fresh inputs from one of them, so a variant is
// judged on ordinary data and on the data that breaks numerics.
//
//   uniform       U(-1, 1)
//   normal        N(0, 1)
//   wide_range    sign * 2^U(-20, 20) (2^U(-12, 12) for f16): large dynamic range
//   cancellation  the first input holds pairs (a, -a(1+d)), a ~ U(0.5, 2), |d| < 2^-10; the other
//                 inputs are 1 + U(-2^-10, 2^-10): sums and dot products nearly cancel
// Deterministic from (distribution, seed, input index); thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace recur::probe {

enum class Distribution { kUniform, kNormal, kWideRange, kCancellation };

std::string_view distribution_name(Distribution d);
std::optional<Distribution> parse_distribution(std::string_view name);
std::vector<Distribution> all_distributions();

// Fills `out` with values for input number `input_index` of a kernel (before rounding to dtype).
void generate_values(Distribution d, uint64_t seed, int input_index, DType dtype, std::span<double> out);

}  // namespace recur::probe
