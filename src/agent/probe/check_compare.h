// Element-by-element comparison of one output tensor against expected values, with the error
// located in the kernel's coordinates, tiles and shards (check.h's CompareStats and tables).
// Pure function of its arguments; thread-safe.
#pragma once

#include <span>

#include "core/tensor.h"
#include "probe/check.h"

namespace recur::probe {

struct CompareInput {
  const kernels::TensorSpec* spec = nullptr;
  const TensorView* got = nullptr;        // the variant's output, as written
  std::span<const double> want;           // expected values
  std::span<const double> magnitude;      // error scale per element
  kernels::Tolerance tolerance;
  bool sentinels = true;                  // elements equal to the sentinel are unwritten
  int shards = 1;                         // partitioning the output was produced with
  int tiles_reported = 4;
};

Comparison compare_output(const CompareInput& in);

}  // namespace recur::probe
