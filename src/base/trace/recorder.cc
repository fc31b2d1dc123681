// Thread registry, slow path and capture of the tracer (recorder.h, trace.h).
#include "trace/recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "trace/trace.h"
#include "trace/traced_mutex.h"

namespace recur::trace {
namespace detail {

constinit thread_local ThreadBuffer* t_buffer = nullptr;

namespace {

constexpr uint32_t kChunkEvents = 4096;  // 128 KiB per chunk

constexpr size_t kMaxFreeChunks = 1024;  // 128 MiB kept for reuse after reset()

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers;
  std::vector<std::unique_ptr<Chunk>> free_chunks;  // full-size chunks recycled by reset()
  TraceConfig config;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: threads may record during exit
  return *r;
}

// Marks the thread's buffer retired when the thread exits; the buffer itself stays with the
// registry so its events survive until reset().
struct ExitHook {
  ThreadBuffer* buffer = nullptr;
  ~ExitHook() {
    if (buffer != nullptr) {
      std::lock_guard lock(buffer->mu);
      buffer->retired = true;
      t_buffer = nullptr;
    }
  }
};
thread_local ExitHook t_exit_hook;

ThreadBuffer* register_thread() {
  auto tb = std::make_unique<ThreadBuffer>();
  tb->tid = int64_t(::syscall(SYS_gettid));
  ThreadBuffer* raw = tb.get();
  Registry& r = registry();
  {
    std::lock_guard lock(r.mu);
    r.buffers.push_back(std::move(tb));
  }
  t_exit_hook.buffer = raw;
  t_buffer = raw;
  return raw;
}

uint64_t max_events_per_thread() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.config.max_events_per_thread;
}

// A chunk of `size` slots: a recycled one (already paged in) when the size is standard.
std::unique_ptr<Chunk> new_chunk(uint32_t size) {
  if (size == kChunkEvents) {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    if (!r.free_chunks.empty()) {
      std::unique_ptr<Chunk> c = std::move(r.free_chunks.back());
      r.free_chunks.pop_back();
      c->count.store(0, std::memory_order_relaxed);
      return c;
    }
  }
  return std::make_unique<Chunk>(size);
}

}  // namespace

RawEvent* reserve_slow(uint32_t n) {
  ThreadBuffer* tb = t_buffer != nullptr ? t_buffer : register_thread();
  uint64_t cap = max_events_per_thread();
  // cur, end, chunk and kept are the owner's (reset() runs only while no thread records);
  // mu guards the chunk list that capture() walks. The registry lock (new_chunk) is never
  // taken while holding mu: reset() takes them in the other order.
  uint64_t in_chunk = tb->chunk != nullptr ? uint64_t(tb->cur - tb->chunk->events.get()) : 0;
  uint64_t used = tb->kept + in_chunk;
  uint64_t room = cap > used ? cap - used : 0;
  if (room < n) {
    // Past the cap: the event is counted, and every later one comes here too.
    tb->dropped.store(tb->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return nullptr;
  }
  uint32_t size = uint32_t(std::min<uint64_t>(std::max<uint64_t>(kChunkEvents, n), room));
  std::unique_ptr<Chunk> chunk = new_chunk(size);
  std::lock_guard lock(tb->mu);
  tb->kept = used;
  tb->chunks.push_back(std::move(chunk));
  tb->chunk = tb->chunks.back().get();
  tb->cur = tb->chunk->events.get() + n;
  tb->end = tb->chunk->events.get() + size;
  return tb->chunk->events.get();
}

}  // namespace detail

void set_enabled(bool on) {
  if (on) {
    const ClockCalibration& c = clock_calibration();
    detail::g_use_tsc = c.source == ClockSource::kTsc;
  }
  detail::g_enabled.store(on, std::memory_order_relaxed);
}

void set_config(const TraceConfig& config) {
  std::lock_guard lock(detail::registry().mu);
  detail::registry().config = config;
}

TraceConfig config() {
  std::lock_guard lock(detail::registry().mu);
  return detail::registry().config;
}

void set_thread_name(std::string_view name) {
  ThreadBuffer* tb = detail::t_buffer;
  if (tb == nullptr) {
    (void)detail::reserve_slow(0);  // registers the thread; zero slots always fit
    tb = detail::t_buffer;
  }
  std::lock_guard lock(tb->mu);
  tb->name = std::string(name);
}

namespace {

// Converts the published events of one thread into table rows.
class Converter {
 public:
  explicit Converter(EventTable& t) : t_(t) {
    cat_recur_ = t.strings().intern("recur");
    cat_flow_ = t.strings().intern("flow");
    cat_wait_ = t.strings().intern(kLockWaitCategory);
    cat_held_ = t.strings().intern(kLockHeldCategory);
    key_value_ = t.strings().intern("value");
    key_mutex_ = t.strings().intern("mutex");
    key_holder_ = t.strings().intern("holder_tid");
  }

  void convert(const RawEvent* ev, uint32_t count, uint32_t track) {
    for (uint32_t i = 0; i < count; ++i) {
      const RawEvent& e = ev[i];
      int64_t ts = ticks_to_ns(e.t0);
      switch (e.kind) {
        case RawKind::kZone: {
          auto* loc = static_cast<const SourceLocation*>(e.ptr);
          t_.add_event('X', name(loc->name), name(loc->category), ts, ticks_to_ns(e.value) - ts,
                       track);
          for (uint32_t k = 0; k < e.nargs && i + 1 < count; ++k) add_arg(ev[++i]);
          break;
        }
        case RawKind::kInstant:
          t_.add_event('i', name(e.ptr), cat_recur_, ts, 0, track);
          for (uint32_t k = 0; k < e.nargs && i + 1 < count; ++k) add_arg(ev[++i]);
          break;
        case RawKind::kCounterInt:
          t_.add_event('C', name(e.ptr), cat_recur_, ts, 0, track);
          t_.add_arg_int(key_value_, int64_t(e.value));
          break;
        case RawKind::kCounterDouble: {
          double d;
          std::memcpy(&d, &e.value, sizeof d);
          t_.add_event('C', name(e.ptr), cat_recur_, ts, 0, track);
          t_.add_arg_double(key_value_, d);
          break;
        }
        case RawKind::kFlowBegin:
          t_.add_event('s', name(e.ptr), cat_flow_, ts, 0, track, e.value, kFlagHasId);
          break;
        case RawKind::kFlowStep:
          t_.add_event('t', name(e.ptr), cat_flow_, ts, 0, track, e.value, kFlagHasId);
          break;
        case RawKind::kFlowEnd:
          t_.add_event('f', name(e.ptr), cat_flow_, ts, 0, track, e.value,
                       kFlagHasId | kFlagBindEnclosing);
          break;
        case RawKind::kLockWait:
          t_.add_event('X', name(e.ptr), cat_wait_, ts, ticks_to_ns(e.value) - ts, track);
          t_.add_arg_string(key_mutex_, static_cast<const char*>(e.ptr));
          t_.add_arg_int(key_holder_, int64_t(e.aux));
          break;
        case RawKind::kLockHold:
          t_.add_event('X', name(e.ptr), cat_held_, ts, ticks_to_ns(e.value) - ts, track);
          t_.add_arg_string(key_mutex_, static_cast<const char*>(e.ptr));
          break;
        case RawKind::kArg:
          break;  // args are consumed with their event above
      }
    }
  }

 private:
  StringId name(const void* p) {
    auto* s = static_cast<const char*>(p);
    if (s == nullptr) return 0;
    if (auto it = cache_.find(s); it != cache_.end()) return it->second;
    StringId id = t_.strings().intern(s);
    cache_.emplace(s, id);
    return id;
  }
  void add_arg(const RawEvent& a) {
    StringId key = name(a.ptr);
    switch (a.arg_type) {
      case RawArgType::kInt: t_.add_arg_int(key, int64_t(a.value)); break;
      case RawArgType::kUint: t_.add_arg_uint(key, a.value); break;
      case RawArgType::kBool: t_.add_arg_bool(key, a.value != 0); break;
      case RawArgType::kDouble: {
        double d;
        std::memcpy(&d, &a.value, sizeof d);
        t_.add_arg_double(key, d);
        break;
      }
      case RawArgType::kString: {
        auto* s = reinterpret_cast<const char*>(uintptr_t(a.value));
        t_.add_arg_string(key, s != nullptr ? std::string_view(s) : std::string_view());
        break;
      }
    }
  }

  EventTable& t_;
  std::unordered_map<const void*, StringId> cache_;
  StringId cat_recur_, cat_flow_, cat_wait_, cat_held_, key_value_, key_mutex_, key_holder_;
};

}  // namespace

EventTable capture() {
  EventTable table;
  int64_t pid = int64_t(::getpid());
  Converter conv(table);
  std::vector<ThreadBuffer*> buffers;
  {
    std::lock_guard lock(detail::registry().mu);
    for (auto& b : detail::registry().buffers) buffers.push_back(b.get());
  }
  for (ThreadBuffer* tb : buffers) {
    std::lock_guard lock(tb->mu);
    uint64_t dropped = tb->dropped.load(std::memory_order_relaxed);
    if (tb->chunks.empty() && tb->name.empty() && dropped == 0) continue;
    uint32_t track = table.track_for(pid, tb->tid);
    Track& t = table.tracks()[track];
    if (!tb->name.empty()) t.thread_name = table.strings().intern(tb->name);
    t.dropped_events = dropped;
    for (auto& c : tb->chunks) {
      uint32_t n = c->count.load(std::memory_order_acquire);
      conv.convert(c->events.get(), n, track);
    }
  }
  table.finalize();
  return table;
}

void reset() {
  std::lock_guard lock(detail::registry().mu);
  auto& buffers = detail::registry().buffers;
  for (auto it = buffers.begin(); it != buffers.end();) {
    ThreadBuffer* tb = it->get();
    std::unique_lock lock_tb(tb->mu);
    auto& free_chunks = detail::registry().free_chunks;
    for (auto& c : tb->chunks) {
      if (c->capacity == detail::kChunkEvents && free_chunks.size() < detail::kMaxFreeChunks) {
        free_chunks.push_back(std::move(c));
      }
    }
    tb->chunks.clear();
    tb->chunk = nullptr;
    tb->cur = tb->end = nullptr;
    tb->kept = 0;
    tb->name.clear();
    tb->dropped.store(0, std::memory_order_relaxed);
    bool retired = tb->retired;
    lock_tb.unlock();
    it = retired ? buffers.erase(it) : it + 1;
  }
}

}  // namespace recur::trace
