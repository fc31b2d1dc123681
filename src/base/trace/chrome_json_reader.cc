// Chrome Trace Event JSON reader (chrome_json.h): top-level structure by JsonScanner, events by
// simdjson On-Demand, one batch of whole events at a time.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <functional>
#include <vector>

#include <simdjson.h>

#include "core/cpu_features.h"
#include "trace/chrome_json.h"
#include "trace/json_scan.h"
#include "trace/utf8.h"

#ifndef RECUR_JSON_READER_NS
#define RECUR_JSON_READER_NS json_fallback
#endif

namespace recur::trace {

#ifndef RECUR_JSON_READER_VARIANT
namespace {

bool all_eight_digits(uint64_t v) {
  return ((v & 0xF0F0F0F0F0F0F0F0ull) | (((v + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) ==
         0x3333333333333333ull;
}

// Eight ASCII digits (little-endian load) as a number: three multiplies (simdjson's SWAR).
uint64_t eight_digits(uint64_t v) {
  v -= 0x3030303030303030ull;
  v = v * 10 + (v >> 8);
  v = ((v & 0x000000FF000000FFull) * 0x000F424000000064ull +
       ((v >> 16) & 0x000000FF000000FFull) * 0x0000271000000001ull) >> 32;
  return v;
}

bool is_digit(char c) { return uint8_t(c - '0') < 10; }

}  // namespace

bool parse_us_to_ns(std::string_view text, int64_t* ns) {
  const char* p = text.data();
  const char* end = p + text.size();
  while (end > p && (end[-1] == ' ' || end[-1] == '\n' || end[-1] == '\r' || end[-1] == '\t')) --end;
  bool neg = p < end && *p == '-';
  p += neg;
  // One pass over the integer digits, eight at a time while they last. Past 16 digits the
  // value is rejected below (it may wrap here).
  const char* int_begin = p;
  uint64_t ip = 0;
  while (end - p >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    if (!all_eight_digits(v)) break;
    ip = ip * 100000000 + eight_digits(v);
    p += 8;
  }
  while (p < end && is_digit(*p)) ip = ip * 10 + uint64_t(*p++ - '0');
  size_t int_digits = size_t(p - int_begin);
  if (int_digits == 0) return false;
  // Up to three fraction digits are exact ns; the fourth rounds half up; the rest are skipped.
  uint64_t frac = 0;
  if (p < end && *p == '.') {
    ++p;
    int k = 0;
    for (; k < 3 && p < end && is_digit(*p); ++k) frac = frac * 10 + uint64_t(*p++ - '0');
    if (k == 0) return false;
    for (; k < 3; ++k) frac *= 10;
    if (p < end && is_digit(*p) && *p >= '5') ++frac;
    while (p < end && is_digit(*p)) ++p;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    // Rare: fall back to double precision.
    std::string tmp(text.data(), size_t(end - text.data()));
    errno = 0;
    char* stop = nullptr;
    double d = std::strtod(tmp.c_str(), &stop);
    if (stop != tmp.c_str() + tmp.size() || errno == ERANGE || !std::isfinite(d)) return false;
    double v = d * 1000.0;
    if (std::fabs(v) >= 4.6e18) return false;
    *ns = int64_t(std::llround(v));
    return true;
  }
  if (p != end) return false;
  // |ns| < 2^62 (|µs| < 4.6e15, past the year 2100 in epoch µs), so ts + dur never overflows.
  if (int_digits > 16 || ip >= uint64_t((int64_t(1) << 62) / 1000)) return false;
  int64_t v = int64_t(ip * 1000 + frac);
  *ns = neg ? -v : v;
  return true;
}
#endif

namespace RECUR_JSON_READER_NS {

namespace sj = simdjson::ondemand;

namespace {

constexpr size_t kBatchBytes = 64 << 10;
// A streaming read inflates or reads this much at a time (more for a longer event or value).
constexpr size_t kWindowBytes = 4 * kBatchBytes;

// Per-thread scratch kept across parses: simdjson's parser (its index and string buffer, sized
// for one batch), the padded copy of the batch and a streaming read's window. Reusing them
// spares each read paging in fresh memory, which costs more than parsing it on some machines.
// About 0.5 MiB per thread (0.9 MiB after a streaming read: gzip, or a file).
struct Scratch {
  sj::parser parser;
  PaddedBytes batch;
  PaddedBytes window;
};
Scratch& thread_scratch() {
  thread_local Scratch s;
  return s;
}

const char* json_type_name(sj::json_type t) {
  switch (t) {
    case sj::json_type::array: return "array";
    case sj::json_type::object: return "object";
    case sj::json_type::number: return "number";
    case sj::json_type::string: return "string";
    case sj::json_type::boolean: return "boolean";
    case sj::json_type::null: return "null";
  }
  return "value";
}

// A key of up to four bytes and its length packed into an integer, for a switch.
constexpr uint64_t key_code(std::string_view k) {
  uint64_t c = k.size();
  for (size_t i = 0; i < k.size() && i < 4; ++i) c |= uint64_t(uint8_t(k[i])) << (8 + 8 * i);
  return c;
}

// An id ("id" field): numbers as is, strings as hex ("0x1f") or decimal, other strings hashed.
uint64_t id_from_string(std::string_view s) {
  uint64_t v = 0;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    auto r = std::from_chars(s.data() + 2, s.data() + s.size(), v, 16);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return v;
  }
  auto r = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return v;
  return std::hash<std::string_view>{}(s);
}

// Reads Chrome JSON from a whole buffer, or from a stream (gzip, a file) through a window: data_ and
// size_ are the bytes in memory, positions are relative to them, and win_base_ is the offset of
// data_[0] in the input (error messages add it). Only parse_events() drops consumed bytes from
// the window (between batches); elsewhere more() only appends, so positions stay valid.
class Reader {
 public:
  Reader(std::string_view name, const PaddedBytes& json, Scratch& scratch)
      : name_(name),
        data_(json.data()),
        size_(json.size()),
        scan_(json.data(), json.size()),
        parser_(scratch.parser),
        batch_(scratch.batch),
        window_(scratch.window),
        size_hint_(json.size()) {}
  Reader(std::string_view name, ByteStream& in, Scratch& scratch)
      : name_(name),
        data_(nullptr),
        size_(0),
        scan_(nullptr, 0),
        parser_(scratch.parser),
        batch_(scratch.batch),
        window_(scratch.window),
        in_(&in),
        eof_(false),
        size_hint_(in.size_hint()) {
    window_.resize(0);
    sync();
  }

  Result<EventTable> run() {
    // Kineto spends about 220 bytes per event and 55 per arg; reserving from the input size
    // avoids regrowing (and copying) the columns. Untouched reservations cost no memory.
    table_.reserve(size_hint_ / 128 + 16, size_hint_ / 32 + 16);
    while (size_ < 3) {
      RECUR_ASSIGN_OR_RETURN(bool got, more());
      if (!got) break;
    }
    size_t pos = 0;
    if (size_ >= 3 && data_[0] == 0xEF && data_[1] == 0xBB && data_[2] == 0xBF) pos = 3;
    RECUR_ASSIGN_OR_RETURN(pos, ws(pos));
    if (pos >= size_) return fail(pos, "expected '[' or '{{' to start a Chrome trace (empty input)");
    if (data_[pos] == '[') {
      RECUR_ASSIGN_OR_RETURN(pos, parse_events(pos, /*array_form=*/true));
      RECUR_ASSIGN_OR_RETURN(pos, ws(pos));
      if (pos < size_) return fail(pos, "expected end of input after the event array");
    } else if (data_[pos] == '{') {
      RECUR_RETURN_IF_ERROR(parse_top_object(pos));
    } else {
      return fail(pos, "expected '[' or '{{' to start a Chrome trace");
    }
    table_.finalize();
    return std::move(table_);
  }

 private:
  // Errors take window positions; the message gives the offset in the input.
  template <typename... Args>
  unexpected<Error> fail(size_t offset, fmt::format_string<Args...> f, Args&&... args) {
    return parse_error("{}: byte {}: {}", name_, abs(offset),
                       fmt::format(f, std::forward<Args>(args)...));
  }
  size_t abs(size_t pos) const { return win_base_ + pos; }

  // ---- the window (streaming reads only; a whole buffer is at its end from the start) ----

  void sync() {
    data_ = window_.data();
    size_ = window_.size();
    scan_ = JsonScanner(data_, size_);
  }

  // Appends more input to the window; false at the end of the input.
  Result<bool> more() {
    if (eof_) return false;
    size_t old = window_.size();
    window_.reserve(old + std::max(kWindowBytes, old));
    RECUR_ASSIGN_OR_RETURN(size_t got, in_->read(window_.data() + old, window_.capacity() - old));
    if (got == 0) eof_ = true;
    window_.resize(old + got);
    sync();
    return got != 0;
  }

  // Makes the window hold `bytes` past *cur (or all that is left), first dropping what lies
  // before *cur. Only called where *cur is the one live position.
  Status ensure(size_t* cur, size_t bytes) {
    if (eof_ || size_ - *cur >= bytes) return ok_status();
    if (*cur > 0) {
      std::memmove(window_.data(), window_.data() + *cur, size_ - *cur);
      window_.resize(size_ - *cur);
      win_base_ += *cur;
      *cur = 0;
      sync();
    }
    while (size_ - *cur < bytes) {
      RECUR_ASSIGN_OR_RETURN(bool got, more());
      if (!got) break;
    }
    return ok_status();
  }

  // skip_ws, string_end and value_end of the scanner, reading more while the answer runs into
  // the end of the window.
  Result<size_t> ws(size_t pos) {
    while (true) {
      size_t p = scan_.skip_ws(pos);
      if (p < size_ || eof_) return p;
      RECUR_RETURN_IF_ERROR(more());
    }
  }
  Result<size_t> string_end(size_t pos) {
    while (true) {
      size_t e = scan_.string_end(pos);
      if (e < size_ || eof_) return e;
      RECUR_RETURN_IF_ERROR(more());
    }
  }
  Result<size_t> value_end(size_t pos) {
    while (true) {
      size_t e = scan_.value_end(pos);
      if (e < size_ || eof_) return e;
      RECUR_RETURN_IF_ERROR(more());
    }
  }

  Status parse_top_object(size_t pos) {
    size_t open = abs(pos);
    RECUR_ASSIGN_OR_RETURN(pos, ws(pos + 1));
    if (pos < size_ && data_[pos] == '}') {
      RECUR_ASSIGN_OR_RETURN(pos, ws(pos + 1));
      if (pos < size_) return fail(pos, "expected end of input after the top-level object");
      return ok_status();
    }
    while (true) {
      if (pos >= size_) return fail(pos, "unexpected end of input: expected a key or '}}' (object opened at byte {})", open);
      if (data_[pos] != '"') return fail(pos, "expected '\"' to start a key");
      RECUR_ASSIGN_OR_RETURN(size_t kend, string_end(pos));
      if (kend > size_) return fail(size_, "unexpected end of input inside a key (opened at byte {})", abs(pos));
      // A copy: reading more input may move the window.
      std::string key(reinterpret_cast<const char*>(data_ + pos + 1), kend - pos - 2);
      RECUR_ASSIGN_OR_RETURN(pos, ws(kend));
      if (pos >= size_ || data_[pos] != ':') return fail(pos, "expected ':' after key \"{}\"", key);
      RECUR_ASSIGN_OR_RETURN(pos, ws(pos + 1));
      if (pos >= size_) return fail(pos, "unexpected end of input: expected a value for \"{}\"", key);
      if (key == "traceEvents") {
        if (data_[pos] != '[') return fail(pos, "expected '[' for \"traceEvents\"");
        RECUR_ASSIGN_OR_RETURN(pos, parse_events(pos, false));
      } else {
        RECUR_ASSIGN_OR_RETURN(size_t vend, value_end(pos));
        if (vend > size_) return fail(size_, "unexpected end of input inside the value of \"{}\" (starts at byte {})", key, abs(pos));
        if (key == "distributedInfo") {
          RECUR_RETURN_IF_ERROR(parse_distributed_info(pos, vend));
        } else if (key == "recurDroppedEvents") {
          int64_t v = 0;
          auto r = std::from_chars(reinterpret_cast<const char*>(data_ + pos),
                                   reinterpret_cast<const char*>(data_ + vend), v);
          if (r.ec != std::errc() || v < 0) return fail(pos, "expected a non-negative integer for \"recurDroppedEvents\"");
          table_.info().dropped_events = uint64_t(v);
        }
        pos = vend;
      }
      RECUR_ASSIGN_OR_RETURN(pos, ws(pos));
      if (pos >= size_) return fail(pos, "unexpected end of input: expected ',' or '}}' (object opened at byte {})", open);
      if (data_[pos] == '}') {
        RECUR_ASSIGN_OR_RETURN(pos, ws(pos + 1));
        if (pos < size_) return fail(pos, "expected end of input after the top-level object");
        return ok_status();
      }
      if (data_[pos] != ',') return fail(pos, "expected ',' or '}}' after the value of \"{}\"", key);
      RECUR_ASSIGN_OR_RETURN(pos, ws(pos + 1));
    }
  }

  Status parse_distributed_info(size_t b, size_t e) {
    std::string_view raw(reinterpret_cast<const char*>(data_ + b), e - b);
    if (raw.empty() || raw[0] != '{') return fail(b, "expected an object for \"distributedInfo\"");
    simdjson::padded_string padded(raw);
    sj::document doc;
    if (auto err = parser_.iterate(padded).get(doc)) return sj_fail(b, err, "distributedInfo");
    sj::object obj;
    if (auto err = doc.get_object().get(obj)) return sj_fail(b, err, "distributedInfo");
    for (auto fr : obj) {
      sj::field f;
      if (auto err = std::move(fr).get(f)) return sj_fail(b, err, "distributedInfo");
      std::string_view k;
      if (auto err = f.unescaped_key().get(k)) return sj_fail(b, err, "distributedInfo");
      if (k == "rank" || k == "world_size") {
        int64_t v;
        if (f.value().get_int64().get(v)) return fail(b, "expected an integer for distributedInfo.{}", k);
        (k == "rank" ? table_.info().rank : table_.info().world_size) = v;
      }
    }
    table_.info().distributed_info_json = std::string(raw);
    return ok_status();
  }

  Status sj_fail(size_t offset, simdjson::error_code err, std::string_view where) {
    return fail(offset, "invalid JSON in {}: {}", where, simdjson::error_message(err));
  }

  // pos at '['; returns the position after the closing ']'.
  Result<size_t> parse_events(size_t pos, bool array_form) {
    size_t open = abs(pos);
    size_t cur = pos + 1;
    while (true) {
      RECUR_RETURN_IF_ERROR(ensure(&cur, 2 * kBatchBytes));
      RECUR_ASSIGN_OR_RETURN(cur, ws(cur));
      if (cur >= size_) {
        // Recovery: the array form may omit its closing ']' (Chrome's convention for traces
        // written while the program runs).
        if (array_form) return cur;
        return fail(cur, "unexpected end of input: expected ']' to close \"traceEvents\" (opened at byte {})", open);
      }
      if (data_[cur] == ']') return cur + 1;
      JsonScanner::Scan s = scan_.scan(cur, cur + kBatchBytes);
      // An event longer than the window: read more and scan again (the window doubles).
      while (s.stop == JsonScanner::Stop::kEof && !eof_) {
        RECUR_RETURN_IF_ERROR(more());
        s = scan_.scan(cur, cur + kBatchBytes);
      }
      size_t batch_end;
      if (s.stop == JsonScanner::Stop::kEof) {
        size_t tail = s.last_element_end;
        if (tail > 0) tail = scan_.skip_ws(tail);
        bool clean = !s.eof_in_string && s.last_element_end > 0;
        if (clean) {
          size_t t = tail;
          while (t < size_ && (data_[t] == ',' || data_[t] == ' ' || data_[t] == '\n' ||
                               data_[t] == '\r' || data_[t] == '\t')) {
            ++t;
          }
          clean = t == size_;
        }
        if (!(array_form && clean)) {
          size_t elem = s.last_element_end > 0 ? scan_.skip_ws(s.last_element_end) : cur;
          if (elem < size_ && data_[elem] == ',') elem = scan_.skip_ws(elem + 1);
          return fail(size_, "unexpected end of input{}: expected {} (the event starting at byte {} is truncated; the event array opened at byte {})",
                      s.eof_in_string ? " inside a string" : "",
                      s.eof_in_string ? "'\"'" : "'}' or ']'", abs(elem), open);
        }
        batch_end = s.last_element_end;
      } else {
        batch_end = s.pos;
      }
      RECUR_RETURN_IF_ERROR(parse_batch(cur, batch_end));
      if (s.stop == JsonScanner::Stop::kContainerEnd) return s.pos + 1;
      if (s.stop == JsonScanner::Stop::kEof) return size_;
      RECUR_ASSIGN_OR_RETURN(cur, ws(batch_end));
      if (cur >= size_) {
        if (array_form) return cur;
        return fail(cur, "unexpected end of input: expected ',' or ']' after an event (array opened at byte {})", open);
      }
      if (data_[cur] == ']') return cur + 1;
      if (data_[cur] != ',') return fail(cur, "expected ',' or ']' after an event");
      ++cur;
    }
  }

  // Parses the events in [b, e) (whole elements separated by commas).
  Status parse_batch(size_t b, size_t e) {
    size_t len = e - b;
    batch_.resize(len + 2);
    batch_.data()[0] = '[';
    std::memcpy(batch_.data() + 1, data_ + b, len);
    batch_.data()[len + 1] = ']';
    batch_base_ = b;
    replaced_at_.clear();
    sj::document doc;
    auto err = parser_.iterate(reinterpret_cast<const char*>(batch_.data()), batch_.size(),
                               batch_.capacity() + PaddedBytes::kPadding).get(doc);
    if (err == simdjson::UTF8_ERROR) {
      // Rare: invalid bytes become U+FFFD (noted with their offsets), and the batch is parsed again.
      replace_invalid_utf8();
      err = parser_.iterate(reinterpret_cast<const char*>(batch_.data()), batch_.size(),
                            batch_.capacity() + PaddedBytes::kPadding).get(doc);
    }
    if (err) return fail(b, "invalid JSON: {}", simdjson::error_message(err));
    sj::array arr;
    if (auto err = doc.get_array().get(arr)) return doc_fail(doc, b, err, "an event array");
    for (auto er : arr) {
      sj::value ev;
      if (auto err = er.get(ev)) return doc_fail(doc, b, err, "an event object, or ',' or ']' after an event");
      RECUR_RETURN_IF_ERROR(parse_event(doc, ev));
    }
    return ok_status();
  }

  // Rewrites the batch with each invalid UTF-8 byte replaced by U+FFFD (3 bytes), remembering
  // where, so offset_of() still maps batch positions to input offsets.
  void replace_invalid_utf8() {
    std::string_view in(reinterpret_cast<const char*>(batch_.data()), batch_.size());
    std::string out;
    out.reserve(in.size() + 64);
    TraceInfo& info = table_.info();
    size_t i = 0;
    while (i < in.size()) {
      if (uint8_t(in[i]) < 0x80) {
        out += in[i++];
      } else if (size_t len = utf8_sequence_length(in, i); len > 0) {
        out.append(in.substr(i, len));
        i += len;
      } else {
        replaced_at_.push_back(out.size());
        if (info.invalid_utf8_offsets.size() < TraceInfo::kNotedUtf8Offsets) {
          info.invalid_utf8_offsets.push_back(abs(batch_base_ + i - 1));  // batch byte 0 is the added '['
        }
        ++info.invalid_utf8_bytes;
        out.append(kReplacementCharacter);
        ++i;
      }
    }
    batch_.reserve(out.size());
    std::memcpy(batch_.data(), out.data(), out.size());
    batch_.resize(out.size());
  }

  size_t offset_of(const char* p) const {
    const char* start = reinterpret_cast<const char*>(batch_.data());
    if (p < start + 1 || p > start + batch_.size()) return batch_base_;
    size_t at = size_t(p - start);
    // Each U+FFFD before `at` stands for one input byte: 2 bytes fewer in the input.
    size_t before = size_t(std::lower_bound(replaced_at_.begin(), replaced_at_.end(), at) - replaced_at_.begin());
    return batch_base_ + at - 1 - 2 * before;
  }
  size_t offset_of(sj::value& v) {
    return offset_of(v.raw_json_token().data());
  }

  Status doc_fail(sj::document& doc, size_t fallback, simdjson::error_code err, std::string_view expected) {
    const char* loc = nullptr;
    size_t off = fallback;
    if (!doc.current_location().get(loc)) off = offset_of(loc);
    return fail(off, "expected {} ({})", expected, simdjson::error_message(err));
  }

  Status type_fail(sj::value& v, std::string_view key, std::string_view expected) {
    sj::json_type t;
    std::string got = v.type().get(t) ? "invalid JSON" : json_type_name(t);
    // The right kind of value that still did not parse ("tru", "\u12"): show the text.
    if (got == "invalid JSON" || expected.ends_with(got)) {
      std::string_view raw = v.raw_json_token();
      while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t')) {
        raw.remove_suffix(1);
      }
      got = fmt::format("invalid JSON `{}`", raw.substr(0, 40));
    }
    return fail(offset_of(v), "expected {} for \"{}\", got {}", expected, key, got);
  }

  struct IdValue {
    bool present = false;
    bool is_string = false;
    int64_t num = 0;
    std::string_view text;
  };

  Status read_pid_tid(sj::value& v, std::string_view key, IdValue* out) {
    sj::json_type t;
    if (v.type().get(t)) return type_fail(v, key, "an integer or a string");
    out->present = true;
    if (t == sj::json_type::string) {
      out->is_string = true;
      if (v.get_string().get(out->text)) return type_fail(v, key, "a string");
      return ok_status();
    }
    if (t != sj::json_type::number) return type_fail(v, key, "an integer or a string");
    int64_t n;
    if (!v.get_int64().get(n)) {
      out->num = n;
      return ok_status();
    }
    double d;
    if (v.get_double().get(d) || !std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9e15) {
      return type_fail(v, key, "an integer");
    }
    out->num = int64_t(d);
    return ok_status();
  }

  Status read_time(sj::value& v, std::string_view key, int64_t* ns) {
    sj::json_type t;
    if (v.type().get(t) || t != sj::json_type::number) return type_fail(v, key, "a number (µs)");
    if (!parse_us_to_ns(v.raw_json_token(), ns)) {
      return fail(offset_of(v), "expected a number of µs for \"{}\" below 2^62 ns (|{}| < 4.6e15)", key, key);
    }
    return ok_status();
  }

  Status read_string(sj::value& v, std::string_view key, std::string_view* out) {
    if (v.get_string().get(*out)) return type_fail(v, key, "a string");
    return ok_status();
  }

  Status read_args(sj::value& v) {
    sj::object obj;
    if (v.get_object().get(obj)) return type_fail(v, "args", "an object");
    for (auto fr : obj) {
      sj::field f;
      if (auto err = std::move(fr).get(f)) return fail(offset_of(v), "expected an args member ({})", simdjson::error_message(err));
      std::string_view k;
      if (auto err = f.unescaped_key().get(k)) return fail(offset_of(v), "expected an args key ({})", simdjson::error_message(err));
      StringId key = intern(k);
      sj::value val = f.value();
      sj::json_type t;
      if (auto err = val.type().get(t)) return fail(offset_of(v), "expected a value for args.{} ({})", k, simdjson::error_message(err));
      switch (t) {
        case sj::json_type::number: {
          sj::number_type nt;
          if (val.get_number_type().get(nt)) return type_fail(val, k, "a number");
          if (nt == sj::number_type::signed_integer) {
            int64_t x;
            if (val.get_int64().get(x)) return type_fail(val, k, "an integer");
            table_.add_arg_int(key, x);
          } else if (nt == sj::number_type::unsigned_integer) {
            uint64_t x;
            if (val.get_uint64().get(x)) return type_fail(val, k, "an integer");
            table_.add_arg_uint(key, x);
          } else {
            double x;
            if (val.get_double().get(x)) return type_fail(val, k, "a number");
            table_.add_arg_double(key, x);
          }
          break;
        }
        case sj::json_type::string: {
          std::string_view s;
          if (val.get_string().get(s)) return type_fail(val, k, "a string");
          table_.add_arg_string(key, s);
          break;
        }
        case sj::json_type::boolean: {
          bool b;
          if (val.get_bool().get(b)) return type_fail(val, k, "a boolean");
          table_.add_arg_bool(key, b);
          break;
        }
        case sj::json_type::null: {
          bool is_null = false;
          if (val.is_null().get(is_null) || !is_null) return type_fail(val, k, "null");
          table_.add_arg_null(key);
          break;
        }
        case sj::json_type::array: {
          sj::array a;
          std::string_view raw;
          if (val.get_array().get(a) || a.raw_json().get(raw)) return type_fail(val, k, "an array");
          table_.add_arg_json(key, raw);
          break;
        }
        case sj::json_type::object: {
          sj::object o;
          std::string_view raw;
          if (val.get_object().get(o) || o.raw_json().get(raw)) return type_fail(val, k, "an object");
          table_.add_arg_json(key, raw);
          break;
        }
      }
    }
    return ok_status();
  }

  StringId intern(std::string_view s) { return table_.strings().intern(s); }

  uint32_t track(const IdValue& pid_v, const IdValue& tid_v, int64_t* pid_out) {
    int64_t pid = pid_v.is_string ? table_.pid_for_label(pid_v.text) : pid_v.num;
    int64_t tid = tid_v.is_string ? table_.tid_for_label(pid, tid_v.text) : tid_v.num;
    *pid_out = pid;
    if (pid == last_pid_ && tid == last_tid_) return last_track_;
    last_pid_ = pid;
    last_tid_ = tid;
    last_track_ = table_.track_for(pid, tid);
    return last_track_;
  }

  Status parse_event(sj::document& doc, sj::value& ev) {
    sj::object obj;
    if (ev.get_object().get(obj)) return type_fail(ev, "traceEvents[]", "an event object");
    size_t event_offset = offset_of(ev);
    size_t args_begin = table_.arg_count();
    std::string_view ph, name, cat, bp, scope;
    IdValue pid, tid, id;
    int64_t ts = 0, dur = 0;
    bool has_ts = false, has_dur = false;
    for (auto fr : obj) {
      sj::field f;
      if (auto err = std::move(fr).get(f)) return doc_fail(doc, event_offset, err, "an event member (\"key\": value)");
      std::string_view k;
      if (auto err = f.unescaped_key().get(k)) return doc_fail(doc, event_offset, err, "an event key");
      sj::value v = f.value();
      if (k.size() > 4) {
        continue;  // "tdur", "bind_id", ... are not kept
      }
      switch (key_code(k)) {
        case key_code("ph"):
          RECUR_RETURN_IF_ERROR(read_string(v, k, &ph));
          break;
        case key_code("name"):
          RECUR_RETURN_IF_ERROR(read_string(v, k, &name));
          break;
        case key_code("cat"):
          RECUR_RETURN_IF_ERROR(read_string(v, k, &cat));
          break;
        case key_code("ts"):
          RECUR_RETURN_IF_ERROR(read_time(v, k, &ts));
          has_ts = true;
          break;
        case key_code("dur"):
          RECUR_RETURN_IF_ERROR(read_time(v, k, &dur));
          if (dur < 0) return fail(offset_of(v), "expected a non-negative \"dur\", got {} ns", dur);
          has_dur = true;
          break;
        case key_code("pid"):
          RECUR_RETURN_IF_ERROR(read_pid_tid(v, k, &pid));
          break;
        case key_code("tid"):
          RECUR_RETURN_IF_ERROR(read_pid_tid(v, k, &tid));
          break;
        case key_code("id"): {
          sj::json_type t;
          if (v.type().get(t)) return type_fail(v, k, "an integer or a string");
          id.present = true;
          if (t == sj::json_type::string) {
            std::string_view s;
            if (v.get_string().get(s)) return type_fail(v, k, "a string");
            id.num = int64_t(id_from_string(s));
          } else {
            uint64_t u;
            int64_t i;
            if (!v.get_uint64().get(u)) {
              id.num = int64_t(u);
            } else if (!v.get_int64().get(i)) {
              id.num = i;
            } else {
              return type_fail(v, k, "an integer or a string");
            }
          }
          break;
        }
        case key_code("bp"):
          RECUR_RETURN_IF_ERROR(read_string(v, k, &bp));
          break;
        case key_code("s"):
          RECUR_RETURN_IF_ERROR(read_string(v, k, &scope));
          break;
        case key_code("args"):
          RECUR_RETURN_IF_ERROR(read_args(v));
          break;
        default:
          break;
      }
    }
    if (ph.size() != 1) {
      if (ph.empty()) return fail(event_offset, "expected a \"ph\" (phase) member in the event");
      return fail(event_offset, "expected a one-character \"ph\", got \"{}\"", ph);
    }
    char phase = ph[0];
    if (!has_ts && phase != 'M') return fail(event_offset, "expected a \"ts\" member in the '{}' event", phase);
    (void)has_dur;
    int64_t pid_num = 0;
    uint32_t tr = track(pid, tid, &pid_num);
    if (phase == 'M' && handle_metadata(name, pid_num, tr, args_begin)) {
      table_.truncate_args(args_begin);
      return ok_status();
    }
    uint8_t flags = 0;
    if (id.present) flags |= kFlagHasId;
    if (bp == "e") flags |= kFlagBindEnclosing;
    if (scope == "g") flags |= kFlagScopeGlobal;
    if (scope == "p") flags |= kFlagScopeProcess;
    table_.add_event_with_args(args_begin, phase, intern(name), intern(cat), ts,
                               phase == 'X' ? dur : 0, tr, uint64_t(id.num), flags);
    return ok_status();
  }

  // process_name, process_sort_index, thread_name, thread_sort_index and recur_dropped_events
  // become track/process fields; other M events stay rows.
  bool handle_metadata(std::string_view name, int64_t pid, uint32_t tr, size_t args_begin) {
    const Arg* name_arg = nullptr;
    const Arg* num_arg = nullptr;
    auto key_name = table_.strings().find("name");
    auto key_sort = table_.strings().find("sort_index");
    auto key_count = table_.strings().find("count");
    for (size_t k = args_begin; k < table_.arg_count(); ++k) {
      const Arg& a = table_.arg(k);
      if (key_name && a.key == *key_name && a.type == ArgType::kString) name_arg = &a;
      if (((key_sort && a.key == *key_sort) || (key_count && a.key == *key_count)) &&
          (a.type == ArgType::kInt || a.type == ArgType::kUint)) {
        num_arg = &a;
      }
    }
    if (name == "process_name" && name_arg) {
      table_.process(pid).name = name_arg->s;
    } else if (name == "thread_name" && name_arg) {
      table_.tracks()[tr].thread_name = name_arg->s;
    } else if (name == "process_sort_index" && num_arg) {
      table_.process(pid).sort_index = num_arg->i;
    } else if (name == "thread_sort_index" && num_arg) {
      table_.tracks()[tr].thread_sort_index = num_arg->i;
    } else if (name == "recur_dropped_events" && num_arg) {
      table_.tracks()[tr].dropped_events = uint64_t(num_arg->i);
    } else {
      return false;
    }
    return true;
  }

  std::string name_;
  const uint8_t* data_;
  size_t size_;
  JsonScanner scan_;
  EventTable table_;
  sj::parser& parser_;
  PaddedBytes& batch_;
  PaddedBytes& window_;
  ByteStream* in_ = nullptr;
  bool eof_ = true;
  size_t win_base_ = 0;
  size_t size_hint_;
  size_t batch_base_ = 0;  // window position of the batch being parsed
  std::vector<size_t> replaced_at_;  // batch positions of the U+FFFD replace_invalid_utf8() wrote
  int64_t last_pid_ = INT64_MIN, last_tid_ = INT64_MIN;
  uint32_t last_track_ = 0;
};

}  // namespace

Result<EventTable> parse_chrome_json_impl(std::string_view name, const PaddedBytes& json) {
  Reader r(name, json, thread_scratch());
  return r.run();
}

Result<EventTable> parse_chrome_json_stream_impl(std::string_view name, ByteStream& in) {
  Reader r(name, in, thread_scratch());
  return r.run();
}

}  // namespace RECUR_JSON_READER_NS

#ifndef RECUR_JSON_READER_VARIANT
namespace json_haswell {
Result<EventTable> parse_chrome_json_impl(std::string_view name, const PaddedBytes& json);
Result<EventTable> parse_chrome_json_stream_impl(std::string_view name, ByteStream& in);
}  // namespace json_haswell

namespace {
bool use_haswell() {
  static const bool haswell = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
                              __builtin_cpu_supports("pclmul");
  return haswell && active_isa() >= Isa::kAvx2;
}
}  // namespace

// simdjson's On-Demand code is inlined, so its SIMD level is fixed at compile time: the
// haswell copy (chrome_json_reader_avx2.cc) runs where the CPU has AVX2, BMI2 and PCLMUL and
// recur's ISA level allows AVX2 (RECUR_ISA=scalar forces the portable copy).
Result<EventTable> parse_chrome_json(std::string_view name, const PaddedBytes& json) {
  if (use_haswell()) return json_haswell::parse_chrome_json_impl(name, json);
  return json_fallback::parse_chrome_json_impl(name, json);
}

Result<EventTable> parse_chrome_json_gzip(std::string_view name, std::span<const uint8_t> gz,
                                          const ReadLimits& limits) {
  GzipReader reader(name, gz, limits);
  return parse_chrome_json_stream(name, reader);
}

Result<EventTable> parse_chrome_json_stream(std::string_view name, ByteStream& in) {
  if (use_haswell()) return json_haswell::parse_chrome_json_stream_impl(name, in);
  return json_fallback::parse_chrome_json_stream_impl(name, in);
}
#endif

}  // namespace recur::trace
