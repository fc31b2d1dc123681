// Barrier: a reusable rendezvous for a fixed number of threads.
//
// Sense-reversing: each phase flips a generation counter, so the barrier can be reused
// immediately with no reset. Waiters spin briefly (phases in kernels are short), then sleep
// on the counter with std::atomic::wait (a futex), so a late thread never burns a core for long.
// Thread-safe; every party must call arrive_and_wait() once per phase.
#pragma once

#include <atomic>
#include <cstdint>

namespace recur {

class Barrier {
 public:
  explicit Barrier(int parties);
  Barrier(const Barrier&) = delete;
  Barrier& operator=(const Barrier&) = delete;

  // Blocks until all parties of this phase have arrived. Everything a thread wrote before
  // arriving is visible to every thread after it returns (acquire/release on the generation).
  void arrive_and_wait();
  int parties() const { return parties_; }

 private:
  const int parties_;
  alignas(64) std::atomic<int> waiting_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};
};

}  // namespace recur
