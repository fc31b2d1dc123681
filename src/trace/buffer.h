// Per-thread event storage of the tracer (trace.h): fixed-size chunks, one writer thread each.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "trace/trace.h"

namespace recur::trace::detail {

struct Event {
  uint64_t ticks;
  const void* ptr;   // SourceLocation*, name, arg key or lock
  uint64_t value;    // arg value, flow id, counter bits, lock holder
  EventKind kind;
  uint8_t pad[7];
};
static_assert(sizeof(Event) == 32);

inline constexpr size_t kChunkEvents = 4096;  // 128 KiB per chunk

struct Chunk {
  Event events[kChunkEvents];
  std::atomic<uint32_t> count{0};  // published with release after each event
};

struct ThreadBuffer {
  uint32_t tid = 0;
  std::atomic<const char*> name{nullptr};
  std::vector<std::unique_ptr<Chunk>> chunks;  // grows only by its own thread, under the registry lock
  Chunk* current = nullptr;
  std::atomic<uint64_t> dropped{0};
};

// Every thread's buffer, for the writer. The lock is taken when a thread registers or grows,
// never per event.
struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<ThreadBuffer>> threads;
  std::atomic<size_t> bytes_used{0};
  std::atomic<size_t> capacity{size_t(256) << 20};
  // Chunks freed by clear(), reused before new memory is touched (no page faults, no zeroing).
  std::vector<std::unique_ptr<Chunk>> spare;
};
Registry& registry();
ThreadBuffer* this_thread_buffer();  // registers the calling thread on first use
uint32_t current_tid();

}  // namespace recur::trace::detail
