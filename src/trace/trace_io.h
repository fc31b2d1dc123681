// Reading and writing trace files: format detection, gzip, and the byte buffers in between.
//
// read_trace() takes Chrome Trace Event JSON (array or {"traceEvents": [...]} form, Kineto's
// conventions included), the same gzip-compressed (.json.gz, detected by its magic bytes, not
// its name), or Perfetto protobuf as written by write_trace(). write_trace() picks the format
// from the file name: .json or .json.gz -> Chrome JSON, anything else (.pftrace, .pb,
// .perfetto-trace) -> Perfetto protobuf. Errors name the file, the byte offset and what was
// expected. Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "trace/event_table.h"

namespace recur::trace {

// Bytes followed by kPadding readable zero bytes (what simdjson needs past the end).
class PaddedBytes {
 public:
  static constexpr size_t kPadding = 64;
  PaddedBytes() = default;
  explicit PaddedBytes(size_t size);
  // Grows the capacity (keeping contents) to hold at least `size` bytes plus padding.
  void reserve(size_t size);
  void resize(size_t size);  // requires size <= capacity(); re-zeroes the padding
  static PaddedBytes copy_of(std::span<const uint8_t> bytes);

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  std::span<const uint8_t> span() const { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0, capacity_ = 0;
};

enum class TraceFormat { kChromeJson, kPerfetto };

bool is_gzip(std::span<const uint8_t> bytes);
// Inflates one or more concatenated gzip members. `name` prefixes errors.
Result<PaddedBytes> gunzip(std::string_view name, std::span<const uint8_t> bytes);

// Inflates gzip data (one or more concatenated members, trailing zero bytes allowed) a piece
// at a time, so a reader never needs the whole uncompressed text. `bytes` must outlive it.
// Errors name the input, the byte offset in the compressed data and what was expected.
// Not thread-safe.
class GzipReader {
 public:
  GzipReader(std::string_view name, std::span<const uint8_t> bytes);
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Writes up to `max` uncompressed bytes to dst (fewer only at the end); 0 at the end.
  Result<size_t> read(uint8_t* dst, size_t max);
  // The uncompressed size the last member's trailer states (mod 2^32), capped at 1032x the
  // compressed size and 256 MiB: a hint for reservations, not a promise.
  size_t size_hint() const;

 private:
  struct State;
  std::string name_;
  std::span<const uint8_t> bytes_;
  std::unique_ptr<State> z_;
  size_t in_pos_ = 0;
  bool done_ = false;
};

// Reads a whole file into a padded buffer.
Result<PaddedBytes> read_file_bytes(const std::string& path);

// Detects the format of bytes (gzip is inflated first) and parses them. `name` prefixes errors.
Result<EventTable> parse_trace(std::string_view name, PaddedBytes bytes);
Result<EventTable> read_trace(const std::string& path);

// The format write_trace() would use for this path.
TraceFormat format_for_path(std::string_view path);
// Writes `table` to `path` (".gz" suffix: gzip-compressed).
Status write_trace(const EventTable& table, const std::string& path);
Status write_trace(const EventTable& table, const std::string& path, TraceFormat format);

// A sequential output file (plain or gzip). Not thread-safe.
class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  Status open(const std::string& path, bool gzip);
  Status write(std::string_view bytes);
  Status close();

 private:
  std::string path_;
  void* file_ = nullptr;  // FILE* or gzFile
  bool gzip_ = false;
};

}  // namespace recur::trace
