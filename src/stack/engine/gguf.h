// GGUF: the model file format of llama.cpp/ggml (version 3, little-endian), read and written.
//
// Layout: header (magic "GGUF", version, tensor count, metadata count), metadata key/values,
// tensor infos (name, dims innermost-first, ggml type, offset), padding to `general.alignment`
// (default 32), then tensor data. The reader holds the file's bytes (a memory map, or a copy in
// huge-page anonymous memory: core/mapped_file.h FileMemory) and hands out pointers into them; it
// validates every length, type and offset against the file before any tensor is touched, so a
// corrupt or truncated file yields an error naming the tensor or key and the byte offset.
//
// Tensor types read: F32, F16, BF16, Q8_0, I8, I32. recur's W8A8 layout is an I8 weight
// `<name>` [K, N] plus an F32 per-output-channel scale tensor `<name>.scale` [N].
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"

namespace recur::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kVersion = 3;
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;

enum class ValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};
std::string_view value_type_name(ValueType t);

// ggml tensor types (a fact of the format; only those recur reads are named here).
enum class TensorType : uint32_t { kF32 = 0, kF16 = 1, kQ8_0 = 8, kI8 = 24, kI32 = 26, kBF16 = 30 };
// "Q8_0", or "Q4_K (12)"-style names for ggml types recur does not read, "unknown (99)" else.
std::string tensor_type_name(uint32_t type);
bool is_supported_type(uint32_t type);
// The name of a supported type as a static string ("Q8_0"), for trace args.
const char* tensor_type_name_static(TensorType type);
// Elements per block and bytes per block (1 and the element size for plain types).
struct BlockLayout {
  uint32_t elements = 1;
  uint32_t bytes = 4;
};
BlockLayout block_layout(TensorType type);
// Bytes of a tensor with these dims; an error if dims[0] is not a whole number of blocks
// or the size overflows.
Result<uint64_t> tensor_bytes(TensorType type, std::span<const uint64_t> dims);

// A metadata value. Scalars live in the field their type implies; arrays in `items`.
struct Value {
  ValueType type = ValueType::kUint32;
  uint64_t u64 = 0;     // kUint8..kUint64
  int64_t i64 = 0;      // kInt8..kInt64
  double f64 = 0;       // kFloat32, kFloat64
  bool boolean = false;
  std::string str;
  ValueType item_type = ValueType::kUint32;  // arrays
  std::vector<Value> items;

  std::optional<int64_t> as_int() const;    // any integer type that fits
  std::optional<double> as_float() const;   // float or integer types
  const std::string* as_string() const;

  static Value of_u32(uint32_t v);
  static Value of_i32(int32_t v);
  static Value of_u64(uint64_t v);
  static Value of_f32(float v);
  static Value of_bool(bool v);
  static Value of_string(std::string v);
  static Value of_strings(const std::vector<std::string>& v);
  static Value of_f32s(const std::vector<float>& v);
  static Value of_i32s(const std::vector<int32_t>& v);
};

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  // innermost (contiguous) first, as ggml's ne[]
  TensorType type = TensorType::kF32;
  uint64_t offset = 0;         // from the start of the data section
  uint64_t bytes = 0;
  uint64_t info_position = 0;  // where its info record starts in the file, for messages
  const std::byte* data = nullptr;

  uint64_t elements() const;
};

class File {
 public:
  uint32_t version = kVersion;
  uint32_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;  // file position of the data section
  std::vector<std::pair<std::string, Value>> metadata;  // in file order
  std::vector<TensorInfo> tensors;                      // in file order

  const Value* find(std::string_view key) const;
  const TensorInfo* tensor(std::string_view name) const;
  // Typed lookups whose errors name the key and the type found.
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;

  const std::string& source() const { return source_; }
  // The file's bytes (empty when parsed from caller-owned bytes): tensors whose bytes lie in
  // them may have their resident pages released once copied (MappedFile::release_pages).
  const MappedFile& mapping() const { return mapping_; }

  // Files assembled from another format (a Hugging Face checkpoint, hf_checkpoint.h): a tensor
  // whose bytes live elsewhere, checked as parse() checks (a unique name, a supported type, `bytes`
  // equal to what the dims need, data set); `owner` keeps such bytes alive as long as the File.
  Status add_tensor(TensorInfo tensor);
  void keep_alive(std::shared_ptr<const void> owner) { owners_.push_back(std::move(owner)); }

 private:
  friend Result<File> parse(std::span<const std::byte>, std::string_view);
  friend Result<File> read(const std::string&, FileMemory);
  std::string source_;
  std::map<std::string, size_t, std::less<>> key_index_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
  MappedFile mapping_;  // empty when parsed from caller-owned bytes
  std::vector<std::shared_ptr<const void>> owners_;  // add_tensor's bytes
};

// Parses bytes the caller keeps alive; `source` names them in errors.
Result<File> parse(std::span<const std::byte> bytes, std::string_view source);
// Reads (maps, or copies into anonymous memory) and parses a file; the File owns the bytes.
// Every check of parse() applies either way, so a truncated file gives the same error. Maps by
// default, which costs nothing for readers of metadata; load_model() follows the knob
// engine.weights_memory (default anon).
Result<File> read(const std::string& path, FileMemory memory = FileMemory::kMap);

// Builds a GGUF file in memory and writes it. Not thread-safe.
class Writer {
 public:
  explicit Writer(uint32_t alignment = kDefaultAlignment) : alignment_(alignment) {}

  // Replaces an existing key of the same name.
  void set(std::string key, Value value);
  // Copies `data`, which must hold exactly tensor_bytes(type, dims) bytes.
  Status add_tensor(std::string name, TensorType type, std::vector<uint64_t> dims,
                    std::span<const std::byte> data);

  std::vector<std::byte> serialize() const;
  // Header, metadata and tensor infos, padded to the alignment: the bytes before the data.
  std::vector<std::byte> serialize_header() const;
  // Writes to path.tmp and renames, so a crash never leaves half a model behind.
  Status write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<uint64_t> dims;
    std::vector<std::byte> data;
  };
  uint32_t alignment_;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace recur::gguf
