// GGUF writer: metadata and tensors laid out as the reader expects, data aligned.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "engine/gguf.h"

namespace recur::gguf {
namespace {

class Sink {
 public:
  template <typename T>
  void put(T v) {
    append(&v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    append(s.data(), s.size());
  }
  // resize + memcpy rather than insert: g++ 12 warns falsely (-Wstringop-overflow) on the latter.
  void append(const void* p, size_t n) {
    size_t at = out.size();
    out.resize(at + n);
    if (n) std::memcpy(out.data() + at, p, n);
  }
  void put_value(const Value& v) {
    switch (v.type) {
      case ValueType::kUint8: put<uint8_t>(uint8_t(v.u64)); break;
      case ValueType::kInt8: put<int8_t>(int8_t(v.i64)); break;
      case ValueType::kUint16: put<uint16_t>(uint16_t(v.u64)); break;
      case ValueType::kInt16: put<int16_t>(int16_t(v.i64)); break;
      case ValueType::kUint32: put<uint32_t>(uint32_t(v.u64)); break;
      case ValueType::kInt32: put<int32_t>(int32_t(v.i64)); break;
      case ValueType::kUint64: put<uint64_t>(v.u64); break;
      case ValueType::kInt64: put<int64_t>(v.i64); break;
      case ValueType::kFloat32: put<float>(float(v.f64)); break;
      case ValueType::kFloat64: put<double>(v.f64); break;
      case ValueType::kBool: put<uint8_t>(v.boolean ? 1 : 0); break;
      case ValueType::kString: put_string(v.str); break;
      case ValueType::kArray:
        put<uint32_t>(uint32_t(v.item_type));
        put<uint64_t>(v.items.size());
        for (const Value& item : v.items) put_value(item);
        break;
    }
  }
  void pad_to(uint64_t alignment) {
    while (out.size() % alignment != 0) out.push_back(std::byte{0});
  }
  std::vector<std::byte> out;
};

}  // namespace

void Writer::set(std::string key, Value value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

Status Writer::add_tensor(std::string name, TensorType type, std::vector<uint64_t> dims,
                          std::span<const std::byte> data) {
  if (dims.empty() || dims.size() > size_t(kMaxDims))
    return invalid_argument("tensor '{}': {} dimensions, expected 1 to {}", name, dims.size(), kMaxDims);
  auto bytes = tensor_bytes(type, dims);
  if (!bytes) return invalid_argument("tensor '{}': {}", name, bytes.error().message());
  if (*bytes != data.size())
    return invalid_argument("tensor '{}': {} bytes given, its {} shape needs {}", name, data.size(),
                            tensor_type_name(uint32_t(type)), *bytes);
  for (const auto& t : tensors_)
    if (t.name == name) return invalid_argument("tensor '{}' added twice", name);
  tensors_.push_back({std::move(name), type, std::move(dims), {data.begin(), data.end()}});
  return ok_status();
}

std::vector<std::byte> Writer::serialize_header() const {
  Sink s;
  s.put<uint32_t>(kMagic);
  s.put<uint32_t>(kVersion);
  s.put<uint64_t>(tensors_.size());
  bool has_alignment = false;
  for (const auto& [k, v] : metadata_) has_alignment |= k == "general.alignment";
  s.put<uint64_t>(metadata_.size() + (has_alignment || alignment_ == kDefaultAlignment ? 0 : 1));
  for (const auto& [k, v] : metadata_) {
    s.put_string(k);
    s.put<uint32_t>(uint32_t(v.type));
    s.put_value(v);
  }
  if (!has_alignment && alignment_ != kDefaultAlignment) {
    s.put_string("general.alignment");
    s.put<uint32_t>(uint32_t(ValueType::kUint32));
    s.put<uint32_t>(alignment_);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    s.put_string(t.name);
    s.put<uint32_t>(uint32_t(t.dims.size()));
    for (uint64_t d : t.dims) s.put<uint64_t>(d);
    s.put<uint32_t>(uint32_t(t.type));
    s.put<uint64_t>(offset);
    offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  s.pad_to(alignment_);
  return std::move(s.out);
}

std::vector<std::byte> Writer::serialize() const {
  std::vector<std::byte> out = serialize_header();
  for (const auto& t : tensors_) {
    size_t at = out.size();
    size_t padded = (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
    out.resize(at + padded);  // zero padding
    if (!t.data.empty()) std::memcpy(out.data() + at, t.data.data(), t.data.size());
  }
  return out;
}

Status Writer::write(const std::string& path) const {
  // Streams header then tensors, so a model is never held twice in memory.
  std::vector<std::byte> header = serialize_header();
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return io_error("{}: cannot open for writing: {}", tmp, std::strerror(errno));
  const std::byte zeros[64] = {};
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  for (const auto& t : tensors_) {
    if (!ok) break;
    size_t pad = (alignment_ - t.data.size() % alignment_) % alignment_;
    ok = std::fwrite(t.data.data(), 1, t.data.size(), f) == t.data.size();
    while (ok && pad > 0) {
      size_t n = std::min(pad, sizeof zeros);
      ok = std::fwrite(zeros, 1, n, f) == n;
      pad -= n;
    }
  }
  ok = ok && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  std::fclose(f);
  if (!ok) {
    std::remove(tmp.c_str());
    return io_error("{}: write failed: {}", tmp, std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return io_error("{}: cannot rename into place: {}", path, std::strerror(errno));
  }
  return ok_status();
}

}  // namespace recur::gguf
