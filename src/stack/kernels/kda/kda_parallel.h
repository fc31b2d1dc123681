// Internal to the KDA kernels (decode, prefill, ReplaySSM): workspace sizes rounded to 16
// floats (64-byte rows), and running work items on a pool, or inline without one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"

namespace recur::kda {

constexpr size_t round16(size_t n) { return (n + 15) / 16 * 16; }

inline void run(ThreadPool* pool, int64_t n, const ThreadPool::RangeFn& fn) {
  if (pool == nullptr) {
    fn(0, n, 0);
  } else {
    pool->parallel_for(n, fn);
  }
}

}  // namespace recur::kda
