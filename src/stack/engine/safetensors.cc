#include "engine/safetensors.h"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

namespace recur::safetensors {
namespace {

using nlohmann::json;

// Header JSON larger than this is refused: real headers are kilobytes to a few megabytes.
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {{"F64", DType::kF64},  {"F32", DType::kF32},        {"F16", DType::kF16},
                                 {"BF16", DType::kBF16}, {"F8_E4M3", DType::kFP8E4M3}, {"F8_E5M2", DType::kFP8E5M2},
                                 {"I32", DType::kI32},  {"I8", DType::kI8},          {"U8", DType::kU8}};

const char* name_of(DType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d.name;
  return "?";
}

}  // namespace

const Tensor* File::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors[it->second];
}

Result<File> parse(std::span<const std::byte> bytes, std::string_view source) {
  if (bytes.size() < 8) return parse_error("{}: byte 0: file is {} bytes, too short for the header length", source, bytes.size());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > kMaxHeaderBytes) return parse_error("{}: byte 0: header length {} exceeds the 100 MiB limit", source, n);
  if (n > bytes.size() - 8)
    return parse_error("{}: byte 8: header claims {} bytes but the file has {} after the length", source, n, bytes.size() - 8);
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), size_t(n));
  json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return parse_error("{}: bytes 8..{}: header is not valid JSON", source, 8 + n);
  if (!header.is_object()) return parse_error("{}: byte 8: header must be a JSON object", source);

  File f;
  f.header_bytes = n;
  const uint64_t data_size = bytes.size() - 8 - n;
  const std::byte* data = bytes.data() + 8 + n;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json& e = it.value();
    if (name == "__metadata__") {
      if (!e.is_object()) return parse_error("{}: __metadata__ must be an object of strings", source);
      for (auto m = e.begin(); m != e.end(); ++m) {
        if (!m.value().is_string()) return parse_error("{}: __metadata__.{} must be a string", source, m.key());
        f.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!e.is_object()) return parse_error("{}: tensor '{}': expected an object with dtype, shape, data_offsets", source, name);
    Tensor t;
    t.name = name;
    auto dt = e.find("dtype");
    if (dt == e.end() || !dt->is_string()) return parse_error("{}: tensor '{}': missing string 'dtype'", source, name);
    t.dtype_name = dt->get<std::string>();
    auto known = std::find_if(std::begin(kDTypes), std::end(kDTypes), [&](const DTypeName& d) { return t.dtype_name == d.name; });
    if (known == std::end(kDTypes))
      return parse_error("{}: tensor '{}': dtype '{}' is not one recur reads (F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I32, I8, U8)",
                         source, name, t.dtype_name);
    t.dtype = known->dtype;
    auto shape = e.find("shape");
    if (shape == e.end() || !shape->is_array()) return parse_error("{}: tensor '{}': missing array 'shape'", source, name);
    uint64_t elements = 1;
    for (const json& d : *shape) {
      if (!d.is_number_unsigned()) return parse_error("{}: tensor '{}': shape entries must be non-negative integers", source, name);
      uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && elements > UINT64_MAX / dim) return parse_error("{}: tensor '{}': shape overflows", source, name);
      t.shape.push_back(dim);
      elements *= dim;
    }
    auto off = e.find("data_offsets");
    if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      return parse_error("{}: tensor '{}': 'data_offsets' must be [begin, end]", source, name);
    t.begin = (*off)[0].get<uint64_t>();
    t.end = (*off)[1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_size)
      return parse_error("{}: tensor '{}': data [{}, {}) lies outside the {} data bytes (file byte {}); truncated file?",
                         source, name, t.begin, t.end, data_size, 8 + n + t.begin);
    uint64_t size = dtype_size(t.dtype);
    if (elements > UINT64_MAX / size || t.end - t.begin != elements * size)
      return parse_error("{}: tensor '{}': {} {} elements need {} bytes but data_offsets span {}", source, name, elements,
                         t.dtype_name, elements * size, t.end - t.begin);
    t.data = data + t.begin;
    f.tensors.push_back(std::move(t));
  }
  std::sort(f.tensors.begin(), f.tensors.end(), [](const Tensor& a, const Tensor& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < f.tensors.size(); ++i)
    if (f.tensors[i].begin < f.tensors[i - 1].end)
      return parse_error("{}: tensors '{}' and '{}' overlap", source, f.tensors[i - 1].name, f.tensors[i].name);
  for (size_t i = 0; i < f.tensors.size(); ++i) f.index_.emplace(f.tensors[i].name, i);
  return f;
}

Result<File> read(const std::string& path) { return read(path, FileMemory::kMap); }

Result<File> read(const std::string& path, FileMemory memory) {
  RECUR_ASSIGN_OR_RETURN(MappedFile mapping, MappedFile::open(path, memory));
  RECUR_ASSIGN_OR_RETURN(File f, parse(mapping.bytes(), path));
  f.mapping_ = std::move(mapping);
  return f;
}

Result<std::vector<std::byte>> serialize(const std::vector<PendingTensor>& tensors) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    uint64_t elements = 1;
    for (uint64_t d : t.shape) elements *= d;
    if (elements * dtype_size(t.dtype) != t.data.size())
      return invalid_argument("tensor '{}': {} bytes given, shape needs {}", t.name, t.data.size(), elements * dtype_size(t.dtype));
    header[t.name] = {{"dtype", name_of(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';  // keep the data 8-byte aligned, as writers do
  std::vector<std::byte> out(8 + text.size() + offset);
  uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  size_t at = 8 + text.size();
  for (const auto& t : tensors) {
    if (!t.data.empty()) std::memcpy(out.data() + at, t.data.data(), t.data.size());
    at += t.data.size();
  }
  return out;
}

}  // namespace recur::safetensors
