// GGUF type tables and Value helpers.
#include <limits>

#include "engine/gguf.h"

namespace recur::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kUint8: return "uint8";
    case ValueType::kInt8: return "int8";
    case ValueType::kUint16: return "uint16";
    case ValueType::kInt16: return "int16";
    case ValueType::kUint32: return "uint32";
    case ValueType::kInt32: return "int32";
    case ValueType::kFloat32: return "float32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kUint64: return "uint64";
    case ValueType::kInt64: return "int64";
    case ValueType::kFloat64: return "float64";
  }
  return "unknown";
}

std::string tensor_type_name(uint32_t type) {
  // ggml's type numbering; types recur reads print bare, the rest with their number.
  static constexpr const char* kNames[] = {
      "F32",     "F16",    "Q4_0",   "Q4_1",    "Q4_2(removed)", "Q4_3(removed)", "Q5_0", "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",   "Q3_K",    "Q4_K",          "Q5_K",          "Q6_K", "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",  "IQ4_NL",        "IQ3_S",         "IQ2_S", "IQ4_XS",
      "I8",      "I16",    "I32",    "I64",     "F64",           "IQ1_M",         "BF16"};
  if (type < std::size(kNames)) {
    if (is_supported_type(type)) return kNames[type];
    return fmt::format("{} ({})", kNames[type], type);
  }
  return fmt::format("unknown ({})", type);
}

const char* tensor_type_name_static(TensorType type) {
  switch (type) {
    case TensorType::kF32: return "F32";
    case TensorType::kF16: return "F16";
    case TensorType::kQ8_0: return "Q8_0";
    case TensorType::kI8: return "I8";
    case TensorType::kI32: return "I32";
    case TensorType::kBF16: return "BF16";
  }
  return "?";
}

bool is_supported_type(uint32_t type) {
  switch (static_cast<TensorType>(type)) {
    case TensorType::kF32: case TensorType::kF16: case TensorType::kQ8_0:
    case TensorType::kI8: case TensorType::kI32: case TensorType::kBF16:
      return true;
  }
  return false;
}

BlockLayout block_layout(TensorType type) {
  switch (type) {
    case TensorType::kF32: return {1, 4};
    case TensorType::kF16: return {1, 2};
    case TensorType::kBF16: return {1, 2};
    case TensorType::kQ8_0: return {32, 34};  // fp16 scale + 32 int8
    case TensorType::kI8: return {1, 1};
    case TensorType::kI32: return {1, 4};
  }
  return {1, 1};
}

Result<uint64_t> tensor_bytes(TensorType type, std::span<const uint64_t> dims) {
  BlockLayout b = block_layout(type);
  if (dims.empty()) return invalid_argument("tensor has no dimensions");
  if (dims[0] % b.elements != 0)
    return invalid_argument("innermost dimension {} is not a multiple of the {} block size {}", dims[0],
                            tensor_type_name(uint32_t(type)), b.elements);
  uint64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i) {
    if (dims[i] != 0 && rows > std::numeric_limits<uint64_t>::max() / dims[i])
      return invalid_argument("dimensions overflow 64 bits");
    rows *= dims[i];
  }
  uint64_t row_bytes = dims[0] / b.elements * b.bytes;
  if (row_bytes != 0 && rows > std::numeric_limits<uint64_t>::max() / row_bytes)
    return invalid_argument("tensor size overflows 64 bits");
  return rows * row_bytes;
}

uint64_t TensorInfo::elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;
  return n;
}

std::optional<int64_t> Value::as_int() const {
  switch (type) {
    case ValueType::kUint8: case ValueType::kUint16: case ValueType::kUint32: case ValueType::kUint64:
      if (u64 > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return int64_t(u64);
    case ValueType::kInt8: case ValueType::kInt16: case ValueType::kInt32: case ValueType::kInt64:
      return i64;
    case ValueType::kBool:
      return boolean ? 1 : 0;
    default:
      return std::nullopt;
  }
}

std::optional<double> Value::as_float() const {
  if (type == ValueType::kFloat32 || type == ValueType::kFloat64) return f64;
  if (auto i = as_int()) return double(*i);
  return std::nullopt;
}

const std::string* Value::as_string() const { return type == ValueType::kString ? &str : nullptr; }

Value Value::of_u32(uint32_t v) { Value x; x.type = ValueType::kUint32; x.u64 = v; return x; }
Value Value::of_i32(int32_t v) { Value x; x.type = ValueType::kInt32; x.i64 = v; return x; }
Value Value::of_u64(uint64_t v) { Value x; x.type = ValueType::kUint64; x.u64 = v; return x; }
Value Value::of_f32(float v) { Value x; x.type = ValueType::kFloat32; x.f64 = v; return x; }
Value Value::of_bool(bool v) { Value x; x.type = ValueType::kBool; x.boolean = v; return x; }
Value Value::of_string(std::string v) { Value x; x.type = ValueType::kString; x.str = std::move(v); return x; }

namespace {
template <typename T, typename Make>
Value array_of(ValueType item_type, const std::vector<T>& values, Make make) {
  Value x;
  x.type = ValueType::kArray;
  x.item_type = item_type;
  x.items.reserve(values.size());
  for (const T& v : values) x.items.push_back(make(v));
  return x;
}
}  // namespace

Value Value::of_strings(const std::vector<std::string>& v) { return array_of(ValueType::kString, v, of_string); }
Value Value::of_f32s(const std::vector<float>& v) { return array_of(ValueType::kFloat32, v, of_f32); }
Value Value::of_i32s(const std::vector<int32_t>& v) { return array_of(ValueType::kInt32, v, of_i32); }

const Value* File::find(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata[it->second].second;
}

const TensorInfo* File::tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors[it->second];
}

Result<int64_t> File::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return not_found("{}: metadata key '{}' is missing", source_, key);
  auto i = v->as_int();
  if (!i) return parse_error("{}: metadata key '{}' is {}, expected an integer", source_, key, value_type_name(v->type));
  return *i;
}

Result<double> File::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return not_found("{}: metadata key '{}' is missing", source_, key);
  auto f = v->as_float();
  if (!f) return parse_error("{}: metadata key '{}' is {}, expected a number", source_, key, value_type_name(v->type));
  return *f;
}

Result<std::string> File::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return not_found("{}: metadata key '{}' is missing", source_, key);
  if (!v->as_string()) return parse_error("{}: metadata key '{}' is {}, expected a string", source_, key, value_type_name(v->type));
  return v->str;
}

}  // namespace recur::gguf
