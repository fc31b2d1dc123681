// The tracer's recording side: per-thread buffers, capacity, start/stop, locks and counters.
#include <sys/syscall.h>
#include <unistd.h>

#include <bit>
#include <cstring>

#include "core/clock.h"
#include "trace/buffer.h"

namespace recur::trace {
namespace detail {

std::atomic<bool> g_enabled{false};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: threads may record during exit
  return *r;
}

namespace {

thread_local ThreadBuffer* t_buffer = nullptr;

ThreadBuffer* register_thread() {
  Registry& r = registry();
  auto buffer = std::make_unique<ThreadBuffer>();
  buffer->tid = uint32_t(syscall(SYS_gettid));
  std::lock_guard<std::mutex> lock(r.mutex);
  r.threads.push_back(std::move(buffer));
  return r.threads.back().get();
}

// A fresh chunk if the budget allows; nullptr (and the event is dropped) if not.
Chunk* grow(ThreadBuffer* b) {
  Registry& r = registry();
  size_t used = r.bytes_used.fetch_add(sizeof(Chunk), std::memory_order_relaxed);
  if (used + sizeof(Chunk) > r.capacity.load(std::memory_order_relaxed)) {
    r.bytes_used.fetch_sub(sizeof(Chunk), std::memory_order_relaxed);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(r.mutex);
  std::unique_ptr<Chunk> chunk;
  if (!r.spare.empty()) {
    chunk = std::move(r.spare.back());
    r.spare.pop_back();
    chunk->count.store(0, std::memory_order_relaxed);
  } else {
    chunk.reset(new Chunk);  // events left uninitialised: only [0, count) is ever read
  }
  Chunk* raw = chunk.get();
  b->chunks.push_back(std::move(chunk));
  b->current = raw;
  return raw;
}

}  // namespace

void record(EventKind kind, const void* ptr, uint64_t value, uint32_t) {
  ThreadBuffer* b = t_buffer;
  if (b == nullptr) b = t_buffer = register_thread();
  Chunk* c = b->current;
  uint32_t n = c ? c->count.load(std::memory_order_relaxed) : uint32_t(kChunkEvents);
  if (n == kChunkEvents) {
    c = grow(b);
    if (c == nullptr) {
      b->dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    n = 0;
  }
  Event& e = c->events[n];
  e.ticks = read_ticks();
  e.ptr = ptr;
  e.value = value;
  e.kind = kind;
  c->count.store(n + 1, std::memory_order_release);
}

ThreadBuffer* this_thread_buffer() {
  if (t_buffer == nullptr) t_buffer = register_thread();
  return t_buffer;
}

uint32_t current_tid() { return this_thread_buffer()->tid; }

}  // namespace detail

void start() {
  (void)clock_calibration();  // calibrate before the first event, not inside it
  detail::g_enabled.store(true, std::memory_order_release);
}
void stop() { detail::g_enabled.store(false, std::memory_order_release); }

void clear() {
  detail::Registry& r = detail::registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& t : r.threads) {
    for (auto& c : t->chunks) r.spare.push_back(std::move(c));
    t->chunks.clear();
    t->current = nullptr;
    t->dropped.store(0, std::memory_order_relaxed);
  }
  r.bytes_used.store(0, std::memory_order_relaxed);
}

void set_capacity(size_t bytes) { detail::registry().capacity.store(bytes, std::memory_order_relaxed); }

void set_thread_name(const char* name) { detail::this_thread_buffer()->name.store(name, std::memory_order_release); }

Stats stats() {
  detail::Registry& r = detail::registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  Stats s;
  s.threads = r.threads.size();
  s.bytes = r.bytes_used.load(std::memory_order_relaxed);
  for (auto& t : r.threads) {
    for (auto& c : t->chunks) s.events += c->count.load(std::memory_order_acquire);
    s.dropped += t->dropped.load(std::memory_order_relaxed);
  }
  return s;
}

void Zone::arg(const char* key, double value) {
  if (active_) detail::record(EventKind::kArgFloat, key, std::bit_cast<uint64_t>(value));
}

void counter(const char* name, double value) {
  if (enabled()) detail::record(EventKind::kCounter, name, std::bit_cast<uint64_t>(value));
}

void TracedMutex::lock() {
  if (!enabled()) {
    mutex_.lock();
    holder_.store(detail::current_tid(), std::memory_order_relaxed);
    return;
  }
  detail::record(EventKind::kLockWait, this, holder_.load(std::memory_order_relaxed));
  mutex_.lock();
  holder_.store(detail::current_tid(), std::memory_order_relaxed);
  detail::record(EventKind::kLockAcquired, this, 0);
}

bool TracedMutex::try_lock() {
  if (!mutex_.try_lock()) return false;
  holder_.store(detail::current_tid(), std::memory_order_relaxed);
  if (enabled()) detail::record(EventKind::kLockAcquired, this, 0);
  return true;
}

void TracedMutex::unlock() {
  if (enabled()) detail::record(EventKind::kLockReleased, this, 0);
  holder_.store(0, std::memory_order_relaxed);
  mutex_.unlock();
}

}  // namespace recur::trace
