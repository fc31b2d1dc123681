// Chrome Trace Event JSON writer (chrome_json.h). Formats with fmt into a buffer that is
// flushed to the output every few hundred KiB, so large traces never sit in memory twice.
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "trace/chrome_json.h"
#include "trace/utf8.h"

namespace recur::trace {
namespace {

class JsonOut {
 public:
  explicit JsonOut(OutputFile* out) : out_(out) {}

  fmt::memory_buffer& buf() { return buf_; }
  void raw(std::string_view s) { buf_.append(s); }
  void ch(char c) { buf_.push_back(c); }
  // Separator before each traceEvents element.
  void sep() {
    if (!first_) raw(",\n");
    first_ = false;
  }
  template <typename... Args>
  void f(fmt::format_string<Args...> fs, Args&&... args) {
    fmt::format_to(std::back_inserter(buf_), fs, std::forward<Args>(args)...);
  }
  // A JSON string: quotes, backslashes and control characters escaped, and invalid UTF-8
  // (possible in protobuf input) replaced by U+FFFD so the output is always valid JSON.
  void str(std::string_view s) {
    ch('"');
    size_t run = 0, i = 0;
    while (i < s.size()) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
        ++i;
        continue;
      }
      if (c >= 0x80) {
        size_t len = utf8_sequence_length(s, i);
        if (len > 0) {
          i += len;
          continue;
        }
        buf_.append(s.substr(run, i - run));
        raw("\\ufffd");
        run = ++i;
        continue;
      }
      buf_.append(s.substr(run, i - run));
      switch (c) {
        case '"': raw("\\\""); break;
        case '\\': raw("\\\\"); break;
        case '\n': raw("\\n"); break;
        case '\t': raw("\\t"); break;
        case '\r': raw("\\r"); break;
        default: f("\\u{:04x}", unsigned(c)); break;
      }
      run = ++i;
    }
    buf_.append(s.substr(run));
    ch('"');
  }
  void us(int64_t ns) {
    bool neg = ns < 0;
    uint64_t a = neg ? uint64_t(0) - uint64_t(ns) : uint64_t(ns);
    if (neg) ch('-');
    f("{}.{:03}", a / 1000, a % 1000);
  }
  void dbl(double d) {
    if (std::isfinite(d)) {
      // Shortest round-trip text; keep it a floating-point literal so it reads back as one.
      size_t start = buf_.size();
      f("{}", d);
      std::string_view text(buf_.data() + start, buf_.size() - start);
      if (text.find_first_of(".eE") == std::string_view::npos) raw(".0");
    } else {
      raw("null");  // JSON has no inf/nan
    }
  }
  Status maybe_flush() {
    if (buf_.size() < (256u << 10)) return ok_status();
    return flush();
  }
  Status flush() {
    if (out_ == nullptr) return ok_status();
    Status s = out_->write(std::string_view(buf_.data(), buf_.size()));
    buf_.clear();
    return s;
  }

 private:
  OutputFile* out_;
  fmt::memory_buffer buf_;
  bool first_ = true;
};

void write_pid(JsonOut& o, const EventTable& t, int64_t pid) {
  const Process* p = t.find_process(pid);
  if (p != nullptr && (p->label != 0 || pid >= kSyntheticIdBase)) {
    o.str(t.str(p->label));
  } else {
    o.f("{}", pid);
  }
}

void write_tid(JsonOut& o, const EventTable& t, const Track& tr) {
  if (tr.tid_label != 0 || tr.tid >= kSyntheticIdBase) {
    o.str(t.str(tr.tid_label));
  } else {
    o.f("{}", tr.tid);
  }
}

void write_arg_value(JsonOut& o, const EventTable& t, const Arg& a) {
  switch (a.type) {
    case ArgType::kNull: o.raw("null"); break;
    case ArgType::kBool: o.raw(a.b ? "true" : "false"); break;
    case ArgType::kInt: o.f("{}", a.i); break;
    case ArgType::kUint: o.f("{}", a.u); break;
    case ArgType::kDouble: o.dbl(a.d); break;
    case ArgType::kString: o.str(t.str(a.s)); break;
    case ArgType::kJson: o.raw(t.str(a.s)); break;
  }
}

void write_meta(JsonOut& o, const EventTable& t, std::string_view name, int64_t pid,
                const Track* tr, std::string_view key, auto write_value) {
  o.sep();
  o.raw("{\"ph\":\"M\",\"name\":");
  o.str(name);
  o.raw(",\"pid\":");
  write_pid(o, t, pid);
  o.raw(",\"tid\":");
  if (tr != nullptr) {
    write_tid(o, t, *tr);
  } else {
    o.ch('0');
  }
  o.raw(",\"args\":{");
  o.str(key);
  o.ch(':');
  write_value();
  o.raw("}}");
}

Status write_all(const EventTable& t, JsonOut& o) {
  const TraceInfo& info = t.info();
  o.raw("{\"displayTimeUnit\":\"ns\"");
  if (!info.distributed_info_json.empty()) {
    o.raw(",\"distributedInfo\":");
    o.raw(info.distributed_info_json);
  }
  o.f(",\"recurDroppedEvents\":{}", info.dropped_events);
  o.raw(",\"traceEvents\":[\n");
  for (const Process& p : t.processes()) {
    if (p.name != 0) {
      write_meta(o, t, "process_name", p.pid, nullptr, "name", [&] { o.str(t.str(p.name)); });
    }
    if (p.sort_index) {
      write_meta(o, t, "process_sort_index", p.pid, nullptr, "sort_index",
                 [&] { o.f("{}", *p.sort_index); });
    }
  }
  for (const Track& tr : t.tracks()) {
    if (tr.thread_name != 0) {
      write_meta(o, t, "thread_name", tr.pid, &tr, "name", [&] { o.str(t.str(tr.thread_name)); });
    }
    if (tr.thread_sort_index) {
      write_meta(o, t, "thread_sort_index", tr.pid, &tr, "sort_index",
                 [&] { o.f("{}", *tr.thread_sort_index); });
    }
    if (tr.dropped_events != 0) {
      write_meta(o, t, "recur_dropped_events", tr.pid, &tr, "count",
                 [&] { o.f("{}", tr.dropped_events); });
    }
  }
  for (size_t i = 0; i < t.size(); ++i) {
    const Track& tr = t.tracks()[t.track(i)];
    char ph = t.phase(i);
    o.sep();
    o.raw("{\"ph\":\"");
    if (ph == '"' || ph == '\\' || static_cast<unsigned char>(ph) < 0x20) {
      o.f("\\u{:04x}", unsigned(static_cast<unsigned char>(ph)));
    } else {
      o.ch(ph);
    }
    o.raw("\",\"name\":");
    o.str(t.name(i));
    if (t.cat_id(i) != 0) {
      o.raw(",\"cat\":");
      o.str(t.cat(i));
    }
    o.raw(",\"pid\":");
    write_pid(o, t, tr.pid);
    o.raw(",\"tid\":");
    write_tid(o, t, tr);
    o.raw(",\"ts\":");
    o.us(t.ts_ns(i));
    if (ph == 'X') {
      o.raw(",\"dur\":");
      o.us(t.dur_ns(i));
    }
    uint8_t fl = t.flags(i);
    if (fl & kFlagHasId) o.f(",\"id\":{}", t.id(i));
    if (fl & kFlagBindEnclosing) o.raw(",\"bp\":\"e\"");
    if (fl & kFlagScopeGlobal) o.raw(",\"s\":\"g\"");
    if (fl & kFlagScopeProcess) o.raw(",\"s\":\"p\"");
    size_t b = t.args_begin(i), e = t.args_end(i);
    if (b != e) {
      o.raw(",\"args\":{");
      for (size_t k = b; k < e; ++k) {
        if (k != b) o.ch(',');
        o.str(t.str(t.arg(k).key));
        o.ch(':');
        write_arg_value(o, t, t.arg(k));
      }
      o.ch('}');
    }
    o.ch('}');
    RECUR_RETURN_IF_ERROR(o.maybe_flush());
  }
  o.raw("\n]}\n");
  return o.flush();
}

}  // namespace

Status write_chrome_json(const EventTable& table, OutputFile& out) {
  JsonOut o(&out);
  return write_all(table, o);
}

std::string chrome_json_string(const EventTable& table) {
  JsonOut o(nullptr);
  (void)write_all(table, o);
  return std::string(o.buf().data(), o.buf().size());
}

}  // namespace recur::trace
