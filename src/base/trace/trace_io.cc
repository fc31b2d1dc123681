#include "trace/trace_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "trace/chrome_json.h"
#include "trace/perfetto.h"

namespace recur::trace {

// ---- PaddedBytes ----

PaddedBytes::PaddedBytes(size_t size) {
  reserve(size);
  resize(size);
}

void PaddedBytes::reserve(size_t size) {
  if (size <= capacity_ && data_) return;
  auto* p = static_cast<uint8_t*>(std::realloc(data_.get(), size + kPadding));
  if (p == nullptr) throw std::bad_alloc();
  (void)data_.release();
  data_.reset(p);
  capacity_ = size;
  // Zero the padding; the room below it is written before it is read (resize() zeroes the
  // padding after the new size), so it is left untouched, not paged in.
  std::memset(p + capacity_, 0, kPadding);
}

void PaddedBytes::resize(size_t size) {
  if (size > capacity_ || !data_) reserve(size);
  size_ = size;
  std::memset(data_.get() + size_, 0, kPadding);
}

PaddedBytes PaddedBytes::copy_of(std::span<const uint8_t> bytes) {
  PaddedBytes b(bytes.size());
  if (!bytes.empty()) std::memcpy(b.data(), bytes.data(), bytes.size());
  return b;
}

// ---- gzip ----

bool is_gzip(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

uint64_t ReadLimits::inflate_limit(size_t compressed_bytes) const {
  if (max_trace_bytes > 0) return max_trace_bytes;
  uint64_t scaled = uint64_t(compressed_bytes) * kDefaultInflateRatio;
  return std::clamp(scaled, kMinDefaultInflateLimit, kMaxDefaultInflateLimit);
}

struct GzipReader::State {
  z_stream z{};
  bool ok = false;
};

GzipReader::GzipReader(std::string_view name, std::span<const uint8_t> bytes, const ReadLimits& limits)
    : name_(name), bytes_(bytes), z_(std::make_unique<State>()), out_limit_(limits.inflate_limit(bytes.size())) {
  z_->ok = inflateInit2(&z_->z, 16 + MAX_WBITS) == Z_OK;
}

GzipReader::~GzipReader() {
  if (z_->ok) inflateEnd(&z_->z);
}

size_t GzipReader::size_hint() const {
  size_t guess = bytes_.size() * 4;
  if (bytes_.size() >= 18) {
    uint32_t isize;
    std::memcpy(&isize, bytes_.data() + bytes_.size() - 4, 4);
    if (isize >= bytes_.size()) guess = isize;
  }
  // ISIZE is only a hint (a forged one must not reserve gigabytes): deflate expands at most
  // 1032:1.
  return std::min({guess, bytes_.size() * 1032, size_t(256) << 20});
}

Result<size_t> GzipReader::read(uint8_t* dst, size_t max) {
  if (!z_->ok) return internal_error("{}: inflateInit2 failed", name_);
  z_stream& z = z_->z;
  // One byte past the limit may be inflated: that is how going over it is seen.
  max = size_t(std::min<uint64_t>(max, out_limit_ + 1 - out_total_));
  size_t out = 0;
  while (out < max && !done_) {
    z.next_in = const_cast<Bytef*>(bytes_.data() + in_pos_);
    size_t in_avail = std::min<size_t>(bytes_.size() - in_pos_, 1u << 30);
    z.avail_in = uInt(in_avail);
    size_t out_avail = std::min<size_t>(max - out, 1u << 30);
    z.next_out = dst + out;
    z.avail_out = uInt(out_avail);
    int rc = inflate(&z, Z_NO_FLUSH);
    in_pos_ += in_avail - z.avail_in;
    out += out_avail - z.avail_out;
    if (rc == Z_STREAM_END) {
      // Another member may follow; trailing zero bytes (tape padding) are ignored.
      size_t rest = in_pos_;
      while (rest < bytes_.size() && bytes_[rest] == 0) ++rest;
      if (rest == bytes_.size()) {
        done_ = true;
        break;
      }
      if (!is_gzip(bytes_.subspan(rest))) {
        return parse_error("{}: byte {}: expected a gzip member (1f 8b) or end of file after the "
                           "gzip stream", name_, rest);
      }
      in_pos_ = rest;
      inflateReset(&z);
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && in_pos_ == bytes_.size()) {
      return parse_error("{}: byte {}: truncated gzip data: expected more compressed data or the "
                         "gzip trailer", name_, in_pos_);
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      std::string msg = z.msg != nullptr ? z.msg : zError(rc);
      return parse_error("{}: byte {}: bad gzip data ({}): expected a valid deflate stream", name_,
                         in_pos_, msg);
    }
  }
  out_total_ += out;
  if (out_total_ > out_limit_) {
    return make_error(ErrorCode::kFailedPrecondition, "{}: inflates to more than {} bytes ({} compressed bytes; a gzip bomb?): "
                              "the limit for this file (--max-trace-bytes raises it)",
                              name_, out_limit_, bytes_.size());
  }
  return out;
}

Result<PaddedBytes> gunzip(std::string_view name, std::span<const uint8_t> bytes, const ReadLimits& limits) {
  GzipReader gz(name, bytes, limits);
  PaddedBytes out;
  // One byte more than the hint: read() sees the end of the stream without a second, larger
  // buffer when the hint is exact (the usual case).
  out.reserve(std::max<size_t>(gz.size_hint() + 1, 4096));
  size_t size = 0;
  while (true) {
    if (size == out.capacity()) out.reserve(out.capacity() * 2);
    RECUR_ASSIGN_OR_RETURN(size_t got, gz.read(out.data() + size, out.capacity() - size));
    if (got == 0) break;
    size += got;
  }
  out.resize(size);
  return out;
}

// ---- files ----

namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<std::unique_ptr<FileStream>> FileStream::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer before it can be refused.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return io_error("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return io_error("{}: cannot stat: {}", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error("{}: is {}: expected a regular trace file", path, file_kind(st.st_mode));
  }
  return std::unique_ptr<FileStream>(new FileStream(path, fd, size_t(st.st_size)));
}

FileStream::~FileStream() { ::close(fd_); }

Result<size_t> FileStream::read(uint8_t* dst, size_t max) {
  while (true) {
    ssize_t got = ::read(fd_, dst, max);
    if (got >= 0) return size_t(got);
    if (errno != EINTR) return io_error("{}: read failed: {}", path_, std::strerror(errno));
  }
}

Status FileStream::rewind() {
  if (::lseek(fd_, 0, SEEK_SET) != 0) return io_error("{}: cannot seek: {}", path_, std::strerror(errno));
  return ok_status();
}

namespace {

// Reads what is left of the file: up to the size stat gave, then on until end of file (a file
// still being written).
Result<PaddedBytes> read_rest(FileStream& file) {
  PaddedBytes buf(0);
  buf.reserve(std::max<size_t>(4096, file.size_hint() + 1));
  size_t n = 0;
  while (true) {
    if (n == buf.capacity()) buf.reserve(buf.capacity() * 2);
    RECUR_ASSIGN_OR_RETURN(size_t got, file.read(buf.data() + n, buf.capacity() - n));
    if (got == 0) break;
    n += got;
  }
  buf.resize(n);
  return buf;
}

bool is_json_space(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// How a trace's first bytes say it is read.
struct TraceStart {
  bool gzip = false;
  // '{', '[' or a UTF-8 BOM after leading whitespace.
  bool json_like = false;
  // A first byte 0x0a: a Perfetto packet, or JSON after a line break.
  bool proto_like = false;
};

TraceStart trace_start(std::span<const uint8_t> bytes) {
  TraceStart s;
  s.gzip = is_gzip(bytes);
  size_t i = 0;
  while (i < bytes.size() && is_json_space(bytes[i])) ++i;
  s.json_like = i < bytes.size() && (bytes[i] == '{' || bytes[i] == '[' || bytes[i] == 0xEF);
  s.proto_like = !bytes.empty() && bytes[0] == 0x0a;
  return s;
}

// The same from a file's first bytes, read through leading whitespace however long it is.
// Leaves the file anywhere; the caller rewinds it.
Result<TraceStart> trace_start(FileStream& file) {
  std::vector<uint8_t> head(64 << 10);
  size_t n = 0;
  while (n < head.size()) {  // a whole first chunk, so a short first read() cannot mislead
    RECUR_ASSIGN_OR_RETURN(size_t got, file.read(head.data() + n, head.size() - n));
    if (got == 0) break;
    n += got;
  }
  TraceStart s = trace_start(std::span<const uint8_t>(head.data(), n));
  // A first chunk of nothing but whitespace: read on for the first other byte.
  while (n > 0 && !s.json_like && std::all_of(head.begin(), head.begin() + n, is_json_space)) {
    RECUR_ASSIGN_OR_RETURN(n, file.read(head.data(), head.size()));
    size_t i = 0;
    while (i < n && is_json_space(head[i])) ++i;
    s.json_like = i < n && (head[i] == '{' || head[i] == '[' || head[i] == 0xEF);
  }
  return s;
}

}  // namespace

Result<PaddedBytes> read_file_bytes(const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<FileStream> file, FileStream::open(path));
  return read_rest(*file);
}

Result<EventTable> parse_trace(std::string_view name, PaddedBytes bytes, const ReadLimits& limits) {
  // Gzip is inflated while it is parsed: the whole uncompressed text is never in memory.
  if (is_gzip(bytes.span())) return parse_chrome_json_gzip(name, bytes.span(), limits);
  // JSON may start with whitespace, and "\n{" is also a valid start of a Perfetto trace (a
  // 123-byte first packet): text that looks like JSON is read as JSON first, and only if that
  // fails and the bytes could be protobuf is Perfetto tried (its error is reported only when
  // the input cannot be JSON).
  TraceStart start = trace_start(bytes.span());
  if (start.json_like || !start.proto_like) {
    auto json = parse_chrome_json(name, bytes);
    if (json || !start.proto_like) return json;
    auto pb = parse_perfetto(name, bytes.span());
    if (pb) return pb;
    return json;
  }
  return parse_perfetto(name, bytes.span());
}

Result<EventTable> read_trace(const std::string& path, const ReadLimits& limits) {
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<FileStream> file, FileStream::open(path));
  RECUR_ASSIGN_OR_RETURN(TraceStart start, trace_start(*file));
  RECUR_RETURN_IF_ERROR(file->rewind());
  // The same order of attempts as parse_trace(), with plain JSON parsed as it is read.
  if (start.gzip || !(start.json_like || !start.proto_like)) {
    RECUR_ASSIGN_OR_RETURN(PaddedBytes bytes, read_rest(*file));
    return parse_trace(path, std::move(bytes), limits);
  }
  auto json = parse_chrome_json_stream(path, *file);
  if (json || !start.proto_like) return json;
  RECUR_RETURN_IF_ERROR(file->rewind());
  RECUR_ASSIGN_OR_RETURN(PaddedBytes bytes, read_rest(*file));
  auto pb = parse_perfetto(path, bytes.span());
  if (pb) return pb;
  return json;
}

TraceFormat format_for_path(std::string_view path) {
  if (path.ends_with(".json") || path.ends_with(".json.gz")) return TraceFormat::kChromeJson;
  return TraceFormat::kPerfetto;
}

Status write_trace(const EventTable& table, const std::string& path) {
  return write_trace(table, path, format_for_path(path));
}

Status write_trace(const EventTable& table, const std::string& path, TraceFormat format) {
  OutputFile out;
  RECUR_RETURN_IF_ERROR(out.open(path, std::string_view(path).ends_with(".gz")));
  if (format == TraceFormat::kChromeJson) {
    RECUR_RETURN_IF_ERROR(write_chrome_json(table, out));
  } else {
    RECUR_RETURN_IF_ERROR(write_perfetto(table, out));
  }
  return out.close();
}

// ---- OutputFile ----

OutputFile::~OutputFile() { (void)close(); }

Status OutputFile::open(const std::string& path, bool gzip) {
  path_ = path;
  gzip_ = gzip;
  if (gzip) {
    file_ = gzopen(path.c_str(), "wb6");
  } else {
    file_ = std::fopen(path.c_str(), "wb");
  }
  if (file_ == nullptr) return io_error("{}: cannot create: {}", path, std::strerror(errno));
  return ok_status();
}

Status OutputFile::write(std::string_view bytes) {
  if (file_ == nullptr) return io_error("{}: not open", path_);
  if (bytes.empty()) return ok_status();
  if (gzip_) {
    size_t done = 0;
    while (done < bytes.size()) {
      unsigned n = unsigned(std::min<size_t>(bytes.size() - done, 1u << 30));
      if (gzwrite(static_cast<gzFile>(file_), bytes.data() + done, n) != int(n)) {
        return io_error("{}: write failed", path_);
      }
      done += n;
    }
  } else if (std::fwrite(bytes.data(), 1, bytes.size(), static_cast<FILE*>(file_)) !=
             bytes.size()) {
    return io_error("{}: write failed: {}", path_, std::strerror(errno));
  }
  return ok_status();
}

Status OutputFile::close() {
  if (file_ == nullptr) return ok_status();
  int rc = gzip_ ? gzclose(static_cast<gzFile>(file_)) : std::fclose(static_cast<FILE*>(file_));
  file_ = nullptr;
  if (rc != 0) return io_error("{}: close failed", path_);
  return ok_status();
}

}  // namespace recur::trace
