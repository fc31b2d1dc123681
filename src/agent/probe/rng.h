// SplitMix64: a small, fast, well-mixed generator with a fixed algorithm, so every probe's
// random choices (inputs, bootstrap resamples, round orders) are reproducible from a seed on
// any machine and can be re-derived outside recur. Not thread-safe: one per thread.
#pragma once

#include <cstdint>

namespace recur::probe {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return uint64_t(uniform() * double(n)); }

 private:
  uint64_t state_;
};

}  // namespace recur::probe
