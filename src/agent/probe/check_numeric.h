// Element access for check: float64 values to and from each dtype's storage, ULP distances,
// output sentinels and input checksums.
//
// Floating dtypes (f64, f32, bf16, f16) convert with round-to-nearest-even; integer dtypes
// round and saturate. ULP distance is the number of representable values of the dtype between
// two values (0 = bit-identical after rounding the reference to the dtype). Pure functions;
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"

namespace recur::probe {

// Whether check can read and write this dtype (f64, f32, bf16, f16, i32, i8, u8).
bool check_supports(DType t);

void store_from_double(DType t, const double* src, void* dst, size_t n);
double load_as_double(DType t, const void* base, size_t index);
// The value `v` becomes when stored in dtype t.
double round_to(DType t, double v);

// Representable steps of dtype t between a and b (both rounded to t first); saturates at
// INT64_MAX for NaN or opposite infinities.
int64_t ulp_distance(DType t, double a, double b);

// A bit pattern no correct kernel writes (a NaN with a recognisable payload for floats),
// pre-filled into outputs so unwritten elements are found.
void fill_sentinel(DType t, void* dst, size_t n);
bool is_sentinel(DType t, const void* base, size_t index);

// 64-bit FNV-1a over bytes.
uint64_t checksum_bytes(const void* data, size_t bytes);

}  // namespace recur::probe
