// Reading and writing trace files: format detection, gzip, and the byte buffers in between.
//
// read_trace() takes Chrome Trace Event JSON (array or {"traceEvents": [...]} form, Kineto's
// conventions included), the same gzip-compressed (.json.gz, detected by its magic bytes, not
// its name), or Perfetto protobuf as written by write_trace(). write_trace() picks the format
// from the file name: .json or .json.gz -> Chrome JSON, anything else (.pftrace, .pb,
// .perfetto-trace) -> Perfetto protobuf. Errors name the file, the byte offset and what was
// expected. Only regular files are read (a directory, a FIFO or /dev/zero is refused by name),
// and gzip input may inflate only up to ReadLimits (a gzip bomb is refused, not inflated).
// Thread-safe (no shared state).
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

// What a reader may take in. Deflate expands up to 1032:1, so a few MB of gzip can stand for
// terabytes: the uncompressed size is capped. Real traces compress 5-20x (Kineto JSON ~10x),
// so the default cap, 100x the compressed size but at least 256 MiB and at most 4 GiB, never
// stops one in practice and stops a bomb after at most 4 GiB of inflating (a 3 MB bomb after
// 300 MiB). max_trace_bytes (CLI: --max-trace-bytes) replaces the rule with a fixed cap.
struct ReadLimits {
  uint64_t max_trace_bytes = 0;  // 0: the default rule above
  // The cap for this much compressed input.
  uint64_t inflate_limit(size_t compressed_bytes) const;
};
inline constexpr uint64_t kMinDefaultInflateLimit = uint64_t(256) << 20;
inline constexpr uint64_t kMaxDefaultInflateLimit = uint64_t(4) << 30;
inline constexpr uint64_t kDefaultInflateRatio = 100;

bool is_gzip(std::span<const uint8_t> bytes);
// Inflates one or more concatenated gzip members. `name` prefixes errors.
Result<PaddedBytes> gunzip(std::string_view name, std::span<const uint8_t> bytes, const ReadLimits& limits = {});

// Bytes read a piece at a time (an inflating gzip stream, a file), so a reader holds a window
// of the input, never all of it. Not thread-safe.
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Writes up to `max` bytes to dst (fewer only at the end); 0 at the end.
  virtual Result<size_t> read(uint8_t* dst, size_t max) = 0;
  // About how many bytes the whole stream holds: a hint for reservations, not a promise.
  virtual size_t size_hint() const = 0;
};

// Inflates gzip data (one or more concatenated members, trailing zero bytes allowed) a piece
// at a time, so a reader never needs the whole uncompressed text. `bytes` must outlive it.
// Errors name the input, the byte offset in the compressed data and what was expected; more
// uncompressed bytes than `limits` allow is an error naming the limit. Not thread-safe.
class GzipReader final : public ByteStream {
 public:
  GzipReader(std::string_view name, std::span<const uint8_t> bytes, const ReadLimits& limits = {});
  ~GzipReader() override;
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  Result<size_t> read(uint8_t* dst, size_t max) override;
  // The uncompressed size the last member's trailer states (mod 2^32), capped at 1032x the
  // compressed size and 256 MiB.
  size_t size_hint() const override;

 private:
  struct State;
  std::string name_;
  std::span<const uint8_t> bytes_;
  std::unique_ptr<State> z_;
  size_t in_pos_ = 0;
  uint64_t out_total_ = 0, out_limit_ = 0;
  bool done_ = false;
};

// A regular file read from its start, a piece at a time. open() refuses anything else (a
// directory, a FIFO, a device) with an error naming the path and what it is.
class FileStream final : public ByteStream {
 public:
  static Result<std::unique_ptr<FileStream>> open(const std::string& path);
  ~FileStream() override;
  FileStream(const FileStream&) = delete;
  FileStream& operator=(const FileStream&) = delete;

  Result<size_t> read(uint8_t* dst, size_t max) override;
  // The size stat gave when the file was opened (a file still being written may grow).
  size_t size_hint() const override { return size_; }
  // Back to the first byte.
  Status rewind();

 private:
  FileStream(std::string path, int fd, size_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_;
  size_t size_;
};

// Reads a whole regular file into a padded buffer; anything else (a directory, a FIFO, a
// device) is an error naming the path and what it is.
Result<PaddedBytes> read_file_bytes(const std::string& path);

// Detects the format of bytes (gzip is inflated first) and parses them. `name` prefixes errors.
Result<EventTable> parse_trace(std::string_view name, PaddedBytes bytes, const ReadLimits& limits = {});
// The same for a file. Plain Chrome JSON is parsed as it is read, through a window of a few
// hundred KiB: peak memory is the table, not the file plus the table (a 1 GB trace would
// otherwise need 1 GB more). Gzip and Perfetto files are read whole (gzip is then inflated a
// window at a time).
Result<EventTable> read_trace(const std::string& path, const ReadLimits& limits = {});

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
