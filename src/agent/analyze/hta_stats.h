// The two numeric conventions HTA's printed tables follow: pandas' describe() (count, mean,
// sample std, min, linear-interpolated quartiles, max) and numpy's round (scale, round half to
// even, unscale), which pandas uses for Series.round and round(Series, n). Thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace recur::analyze {

struct Describe {
  size_t count = 0;
  double mean = 0, std = 0, min = 0, p25 = 0, p50 = 0, p75 = 0, max = 0;  // NaN when undefined
};

// Describes `values` (sorted in place).
Describe describe(std::vector<double>& values);

// numpy.round(x, decimals): NaN stays NaN.
double numpy_round(double x, int decimals);

}  // namespace recur::analyze
