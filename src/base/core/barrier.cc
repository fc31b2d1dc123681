#include "core/barrier.h"

#include <immintrin.h>

namespace recur {

Barrier::Barrier(int parties) : parties_(parties < 1 ? 1 : parties) {}

void Barrier::arrive_and_wait() {
  const uint32_t gen = generation_.load(std::memory_order_acquire);
  if (waiting_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
    // Last to arrive: reset the count for the next phase, then release everyone.
    waiting_.store(0, std::memory_order_relaxed);
    generation_.store(gen + 1, std::memory_order_release);
    generation_.notify_all();
    return;
  }
  for (int spin = 0; spin < 2000; ++spin) {
    if (generation_.load(std::memory_order_acquire) != gen) return;
    _mm_pause();
  }
  while (generation_.load(std::memory_order_acquire) == gen) generation_.wait(gen, std::memory_order_acquire);
}

}  // namespace recur
