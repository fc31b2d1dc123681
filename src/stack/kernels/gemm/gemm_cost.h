// The GEMM cost model: bytes that must cross the memory interface and arithmetic operations,
// as functions of the shape. The benchmark's roofline fractions divide by these.
//
// bytes: the weights once, in their packed or stored form (PackedWeights::weight_bytes,
// row_bytes), plus X read once as fp32 and Y written once as fp32 (activation conversions and
// packing are the kernel's own overhead, not counted). flops: 2 m n k useful operations (an
// FMA counts 2); issued_flops counts what the precision executes (3x for the split forms).
// Thread-safe (pure).
#pragma once

#include <cstdint>

#include "kernels/gemm/gemm.h"

namespace recur::gemm {

struct Cost {
  double bytes = 0;
  double flops = 0;
  double issued_flops = 0;
};

Cost gemm_cost(Precision p, int64_t m, int64_t n, int64_t k);
Cost stored_cost(WeightFormat f, int64_t m, int64_t n, int64_t k);

}  // namespace recur::gemm
