// EventTable: a trace held as columns, the one shape every reader produces and every writer,
// the CLI and the analyses consume.
//
// Why columns: a Kineto trace holds 10^5 events with a handful of fields each; keeping each
// field in its own vector (interned names, 64-bit ns times, a track id) makes scans cheap and
// keeps memory small. Per event: phase ('X' complete, 'i' instant, 'C' counter, 's'/'t'/'f'
// flow start/step/end, 'M' other metadata, and whatever else a foreign trace holds), name and
// category (interned), ts_ns and dur_ns (ns), the track (one per pid/tid pair), an id (flow
// or async id, 0 if none), flags, and args (key/value pairs, keys and strings interned).
// Per track: pid, tid, names and sort indices; per trace: distributedInfo and drop counts.
//
// Building: add_track(), add_event(), then add_arg_*() for that event; finalize() pairs B/E
// events into X events (documented recovery for unbalanced ones, see docs/trace.md) and sorts
// events by ts (stable). Not thread-safe: one thread builds, then any number may read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace recur::trace {

// Index into a StringPool. 0 is always the empty string.
using StringId = uint32_t;

// Interns strings: equal strings get equal ids; views stay valid for the pool's lifetime.
class StringPool {
 public:
  StringPool();
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;

  StringId intern(std::string_view s);
  std::optional<StringId> find(std::string_view s) const;
  std::string_view str(StringId id) const { return views_[id]; }
  size_t size() const { return views_.size(); }
  // Bytes held by the pool's text (not counting the index).
  size_t text_bytes() const { return text_bytes_; }

 private:
  static uint64_t hash(std::string_view s);
  void grow_index();

  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_used_ = 0, block_size_ = 0;
  size_t text_bytes_ = 0;
  std::vector<std::string_view> views_;
  // Open addressing, linear probing, at most half full: a slot holds the string's id + 1 (0 =
  // empty) in its low 32 bits and the high half of its hash (a cheap filter) in the upper 32.
  // A multiply-xor hash over 8-byte words; several times faster than std::unordered_map with
  // std::hash on the short names and longer JSON args traces hold.
  std::vector<uint64_t> slots_;
};

enum class ArgType : uint8_t { kNull, kBool, kInt, kUint, kDouble, kString, kJson };

// One argument. Integers are kInt unless above INT64_MAX (then kUint), whichever way they
// were recorded or read, so every format reads back the same type. kString and kJson values are interned (kJson holds raw JSON text: an array or
// object arg of a foreign trace, e.g. Kineto's "Input Dims").
struct Arg {
  StringId key = 0;
  ArgType type = ArgType::kNull;
  union {
    bool b;
    int64_t i;
    uint64_t u;
    double d;
    StringId s;
  };
  Arg() : i(0) {}
};

// A Kineto trace holds about 2.5 args per event (15 M in 1 GB): 16 bytes each is a quarter of
// the table (issue #24: a 1 GB trace analyzes in at most 1.5x its size).
static_assert(sizeof(Arg) == 16, "Arg: keep it 16 bytes; a larger arg grows every trace's table");

// Event flags.
inline constexpr uint8_t kFlagBindEnclosing = 1;  // flow event with "bp":"e"
inline constexpr uint8_t kFlagHasId = 2;          // "id" was present
inline constexpr uint8_t kFlagScopeGlobal = 4;    // instant with "s":"g"
inline constexpr uint8_t kFlagScopeProcess = 8;   // instant with "s":"p"

// A pid/tid pair. String pids/tids (Kineto's "Spans", "Traces") get synthetic numbers at or
// above kSyntheticIdBase and keep their text in *_label.
struct Track {
  int64_t pid = 0;
  int64_t tid = 0;
  StringId pid_label = 0;
  StringId tid_label = 0;
  StringId thread_name = 0;
  std::optional<int64_t> thread_sort_index;
  uint64_t dropped_events = 0;  // events the recorder could not keep on this thread
};

struct Process {
  int64_t pid = 0;
  StringId label = 0;  // string pid text, if the pid was a string
  StringId name = 0;
  std::optional<int64_t> sort_index;
};

inline constexpr int64_t kSyntheticIdBase = int64_t(1) << 30;

struct TraceInfo {
  std::optional<int64_t> rank;        // distributedInfo.rank
  std::optional<int64_t> world_size;  // distributedInfo.world_size
  std::string distributed_info_json;  // the whole distributedInfo object, raw JSON ("" if none)
  uint64_t dropped_events = 0;        // total over all tracks
  // finalize()'s recovery counts for unbalanced B/E (docs/trace.md).
  uint64_t unmatched_end_events = 0;
  uint64_t unclosed_begin_events = 0;
  // Invalid UTF-8 bytes the JSON reader replaced by U+FFFD, and the input byte offsets of the
  // first kNotedUtf8Offsets of them (offsets do not survive append(); counts add up).
  uint64_t invalid_utf8_bytes = 0;
  std::vector<uint64_t> invalid_utf8_offsets;
  static constexpr size_t kNotedUtf8Offsets = 8;
};

class EventTable {
 public:
  EventTable() = default;
  EventTable(EventTable&&) = default;
  EventTable& operator=(EventTable&&) = default;

  size_t size() const { return phase_.size(); }
  char phase(size_t i) const { return phase_[i]; }
  StringId name_id(size_t i) const { return name_[i]; }
  StringId cat_id(size_t i) const { return cat_[i]; }
  std::string_view name(size_t i) const { return strings_.str(name_[i]); }
  std::string_view cat(size_t i) const { return strings_.str(cat_[i]); }
  int64_t ts_ns(size_t i) const { return ts_[i]; }
  int64_t dur_ns(size_t i) const { return dur_[i]; }
  uint32_t track(size_t i) const { return track_[i]; }
  int64_t pid(size_t i) const { return tracks_[track_[i]].pid; }
  int64_t tid(size_t i) const { return tracks_[track_[i]].tid; }
  uint64_t id(size_t i) const { return id_[i]; }
  uint8_t flags(size_t i) const { return flags_[i]; }
  size_t args_begin(size_t i) const { return args_begin_[i]; }
  size_t args_end(size_t i) const {
    return i + 1 == size() && !sealed_ ? args_.size() : args_begin_[i] + args_len_[i];
  }
  const Arg& arg(size_t k) const { return args_[k]; }
  // The arg of event i with this key, or nullptr.
  const Arg* find_arg(size_t i, std::string_view key) const;
  // A numeric arg as int64 (kInt, kUint, kDouble truncated, kBool), if present.
  std::optional<int64_t> int_arg(size_t i, std::string_view key) const;

  StringPool& strings() { return strings_; }
  const StringPool& strings() const { return strings_; }
  std::string_view str(StringId id) const { return strings_.str(id); }
  const std::vector<Track>& tracks() const { return tracks_; }
  std::vector<Track>& tracks() { return tracks_; }
  const std::vector<Process>& processes() const { return processes_; }
  std::vector<Process>& processes() { return processes_; }
  const TraceInfo& info() const { return info_; }
  TraceInfo& info() { return info_; }

  // Finds or adds the track for pid/tid (and the process for pid).
  uint32_t track_for(int64_t pid, int64_t tid);
  // Synthetic ids for string pids/tids; the same text always maps to the same id.
  int64_t pid_for_label(std::string_view label);
  int64_t tid_for_label(int64_t pid, std::string_view label);
  // The process entry for pid (added if missing).
  Process& process(int64_t pid);
  const Process* find_process(int64_t pid) const;

  // Appends an event; args added next belong to it.
  size_t add_event(char phase, StringId name, StringId cat, int64_t ts_ns, int64_t dur_ns,
                   uint32_t track, uint64_t id = 0, uint8_t flags = 0);
  // Same, for a reader that parsed the event's args before knowing its other fields: the
  // event takes the args from index `args_begin` (arg_count() when it started) to the end.
  size_t add_event_with_args(size_t args_begin, char phase, StringId name, StringId cat,
                             int64_t ts_ns, int64_t dur_ns, uint32_t track, uint64_t id,
                             uint8_t flags);
  size_t arg_count() const { return args_.size(); }
  void truncate_args(size_t n) { args_.resize(n); }
  void add_arg(const Arg& a) { args_.push_back(a); }
  void add_arg_int(StringId key, int64_t v);
  void add_arg_uint(StringId key, uint64_t v);
  void add_arg_double(StringId key, double v);
  void add_arg_bool(StringId key, bool v);
  void add_arg_string(StringId key, std::string_view v);
  void add_arg_json(StringId key, std::string_view raw);
  void add_arg_null(StringId key);
  // Turns event i into a complete ('X') event of this duration (readers that pair begin/end
  // events themselves).
  void complete_event(size_t i, int64_t dur_ns) {
    phase_[i] = 'X';
    dur_[i] = dur_ns;
  }
  // Drops the last event and its args (a reader decided it was metadata after all).
  void pop_event();

  // Pairs B/E into X per track (LIFO), applies the recovery rules of docs/trace.md, sorts by
  // ts (stable) and sums dropped_events. Idempotent.
  void finalize();

  // One line per event, for tests and debugging: "X name cat ts=.. dur=.. pid=.. tid=.. ...".
  std::string describe(size_t i) const;

  // Appends every event, track and process of `other`, re-interning its strings, and moving
  // its pids by pid_offset (merge of several ranks).
  void append(const EventTable& other, int64_t pid_offset);

  // Reserves room for about this many events and args (readers size it from the input; only
  // what is used is ever touched, so over-reserving costs address space, not memory).
  void reserve(size_t events, size_t args);

  // Approximate heap bytes held (columns, args, strings).
  size_t memory_bytes() const;

 private:
  // Calls f on every per-event column (not args_).
  template <typename F>
  void for_each_column(F&& f) {
    f(phase_);
    f(name_);
    f(cat_);
    f(ts_);
    f(dur_);
    f(track_);
    f(id_);
    f(flags_);
    f(args_begin_);
    f(args_len_);
  }
  void copy_row(size_t dst, size_t src) {
    for_each_column([dst, src](auto& c) { c[dst] = c[src]; });
  }
  void keep_rows(const std::vector<uint8_t>& keep);
  void seal_last(uint32_t next_begin);
  void sort_by_ts();

  StringPool strings_;
  std::vector<char> phase_;
  std::vector<StringId> name_, cat_;
  std::vector<int64_t> ts_, dur_;
  std::vector<uint32_t> track_;
  std::vector<uint64_t> id_;
  std::vector<uint8_t> flags_;
  // Event i's args are args_[args_begin_[i], + args_len_[i]); the last event, until the next
  // add_event() or finalize() seals it, owns everything to the end of args_.
  std::vector<uint32_t> args_begin_;
  std::vector<uint32_t> args_len_;
  bool sealed_ = true;
  std::vector<Arg> args_;
  std::vector<Track> tracks_;
  std::vector<Process> processes_;
  TraceInfo info_;
  std::map<std::pair<int64_t, int64_t>, uint32_t> track_index_;
  std::unordered_map<std::string, int64_t> label_ids_;
  int64_t next_synthetic_ = kSyntheticIdBase;
};

// Formats ns as Chrome-trace µs with the ns fraction: 1234567 -> "1234.567".
std::string format_us(int64_t ns);

}  // namespace recur::trace
