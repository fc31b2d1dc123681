// GGUF reader: bounds-checked parsing of the header, metadata and tensor infos, then validation
// of every tensor's type, size and offset against the file, before any data is used.
#include <cstring>
#include <limits>
#include <set>

#include "engine/gguf.h"

namespace recur::gguf {
namespace {

// Arrays may nest (an array of arrays); deeper than this is treated as hostile input.
constexpr int kMaxArrayDepth = 4;

class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, std::string_view source) : bytes_(bytes), source_(source) {}

  uint64_t position() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  template <typename T>
  Result<T> read(std::string_view what) {
    if (remaining() < sizeof(T))
      return parse_error("{}: byte {}: file ends inside {} (needs {} bytes, {} left)", source_, pos_, what,
                         sizeof(T), remaining());
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  Result<std::string> read_string(std::string_view what) {
    uint64_t at = pos_;
    RECUR_ASSIGN_OR_RETURN(uint64_t len, read<uint64_t>(what));
    if (len > remaining())
      return parse_error("{}: byte {}: {} claims {} bytes but only {} remain", source_, at, what, len, remaining());
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), size_t(len));
    pos_ += len;
    return s;
  }

  Result<Value> read_value(ValueType type, std::string_view key, int depth) {
    Value v;
    v.type = type;
    uint64_t at = pos_;
    switch (type) {
      case ValueType::kUint8: { RECUR_ASSIGN_OR_RETURN(uint8_t x, read<uint8_t>(key)); v.u64 = x; break; }
      case ValueType::kInt8: { RECUR_ASSIGN_OR_RETURN(int8_t x, read<int8_t>(key)); v.i64 = x; break; }
      case ValueType::kUint16: { RECUR_ASSIGN_OR_RETURN(uint16_t x, read<uint16_t>(key)); v.u64 = x; break; }
      case ValueType::kInt16: { RECUR_ASSIGN_OR_RETURN(int16_t x, read<int16_t>(key)); v.i64 = x; break; }
      case ValueType::kUint32: { RECUR_ASSIGN_OR_RETURN(uint32_t x, read<uint32_t>(key)); v.u64 = x; break; }
      case ValueType::kInt32: { RECUR_ASSIGN_OR_RETURN(int32_t x, read<int32_t>(key)); v.i64 = x; break; }
      case ValueType::kUint64: { RECUR_ASSIGN_OR_RETURN(uint64_t x, read<uint64_t>(key)); v.u64 = x; break; }
      case ValueType::kInt64: { RECUR_ASSIGN_OR_RETURN(int64_t x, read<int64_t>(key)); v.i64 = x; break; }
      case ValueType::kFloat32: { RECUR_ASSIGN_OR_RETURN(float x, read<float>(key)); v.f64 = x; break; }
      case ValueType::kFloat64: { RECUR_ASSIGN_OR_RETURN(double x, read<double>(key)); v.f64 = x; break; }
      case ValueType::kBool: {
        RECUR_ASSIGN_OR_RETURN(uint8_t x, read<uint8_t>(key));
        if (x > 1) return parse_error("{}: byte {}: bool '{}' is {}, expected 0 or 1", source_, at, key, x);
        v.boolean = x != 0;
        break;
      }
      case ValueType::kString: { RECUR_ASSIGN_OR_RETURN(v.str, read_string(key)); break; }
      case ValueType::kArray: {
        if (depth >= kMaxArrayDepth)
          return parse_error("{}: byte {}: '{}' nests arrays deeper than {}", source_, at, key, kMaxArrayDepth);
        RECUR_ASSIGN_OR_RETURN(uint32_t item, read<uint32_t>(key));
        if (item > uint32_t(ValueType::kFloat64))
          return parse_error("{}: byte {}: array '{}' has unknown item type {}", source_, at, key, item);
        v.item_type = ValueType(item);
        uint64_t count_at = pos_;
        RECUR_ASSIGN_OR_RETURN(uint64_t count, read<uint64_t>(key));
        // Every item takes at least one byte, so a count beyond the bytes left is a lie; this
        // bounds the allocation before any item is read.
        if (count > remaining())
          return parse_error("{}: byte {}: array '{}' claims {} items but only {} bytes remain", source_, count_at,
                             key, count, remaining());
        v.items.reserve(size_t(count));
        for (uint64_t i = 0; i < count; ++i) {
          RECUR_ASSIGN_OR_RETURN(Value x, read_value(v.item_type, key, depth + 1));
          v.items.push_back(std::move(x));
        }
        break;
      }
      default:
        return parse_error("{}: byte {}: metadata '{}' has unknown value type {}", source_, at, key, uint32_t(type));
    }
    return v;
  }

 private:
  std::span<const std::byte> bytes_;
  std::string_view source_;
  uint64_t pos_ = 0;
};

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

Result<File> parse(std::span<const std::byte> bytes, std::string_view source) {
  File f;
  f.source_ = std::string(source);
  Cursor c(bytes, source);

  RECUR_ASSIGN_OR_RETURN(uint32_t magic, c.read<uint32_t>("the magic number"));
  if (magic != kMagic) return parse_error("{}: byte 0: not a GGUF file (magic {:#010x}, expected \"GGUF\")", source, magic);
  RECUR_ASSIGN_OR_RETURN(f.version, c.read<uint32_t>("the version"));
  if (f.version != 2 && f.version != 3)
    return parse_error("{}: byte 4: GGUF version {} (recur reads versions 2 and 3)", source, f.version);
  RECUR_ASSIGN_OR_RETURN(uint64_t n_tensors, c.read<uint64_t>("the tensor count"));
  RECUR_ASSIGN_OR_RETURN(uint64_t n_kv, c.read<uint64_t>("the metadata count"));
  // A key/value takes at least 13 bytes and a tensor info at least 24: reject impossible counts early.
  if (n_kv > c.remaining() / 13) return parse_error("{}: byte 16: metadata count {} cannot fit in the file", source, n_kv);
  if (n_tensors > c.remaining() / 24) return parse_error("{}: byte 8: tensor count {} cannot fit in the file", source, n_tensors);

  for (uint64_t i = 0; i < n_kv; ++i) {
    uint64_t at = c.position();
    RECUR_ASSIGN_OR_RETURN(std::string key, c.read_string(fmt::format("metadata key #{}", i)));
    RECUR_ASSIGN_OR_RETURN(uint32_t type, c.read<uint32_t>(key));
    if (type > uint32_t(ValueType::kFloat64))
      return parse_error("{}: byte {}: metadata '{}' has unknown value type {}", source, at, key, type);
    RECUR_ASSIGN_OR_RETURN(Value v, c.read_value(ValueType(type), key, 0));
    if (f.key_index_.count(key)) return parse_error("{}: byte {}: metadata key '{}' appears twice", source, at, key);
    f.key_index_.emplace(key, f.metadata.size());
    f.metadata.emplace_back(std::move(key), std::move(v));
  }

  if (const Value* a = f.find("general.alignment")) {
    auto align = a->as_int();
    if (!align || *align <= 0 || *align > (1 << 20) || (*align & (*align - 1)) != 0)
      return parse_error("{}: general.alignment must be a power of two up to 1 MiB", source);
    f.alignment = uint32_t(*align);
  }

  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.info_position = c.position();
    RECUR_ASSIGN_OR_RETURN(t.name, c.read_string(fmt::format("the name of tensor #{}", i)));
    RECUR_ASSIGN_OR_RETURN(uint32_t n_dims, c.read<uint32_t>(t.name));
    if (n_dims == 0 || n_dims > uint32_t(kMaxDims))
      return parse_error("{}: byte {}: tensor '{}' has {} dimensions, expected 1 to {}", source, t.info_position, t.name,
                         n_dims, kMaxDims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      RECUR_ASSIGN_OR_RETURN(uint64_t dim, c.read<uint64_t>(t.name));
      t.dims.push_back(dim);
    }
    RECUR_ASSIGN_OR_RETURN(uint32_t type, c.read<uint32_t>(t.name));
    if (!is_supported_type(type))
      return parse_error("{}: byte {}: tensor '{}' has type {}; recur reads F32, F16, BF16, Q8_0, I8 and I32", source,
                         t.info_position, t.name, tensor_type_name(type));
    t.type = TensorType(type);
    RECUR_ASSIGN_OR_RETURN(t.offset, c.read<uint64_t>(t.name));
    auto bytes_needed = tensor_bytes(t.type, t.dims);
    if (!bytes_needed)
      return parse_error("{}: byte {}: tensor '{}': {}", source, t.info_position, t.name, bytes_needed.error().message());
    t.bytes = *bytes_needed;
    if (f.tensor_index_.count(t.name))
      return parse_error("{}: byte {}: tensor '{}' appears twice", source, t.info_position, t.name);
    f.tensor_index_.emplace(t.name, f.tensors.size());
    f.tensors.push_back(std::move(t));
  }

  f.data_offset = align_up(c.position(), f.alignment);
  const uint64_t file_size = bytes.size();
  if (f.data_offset > file_size && !f.tensors.empty())
    return parse_error("{}: byte {}: file ends before the tensor data section", source, file_size);
  for (TensorInfo& t : f.tensors) {
    if (t.offset % f.alignment != 0)
      return parse_error("{}: byte {}: tensor '{}' data offset {} is not a multiple of the alignment {}", source,
                         t.info_position, t.name, t.offset, f.alignment);
    uint64_t begin = f.data_offset + t.offset;
    if (t.offset > file_size || begin > file_size || t.bytes > file_size - begin)
      return parse_error("{}: tensor '{}' (info at byte {}): data [{}, {}) runs past the end of the file ({} bytes); "
                         "the file is truncated or the tensor's shape is wrong",
                         source, t.name, t.info_position, begin, begin + t.bytes, file_size);
    t.data = bytes.data() + begin;
  }
  return f;
}

Status File::add_tensor(TensorInfo t) {
  if (t.data == nullptr) return invalid_argument("{}: tensor '{}' has no data", source_, t.name);
  if (t.dims.empty() || t.dims.size() > size_t(kMaxDims))
    return invalid_argument("{}: tensor '{}' has {} dimensions, expected 1 to {}", source_, t.name, t.dims.size(), kMaxDims);
  if (!is_supported_type(uint32_t(t.type)))
    return invalid_argument("{}: tensor '{}' has type {}", source_, t.name, tensor_type_name(uint32_t(t.type)));
  RECUR_ASSIGN_OR_RETURN(uint64_t bytes, tensor_bytes(t.type, t.dims));
  if (bytes != t.bytes)
    return invalid_argument("{}: tensor '{}' holds {} bytes, its shape needs {}", source_, t.name, t.bytes, bytes);
  if (tensor_index_.count(t.name)) return invalid_argument("{}: tensor '{}' appears twice", source_, t.name);
  tensor_index_.emplace(t.name, tensors.size());
  tensors.push_back(std::move(t));
  return ok_status();
}

Result<File> read(const std::string& path, FileMemory memory) {
  RECUR_ASSIGN_OR_RETURN(MappedFile mapping, MappedFile::open(path, memory));
  RECUR_ASSIGN_OR_RETURN(File f, parse(mapping.bytes(), path));
  // The bytes move into the File; tensor pointers stay valid because the pages do not move.
  f.mapping_ = std::move(mapping);
  return f;
}

}  // namespace recur::gguf
