#include "trace/event_table.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

namespace recur::trace {

// ---- StringPool ----

uint64_t StringPool::hash(std::string_view s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = uint64_t(s.size()) * kMul;
  const char* p = s.data();
  size_t n = s.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  // The tail without a variable-length copy: the last 8 bytes (overlapping the loop's words)
  // for strings of 8 or more, else two overlapping 4-byte loads, else three single bytes.
  uint64_t w = 0;
  if (s.size() >= 8) {
    std::memcpy(&w, s.data() + s.size() - 8, 8);
  } else if (n >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    w = lo | uint64_t(hi) << 32;
  } else if (n > 0) {
    w = uint64_t(uint8_t(p[0])) | uint64_t(uint8_t(p[n / 2])) << 8 | uint64_t(uint8_t(p[n - 1])) << 16;
  }
  h = (h ^ w) * kMul;
  h ^= h >> 32;
  return h;
}

StringPool::StringPool() {
  views_.emplace_back();
  slots_.assign(64, 0);
  uint64_t h = hash({});
  slots_[h & 63] = (h & ~uint64_t(0xffffffff)) | 1;
}

void StringPool::grow_index() {
  std::vector<uint64_t> slots(slots_.size() * 2, 0);
  size_t mask = slots.size() - 1;
  for (uint64_t slot : slots_) {
    if (slot == 0) continue;
    uint64_t h = hash(views_[uint32_t(slot) - 1]);
    size_t i = h & mask;
    while (slots[i] != 0) i = (i + 1) & mask;
    slots[i] = slot;
  }
  slots_ = std::move(slots);
}

StringId StringPool::intern(std::string_view s) {
  uint64_t h = hash(s);
  uint64_t tag = h & ~uint64_t(0xffffffff);
  size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  for (uint64_t slot; (slot = slots_[i]) != 0; i = (i + 1) & mask) {
    if ((slot & ~uint64_t(0xffffffff)) == tag && views_[uint32_t(slot) - 1] == s) {
      return StringId(uint32_t(slot) - 1);
    }
  }
  if (s.size() > block_size_ - block_used_) {
    block_size_ = std::max<size_t>(s.size(), 64 * 1024);
    blocks_.emplace_back(new char[block_size_]);
    block_used_ = 0;
  }
  char* dst = blocks_.back().get() + block_used_;
  if (!s.empty()) std::memcpy(dst, s.data(), s.size());
  block_used_ += s.size();
  text_bytes_ += s.size();
  StringId id = StringId(views_.size());
  views_.emplace_back(dst, s.size());
  slots_[i] = tag | (uint64_t(id) + 1);
  if (views_.size() * 2 > slots_.size()) grow_index();
  return id;
}

std::optional<StringId> StringPool::find(std::string_view s) const {
  uint64_t h = hash(s);
  uint64_t tag = h & ~uint64_t(0xffffffff);
  size_t mask = slots_.size() - 1;
  for (size_t i = h & mask; slots_[i] != 0; i = (i + 1) & mask) {
    uint64_t slot = slots_[i];
    if ((slot & ~uint64_t(0xffffffff)) == tag && views_[uint32_t(slot) - 1] == s) {
      return StringId(uint32_t(slot) - 1);
    }
  }
  return std::nullopt;
}

// ---- EventTable ----

const Arg* EventTable::find_arg(size_t i, std::string_view key) const {
  auto id = strings_.find(key);
  if (!id) return nullptr;
  for (size_t k = args_begin(i), e = args_end(i); k < e; ++k) {
    if (args_[k].key == *id) return &args_[k];
  }
  return nullptr;
}

std::optional<int64_t> EventTable::int_arg(size_t i, std::string_view key) const {
  const Arg* a = find_arg(i, key);
  if (a == nullptr) return std::nullopt;
  switch (a->type) {
    case ArgType::kInt: return a->i;
    case ArgType::kUint: return int64_t(a->u);
    case ArgType::kDouble: return int64_t(a->d);
    case ArgType::kBool: return int64_t(a->b);
    default: return std::nullopt;
  }
}

Process& EventTable::process(int64_t pid) {
  for (Process& p : processes_) {
    if (p.pid == pid) return p;
  }
  processes_.push_back(Process{.pid = pid});
  return processes_.back();
}

const Process* EventTable::find_process(int64_t pid) const {
  for (const Process& p : processes_) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

uint32_t EventTable::track_for(int64_t pid, int64_t tid) {
  auto key = std::make_pair(pid, tid);
  if (auto it = track_index_.find(key); it != track_index_.end()) return it->second;
  uint32_t id = uint32_t(tracks_.size());
  tracks_.push_back(Track{.pid = pid, .tid = tid});
  track_index_.emplace(key, id);
  process(pid);
  return id;
}

int64_t EventTable::pid_for_label(std::string_view label) {
  std::string key = fmt::format("p\x1f{}", label);
  if (auto it = label_ids_.find(key); it != label_ids_.end()) return it->second;
  int64_t id = next_synthetic_++;
  label_ids_.emplace(std::move(key), id);
  process(id).label = strings_.intern(label);
  return id;
}

int64_t EventTable::tid_for_label(int64_t pid, std::string_view label) {
  std::string key = fmt::format("t\x1f{}\x1f{}", pid, label);
  if (auto it = label_ids_.find(key); it != label_ids_.end()) return it->second;
  int64_t id = next_synthetic_++;
  label_ids_.emplace(std::move(key), id);
  tracks_[track_for(pid, id)].tid_label = strings_.intern(label);
  return id;
}

size_t EventTable::add_event(char phase, StringId name, StringId cat, int64_t ts_ns,
                             int64_t dur_ns, uint32_t track, uint64_t id, uint8_t flags) {
  phase_.push_back(phase);
  name_.push_back(name);
  cat_.push_back(cat);
  ts_.push_back(ts_ns);
  dur_.push_back(dur_ns);
  track_.push_back(track);
  id_.push_back(id);
  flags_.push_back(flags);
  seal_last(uint32_t(args_.size()));
  args_begin_.push_back(uint32_t(args_.size()));
  args_len_.push_back(0);
  sealed_ = false;
  return phase_.size() - 1;
}

void EventTable::seal_last(uint32_t next_begin) {
  if (!sealed_ && !args_begin_.empty()) args_len_.back() = next_begin - args_begin_.back();
  sealed_ = true;
}

void EventTable::reserve(size_t events, size_t args) {
  for_each_column([events](auto& c) { c.reserve(events); });
  args_.reserve(args);
}

size_t EventTable::add_event_with_args(size_t args_begin, char phase, StringId name,
                                       StringId cat, int64_t ts_ns, int64_t dur_ns,
                                       uint32_t track, uint64_t id, uint8_t flags) {
  seal_last(uint32_t(args_begin));
  size_t i = add_event(phase, name, cat, ts_ns, dur_ns, track, id, flags);
  args_begin_.back() = uint32_t(args_begin);
  return i;
}

void EventTable::pop_event() {
  if (phase_.empty()) return;
  if (!sealed_) args_.resize(args_begin_.back());
  sealed_ = true;  // the previous event's length was sealed when this one was added
  for_each_column([](auto& c) { c.pop_back(); });
}

void EventTable::add_arg_int(StringId key, int64_t v) {
  Arg a;
  a.key = key;
  a.type = ArgType::kInt;
  a.i = v;
  args_.push_back(a);
}
void EventTable::add_arg_uint(StringId key, uint64_t v) {
  if (v <= uint64_t(INT64_MAX)) return add_arg_int(key, int64_t(v));
  Arg a;
  a.key = key;
  a.type = ArgType::kUint;
  a.u = v;
  args_.push_back(a);
}
void EventTable::add_arg_double(StringId key, double v) {
  Arg a;
  a.key = key;
  a.type = ArgType::kDouble;
  a.d = v;
  args_.push_back(a);
}
void EventTable::add_arg_bool(StringId key, bool v) {
  Arg a;
  a.key = key;
  a.type = ArgType::kBool;
  a.i = 0;
  a.b = v;
  args_.push_back(a);
}
void EventTable::add_arg_string(StringId key, std::string_view v) {
  Arg a;
  a.key = key;
  a.type = ArgType::kString;
  a.i = 0;
  a.s = strings_.intern(v);
  args_.push_back(a);
}
void EventTable::add_arg_json(StringId key, std::string_view raw) {
  Arg a;
  a.key = key;
  a.type = ArgType::kJson;
  a.i = 0;
  a.s = strings_.intern(raw);
  args_.push_back(a);
}
void EventTable::add_arg_null(StringId key) {
  Arg a;
  a.key = key;
  a.type = ArgType::kNull;
  args_.push_back(a);
}

void EventTable::keep_rows(const std::vector<uint8_t>& keep) {
  seal_last(uint32_t(args_.size()));
  size_t out = 0, n = size();
  for (size_t i = 0; i < n; ++i) {
    if (keep[i]) copy_row(out++, i);
  }
  for_each_column([out](auto& c) { c.resize(out); });
}

void EventTable::sort_by_ts() {
  seal_last(uint32_t(args_.size()));
  size_t n = size();
  if (std::is_sorted(ts_.begin(), ts_.end())) return;
  // Stable by construction: equal timestamps keep insertion order.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [this](uint32_t a, uint32_t b) {
    return ts_[a] < ts_[b] || (ts_[a] == ts_[b] && a < b);
  });
  // Row i becomes old row order[i], applied in place one cycle of the permutation at a time
  // (row n is the spare slot), so no column is copied: fresh pages cost more than the sort on
  // some machines (18 us per 4 KiB page on the project's VM).
  for_each_column([](auto& c) { c.emplace_back(); });
  std::vector<uint64_t> done((n + 63) / 64);
  auto mark = [&](size_t i) { done[i / 64] |= uint64_t(1) << (i % 64); };
  for (size_t start = 0; start < n; ++start) {
    if (done[start / 64] >> (start % 64) & 1) continue;
    mark(start);
    if (order[start] == start) continue;
    copy_row(n, start);
    size_t i = start;
    for (size_t src = order[i]; src != start; i = src, src = order[i]) {
      copy_row(i, src);
      mark(src);
    }
    copy_row(i, n);
  }
  for_each_column([](auto& c) { c.pop_back(); });
}

void EventTable::finalize() {
  seal_last(uint32_t(args_.size()));
  size_t n = size();
  // Pair B/E per track, in ts order (stable, so file order breaks ties).
  std::vector<uint32_t> be;
  for (size_t i = 0; i < n; ++i) {
    if (phase_[i] == 'B' || phase_[i] == 'E') be.push_back(uint32_t(i));
  }
  if (!be.empty()) {
    std::stable_sort(be.begin(), be.end(), [&](uint32_t a, uint32_t b) {
      if (track_[a] != track_[b]) return track_[a] < track_[b];
      return ts_[a] < ts_[b];
    });
    std::vector<uint8_t> keep(n, 1);
    std::vector<uint32_t> open;
    std::vector<int64_t> track_last(tracks_.size(), INT64_MIN);
    for (size_t i = 0; i < n; ++i) {
      int64_t end = ts_[i] + (phase_[i] == 'X' ? std::max<int64_t>(dur_[i], 0) : 0);
      track_last[track_[i]] = std::max(track_last[track_[i]], end);
    }
    std::vector<std::pair<uint32_t, uint32_t>> merges;  // (B, E) whose E args move to B
    auto close_open = [&] {
      // Rule 2: a B still open at the end of its track ends at the track's last timestamp.
      for (uint32_t b : open) {
        phase_[b] = 'X';
        dur_[b] = track_last[track_[b]] - ts_[b];
        ++info_.unclosed_begin_events;
      }
      open.clear();
    };
    uint32_t cur_track = UINT32_MAX;
    for (uint32_t i : be) {
      if (track_[i] != cur_track) {
        close_open();
        cur_track = track_[i];
      }
      if (phase_[i] == 'B') {
        open.push_back(i);
      } else if (open.empty()) {
        // Rule 1: an E with no open B on its track is dropped and counted.
        keep[i] = 0;
        ++info_.unmatched_end_events;
      } else {
        uint32_t b = open.back();
        open.pop_back();
        phase_[b] = 'X';
        dur_[b] = ts_[i] - ts_[b];
        keep[i] = 0;
        if (args_end(i) > args_begin(i)) merges.emplace_back(b, i);
      }
    }
    close_open();
    // Rule 3: the E's args join its B's (appended after the B's own).
    seal_last(uint32_t(args_.size()));
    for (auto [b, e] : merges) {
      uint32_t begin = uint32_t(args_.size());
      for (size_t k = args_begin(b), end = args_end(b); k < end; ++k) args_.push_back(args_[k]);
      for (size_t k = args_begin(e), end = args_end(e); k < end; ++k) args_.push_back(args_[k]);
      args_begin_[b] = begin;
      args_len_[b] = uint32_t(args_.size()) - begin;
    }
    keep_rows(keep);
  }
  sort_by_ts();
  uint64_t dropped = 0;
  for (const Track& t : tracks_) dropped += t.dropped_events;
  info_.dropped_events = std::max(info_.dropped_events, dropped);
}

std::string format_us(int64_t ns) {
  bool neg = ns < 0;
  uint64_t a = neg ? uint64_t(0) - uint64_t(ns) : uint64_t(ns);
  return fmt::format("{}{}.{:03}", neg ? "-" : "", a / 1000, a % 1000);
}

std::string EventTable::describe(size_t i) const {
  const Track& t = tracks_[track_[i]];
  std::string s = fmt::format("{} {} cat={} ts={} dur={} pid={} tid={} id={} flags={}", phase_[i],
                              name(i), cat(i), ts_[i], dur_[i], t.pid, t.tid, id_[i], flags_[i]);
  for (size_t k = args_begin(i), e = args_end(i); k < e; ++k) {
    const Arg& a = args_[k];
    s += fmt::format(" {}=", strings_.str(a.key));
    switch (a.type) {
      case ArgType::kNull: s += "null"; break;
      case ArgType::kBool: s += a.b ? "true" : "false"; break;
      case ArgType::kInt: s += fmt::format("{}", a.i); break;
      case ArgType::kUint: s += fmt::format("{}u", a.u); break;
      case ArgType::kDouble: s += fmt::format("{}d", a.d); break;
      case ArgType::kString: s += fmt::format("\"{}\"", strings_.str(a.s)); break;
      case ArgType::kJson: s += strings_.str(a.s); break;
    }
  }
  return s;
}

void EventTable::append(const EventTable& other, int64_t pid_offset) {
  auto re = [&](StringId id) { return strings_.intern(other.strings_.str(id)); };
  std::vector<uint32_t> track_map(other.tracks_.size());
  for (size_t t = 0; t < other.tracks_.size(); ++t) {
    const Track& src = other.tracks_[t];
    uint32_t id = track_for(src.pid + pid_offset, src.tid);
    Track& dst = tracks_[id];
    if (src.pid_label) dst.pid_label = re(src.pid_label);
    if (src.tid_label) dst.tid_label = re(src.tid_label);
    if (src.thread_name) dst.thread_name = re(src.thread_name);
    if (src.thread_sort_index) dst.thread_sort_index = src.thread_sort_index;
    dst.dropped_events += src.dropped_events;
    track_map[t] = id;
  }
  for (const Process& p : other.processes_) {
    Process& dst = process(p.pid + pid_offset);
    if (p.label) dst.label = re(p.label);
    if (p.name) dst.name = re(p.name);
    if (p.sort_index) dst.sort_index = p.sort_index;
  }
  for (size_t i = 0; i < other.size(); ++i) {
    add_event(other.phase_[i], re(other.name_[i]), re(other.cat_[i]), other.ts_[i], other.dur_[i],
              track_map[other.track_[i]], other.id_[i], other.flags_[i]);
    for (size_t k = other.args_begin(i), e = other.args_end(i); k < e; ++k) {
      Arg a = other.args_[k];
      a.key = re(a.key);
      if (a.type == ArgType::kString || a.type == ArgType::kJson) a.s = re(a.s);
      args_.push_back(a);
    }
  }
  info_.dropped_events += other.info_.dropped_events;
  info_.unmatched_end_events += other.info_.unmatched_end_events;
  info_.unclosed_begin_events += other.info_.unclosed_begin_events;
  info_.invalid_utf8_bytes += other.info_.invalid_utf8_bytes;
}

size_t EventTable::memory_bytes() const {
  size_t per_event = sizeof(char) + 2 * sizeof(StringId) + 2 * sizeof(int64_t) +
                     sizeof(uint32_t) + sizeof(uint64_t) + sizeof(uint8_t) + sizeof(uint32_t);
  return phase_.capacity() * (per_event + sizeof(uint32_t)) + args_.capacity() * sizeof(Arg) + strings_.text_bytes() +
         strings_.size() * (sizeof(std::string_view) + 2 * sizeof(uint64_t));
}

}  // namespace recur::trace
