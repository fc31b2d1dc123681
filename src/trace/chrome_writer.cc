// Chrome Trace Event JSON from the tracer's buffers.
//
// Zones become complete ("X") events with their args; lock waits and holds become "X" events in
// category "lock"; instants "i", counters "C", flows "s"/"t"/"f" (bound to the enclosing slice),
// thread names "M". Zones still open when the trace is written end at the thread's last event
// and carry "unclosed": true. Dropped events appear as a "trace.dropped" instant per thread and
// as otherData.dropped_events.
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "core/clock.h"
#include "trace/buffer.h"

namespace recur::trace {
namespace {

using detail::Event;

void append_escaped(std::string& out, const char* s) {
  out += '"';
  for (; s && *s; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += char(c);
    }
  }
  out += '"';
}

// µs with ns precision, as Chrome's and Perfetto's JSON importers read them.
std::string micros(int64_t ns) { return fmt::format("{}.{:03d}", ns / 1000, int(ns % 1000)); }

struct OpenZone {
  const SourceLocation* loc;
  int64_t begin_ns;
  std::string args;  // ,"key":value pairs
};

class Writer {
 public:
  explicit Writer(int pid) : pid_(pid) { out_ = "{\"traceEvents\":[\n"; }

  void thread(const detail::ThreadBuffer& t, uint32_t tid) {
    tid_ = tid;
    if (const char* name = t.name.load(std::memory_order_acquire)) {
      std::string n;
      append_escaped(n, name);
      emit(fmt::format("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}", pid_,
                       tid_, n));
    }
    std::vector<OpenZone> stack;
    std::map<const void*, int64_t> waits, holds;
    std::map<const void*, uint64_t> wait_holder;
    int64_t last_ns = 0;
    for (const auto& chunk : t.chunks) {
      uint32_t n = chunk->count.load(std::memory_order_acquire);
      for (uint32_t i = 0; i < n; ++i) {
        const Event& e = chunk->events[i];
        int64_t ns = ticks_to_ns(e.ticks);
        last_ns = std::max(last_ns, ns);
        switch (e.kind) {
          case EventKind::kZoneBegin:
            stack.push_back({static_cast<const SourceLocation*>(e.ptr), ns, {}});
            break;
          case EventKind::kZoneEnd:
            if (!stack.empty()) {
              complete(stack.back(), ns, false);
              stack.pop_back();
            }
            break;
          case EventKind::kArgInt:
          case EventKind::kArgFloat:
          case EventKind::kArgString:
            if (!stack.empty()) add_arg(stack.back().args, e);
            break;
          case EventKind::kInstant:
            emit(fmt::format("{{\"ph\":\"i\",\"s\":\"t\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{}}}",
                             quoted(static_cast<const char*>(e.ptr)), pid_, tid_, micros(ns)));
            break;
          case EventKind::kCounter: {
            std::string name = quoted(static_cast<const char*>(e.ptr));
            emit(fmt::format("{{\"ph\":\"C\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},\"args\":{{{}:{}}}}}", name,
                             pid_, tid_, micros(ns), name, number(std::bit_cast<double>(e.value))));
            break;
          }
          case EventKind::kFlowStart:
          case EventKind::kFlowStep:
          case EventKind::kFlowEnd: {
            const char* ph = e.kind == EventKind::kFlowStart ? "s" : e.kind == EventKind::kFlowStep ? "t" : "f";
            emit(fmt::format("{{\"ph\":\"{}\",\"cat\":\"flow\",\"name\":{},\"id\":{},\"pid\":{},\"tid\":{},\"ts\":{}{}}}",
                             ph, quoted(static_cast<const char*>(e.ptr)), e.value, pid_, tid_, micros(ns),
                             e.kind == EventKind::kFlowStart ? "" : ",\"bp\":\"e\""));
            break;
          }
          case EventKind::kLockWait:
            waits[e.ptr] = ns;
            wait_holder[e.ptr] = e.value;
            break;
          case EventKind::kLockAcquired: {
            auto w = waits.find(e.ptr);
            const char* lock = static_cast<const TracedMutex*>(e.ptr)->name();
            if (w != waits.end()) {
              emit(lock_event("wait", lock, w->second, ns, fmt::format(",\"holder_tid\":{}", wait_holder[e.ptr])));
              waits.erase(w);
            }
            holds[e.ptr] = ns;
            break;
          }
          case EventKind::kLockReleased: {
            auto h = holds.find(e.ptr);
            if (h != holds.end()) {
              emit(lock_event("hold", static_cast<const TracedMutex*>(e.ptr)->name(), h->second, ns, ""));
              holds.erase(h);
            }
            break;
          }
        }
      }
    }
    while (!stack.empty()) {  // still open: end at the last event seen
      complete(stack.back(), last_ns, true);
      stack.pop_back();
    }
    uint64_t dropped = t.dropped.load(std::memory_order_relaxed);
    if (dropped > 0) {
      total_dropped_ += dropped;
      emit(fmt::format("{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"trace.dropped\",\"pid\":{},\"tid\":{},\"ts\":{},"
                       "\"args\":{{\"count\":{}}}}}",
                       pid_, tid_, micros(last_ns), dropped));
    }
  }

  std::string finish() {
    emit(fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":\"recur\"}}}}",
                     pid_));
    out_ += fmt::format("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"dropped_events\":{}}}}}\n", total_dropped_);
    return std::move(out_);
  }

 private:
  static std::string quoted(const char* s) {
    std::string q;
    append_escaped(q, s);
    return q;
  }
  static std::string number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("null"); }

  void add_arg(std::string& args, const Event& e) {
    args += ',';
    append_escaped(args, static_cast<const char*>(e.ptr));
    args += ':';
    if (e.kind == EventKind::kArgInt) args += fmt::format("{}", int64_t(e.value));
    else if (e.kind == EventKind::kArgFloat) args += number(std::bit_cast<double>(e.value));
    else append_escaped(args, reinterpret_cast<const char*>(uintptr_t(e.value)));
  }

  void complete(const OpenZone& z, int64_t end_ns, bool unclosed) {
    std::string args = z.args;
    if (unclosed) args += ",\"unclosed\":true";
    emit(fmt::format("{{\"ph\":\"X\",\"name\":{},\"cat\":\"zone\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
                     "\"args\":{{\"src\":\"{}:{}\"{}}}}}",
                     quoted(z.loc->name), pid_, tid_, micros(z.begin_ns), micros(end_ns - z.begin_ns),
                     file_name(z.loc->file), z.loc->line, args));
  }

  std::string lock_event(const char* what, const char* lock, int64_t begin, int64_t end, const std::string& extra) {
    return fmt::format("{{\"ph\":\"X\",\"name\":\"{} {}\",\"cat\":\"lock\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
                       "\"args\":{{\"lock\":{}{}}}}}",
                       what, lock, pid_, tid_, micros(begin), micros(end - begin), quoted(lock), extra);
  }

  static const char* file_name(const char* path) {
    const char* slash = std::strrchr(path, '/');
    return slash ? slash + 1 : path;
  }

  void emit(const std::string& event) {
    if (!first_) out_ += ",\n";
    first_ = false;
    out_ += event;
  }

  int pid_;
  uint32_t tid_ = 0;
  bool first_ = true;
  uint64_t total_dropped_ = 0;
  std::string out_;
};

}  // namespace

Result<std::string> chrome_json() {
  detail::Registry& r = detail::registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  Writer w{static_cast<int>(getpid())};
  for (const auto& t : r.threads) w.thread(*t, t->tid);
  return w.finish();
}

Status write_chrome_json(const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(std::string json, chrome_json());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return io_error("{}: cannot open for writing: {}", path, std::strerror(errno));
  bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return io_error("{}: write failed", path);
  return ok_status();
}

}  // namespace recur::trace
