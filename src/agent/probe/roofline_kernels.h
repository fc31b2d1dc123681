// The inner loops behind `recur sysinfo`'s roofline: streaming reads and peak-throughput
// arithmetic, one implementation per ISA level (roofline_{scalar,avx2,avx512}.cc).
//
// Each loop returns a value derived from all its work so the compiler cannot drop any of it.
// Compute loops run `iters` iterations of `ops_per_iter` operations (an FMA counts as 2)
// on independent accumulators, enough to cover the instruction's latency on current cores.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dispatch.h"

namespace recur::roofline {

// Returns the wrapping sum of the 64-bit words in [data, data + bytes), so every path gives
// the same answer; bytes is a multiple of 256 and data is 64-byte aligned.
using ReadFn = uint64_t (*)(const std::byte* data, size_t bytes);

struct ComputeLoop {
  double (*run)(int64_t iters);
  double ops_per_iter;
  const char* instruction;  // what the loop issues, for the report ("vfmadd231ps zmm")
};

uint64_t read_scalar(const std::byte* data, size_t bytes);
uint64_t read_avx2(const std::byte* data, size_t bytes);
uint64_t read_avx512(const std::byte* data, size_t bytes);
// The same sum with a software prefetch kPrefetchAhead bytes ahead of the loads: what a
// prefetching reader (the GEMV kernels) reaches. On some CPUs the hardware prefetchers alone leave
// the plain sum-read about 20% short of that (issue #25: 15.4 vs 18.0 GB/s on a Sapphire Rapids
// core), and a roofline must divide by the true limit.
inline constexpr size_t kPrefetchAhead = 1024;
uint64_t read_prefetch_scalar(const std::byte* data, size_t bytes);
uint64_t read_prefetch_avx2(const std::byte* data, size_t bytes);
uint64_t read_prefetch_avx512(const std::byte* data, size_t bytes);

extern const ComputeLoop kFmaScalar, kFmaAvx2, kFmaAvx512;
extern const ComputeLoop kInt8Scalar, kInt8Avx2, kInt8Avx512Vnni;
// bf16 dot products need AVX512-BF16; there is no narrower path.
extern const ComputeLoop kBf16Avx512;

inline constexpr IsaDispatch<ReadFn> kRead{.scalar = read_scalar, .avx2 = read_avx2, .avx512 = read_avx512};
inline constexpr IsaDispatch<ReadFn> kReadPrefetch{
    .scalar = read_prefetch_scalar, .avx2 = read_prefetch_avx2, .avx512 = read_prefetch_avx512};
inline constexpr IsaDispatch<const ComputeLoop*> kFma{.scalar = &kFmaScalar, .avx2 = &kFmaAvx2,
                                                      .avx512 = &kFmaAvx512};

}  // namespace recur::roofline
