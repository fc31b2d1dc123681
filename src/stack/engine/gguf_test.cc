#include "engine/gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

namespace recur::gguf {
namespace {

std::vector<std::byte> as_bytes(const void* p, size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  return {b, b + n};
}

// A small file with every metadata type and one tensor of each supported type.
Writer sample_writer() {
  Writer w;
  w.set("general.architecture", Value::of_string("llama"));
  w.set("llama.block_count", Value::of_u32(2));
  w.set("test.i32", Value::of_i32(-7));
  w.set("test.u64", Value::of_u64(1ull << 40));
  w.set("test.f32", Value::of_f32(0.5f));
  w.set("test.bool", Value::of_bool(true));
  w.set("tokenizer.ggml.tokens", Value::of_strings({"<unk>", "a", "b c"}));
  w.set("tokenizer.ggml.scores", Value::of_f32s({0.f, -1.5f, -2.f}));
  w.set("tokenizer.ggml.token_type", Value::of_i32s({2, 1, 1}));
  Value nested;
  nested.type = ValueType::kArray;
  nested.item_type = ValueType::kArray;
  nested.items = {Value::of_i32s({1, 2}), Value::of_i32s({})};
  w.set("test.nested", nested);

  std::vector<float> f32(6);
  for (int i = 0; i < 6; ++i) f32[i] = float(i) - 2.5f;
  EXPECT_TRUE(w.add_tensor("t.f32", TensorType::kF32, {3, 2}, as_bytes(f32.data(), 24)).has_value());
  std::vector<uint16_t> half(5, 0x3c00);
  EXPECT_TRUE(w.add_tensor("t.f16", TensorType::kF16, {5}, as_bytes(half.data(), 10)).has_value());
  EXPECT_TRUE(w.add_tensor("t.bf16", TensorType::kBF16, {5}, as_bytes(half.data(), 10)).has_value());
  std::vector<std::byte> q8(34 * 2, std::byte{1});
  EXPECT_TRUE(w.add_tensor("t.q8_0", TensorType::kQ8_0, {32, 2}, q8).has_value());
  std::vector<int8_t> i8 = {1, -2, 3};
  EXPECT_TRUE(w.add_tensor("t.i8", TensorType::kI8, {3}, as_bytes(i8.data(), 3)).has_value());
  std::vector<int32_t> i32 = {7, 8};
  EXPECT_TRUE(w.add_tensor("t.i32", TensorType::kI32, {1, 2}, as_bytes(i32.data(), 8)).has_value());
  return w;
}

TEST(Gguf, RoundTripsMetadataAndTensors) {
  std::vector<std::byte> bytes = sample_writer().serialize();
  auto f = parse(bytes, "mem.gguf");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  EXPECT_EQ(f->version, 3u);
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");
  EXPECT_EQ(*f->get_int("llama.block_count"), 2);
  EXPECT_EQ(*f->get_int("test.i32"), -7);
  EXPECT_EQ(*f->get_int("test.u64"), int64_t(1) << 40);
  EXPECT_EQ(*f->get_float("test.f32"), 0.5);
  EXPECT_EQ(*f->get_int("test.bool"), 1);
  const Value* tokens = f->find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  ASSERT_EQ(tokens->items.size(), 3u);
  EXPECT_EQ(tokens->items[2].str, "b c");
  EXPECT_EQ(f->find("tokenizer.ggml.scores")->items[1].f64, -1.5);
  EXPECT_EQ(f->find("tokenizer.ggml.token_type")->items[0].i64, 2);
  const Value* nested = f->find("test.nested");
  ASSERT_EQ(nested->items.size(), 2u);
  EXPECT_EQ(nested->items[0].items[1].i64, 2);
  EXPECT_TRUE(nested->items[1].items.empty());

  ASSERT_EQ(f->tensors.size(), 6u);
  const TensorInfo* t = f->tensor("t.f32");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dims, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(t->bytes, 24u);
  EXPECT_EQ(t->elements(), 6u);
  float back[6];
  std::memcpy(back, t->data, 24);
  EXPECT_EQ(back[5], 2.5f);
  EXPECT_EQ(f->tensor("t.q8_0")->bytes, 68u);
  EXPECT_EQ(f->tensor("t.i32")->bytes, 8u);
  for (const TensorInfo& ti : f->tensors) {
    EXPECT_EQ(ti.offset % f->alignment, 0u) << ti.name;
    EXPECT_EQ(uint64_t(ti.data - bytes.data()) % 32, 0u) << ti.name;
  }
  EXPECT_EQ(f->tensor("nope"), nullptr);
  EXPECT_EQ(f->get_int("nope").error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(f->get_int("general.architecture").error().code(), ErrorCode::kParse);
}

TEST(Gguf, WritesAndMapsFiles) {
  auto dir = std::filesystem::temp_directory_path() / ("recur_gguf_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "m.gguf").string();
  ASSERT_TRUE(sample_writer().write(path).has_value());
  auto f = read(path);
  ASSERT_TRUE(f.has_value()) << f.error().message();
  EXPECT_EQ(f->source(), path);
  int8_t i8[3];
  std::memcpy(i8, f->tensor("t.i8")->data, 3);
  EXPECT_EQ(i8[1], -2);
  auto missing = read((dir / "absent.gguf").string());
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("absent.gguf"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Gguf, EveryTruncationIsAnErrorNotACrash) {
  std::vector<std::byte> bytes = sample_writer().serialize();
  // The last tensor's data ends before the final padding; cut anywhere before that point.
  auto full = parse(bytes, "mem");
  ASSERT_TRUE(full.has_value());
  const TensorInfo& last = full->tensors.back();
  size_t data_end = size_t(last.data - bytes.data()) + last.bytes;
  for (size_t n = 0; n < data_end; ++n) {
    auto f = parse(std::span(bytes.data(), n), "cut.gguf");
    ASSERT_FALSE(f.has_value()) << "prefix of " << n << " bytes parsed";
    EXPECT_NE(f.error().message().find("cut.gguf"), std::string::npos);
  }
  auto f = parse(std::span(bytes.data(), data_end - 1), "cut.gguf");
  EXPECT_NE(f.error().message().find("tensor 't.i32'"), std::string::npos) << f.error().message();
  EXPECT_NE(f.error().message().find("past the end"), std::string::npos) << f.error().message();
}

// Position of tensor `name`'s type field within the serialized file.
size_t type_field_of(const std::vector<std::byte>& bytes, const std::string& name, int n_dims) {
  std::string_view all(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  size_t at = all.find(name);
  EXPECT_NE(at, std::string_view::npos);
  return at + name.size() + 4 + 8 * size_t(n_dims);
}

TEST(Gguf, UnknownTypesAndBadShapesNameTheTensor) {
  std::vector<std::byte> bytes = sample_writer().serialize();
  size_t type_at = type_field_of(bytes, "t.f16", 1);
  uint32_t q4k = 12;
  std::memcpy(bytes.data() + type_at, &q4k, 4);
  auto f = parse(bytes, "m.gguf");
  ASSERT_FALSE(f.has_value());
  const std::string& msg = f.error().message();
  EXPECT_NE(msg.find("tensor 't.f16'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Q4_K (12)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte "), std::string::npos) << msg;

  uint32_t bogus = 999;
  std::memcpy(bytes.data() + type_at, &bogus, 4);
  EXPECT_NE(parse(bytes, "m").error().message().find("unknown (999)"), std::string::npos);

  // Q8_0 with an innermost dimension that is not a multiple of 32.
  std::vector<std::byte> b2 = sample_writer().serialize();
  size_t dim_at = type_field_of(b2, "t.q8_0", 2) - 16;
  uint64_t odd = 33;
  std::memcpy(b2.data() + dim_at, &odd, 8);
  auto g = parse(b2, "m");
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.error().message().find("'t.q8_0'"), std::string::npos) << g.error().message();
  EXPECT_NE(g.error().message().find("multiple of"), std::string::npos) << g.error().message();

  // A huge dimension makes the data run past the end.
  std::vector<std::byte> b3 = sample_writer().serialize();
  uint64_t huge = uint64_t(1) << 40;
  std::memcpy(b3.data() + type_field_of(b3, "t.i8", 1) - 8, &huge, 8);
  auto h = parse(b3, "m");
  ASSERT_FALSE(h.has_value());
  EXPECT_NE(h.error().message().find("'t.i8'"), std::string::npos) << h.error().message();
}

TEST(Gguf, RejectsHostileHeaders) {
  std::vector<std::byte> bytes = sample_writer().serialize();
  auto with = [&](size_t at, auto value) {
    std::vector<std::byte> b = bytes;
    std::memcpy(b.data() + at, &value, sizeof(value));
    return parse(b, "h.gguf");
  };
  EXPECT_NE(with(0, uint32_t(0x12345678)).error().message().find("not a GGUF file"), std::string::npos);
  EXPECT_NE(with(4, uint32_t(1)).error().message().find("version 1"), std::string::npos);
  EXPECT_NE(with(8, uint64_t(1) << 60).error().message().find("tensor count"), std::string::npos);
  EXPECT_NE(with(16, uint64_t(1) << 60).error().message().find("metadata count"), std::string::npos);
  // The first key's string length.
  EXPECT_NE(with(24, uint64_t(1) << 50).error().message().find("claims"), std::string::npos);

  // An array that claims more items than bytes remain.
  std::string_view all(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  size_t key = all.find("tokenizer.ggml.tokens");
  size_t count_at = key + std::strlen("tokenizer.ggml.tokens") + 4 + 4;
  auto arr = with(count_at, uint64_t(1) << 40);
  ASSERT_FALSE(arr.has_value());
  EXPECT_NE(arr.error().message().find("array 'tokenizer.ggml.tokens'"), std::string::npos) << arr.error().message();
}

TEST(Gguf, WriterRejectsMismatchedData) {
  Writer w;
  std::vector<std::byte> data(10);
  EXPECT_FALSE(w.add_tensor("x", TensorType::kF32, {3}, data).has_value());
  EXPECT_FALSE(w.add_tensor("x", TensorType::kQ8_0, {16}, data).has_value());
  EXPECT_FALSE(w.add_tensor("x", TensorType::kF32, {}, data).has_value());
  EXPECT_TRUE(w.add_tensor("x", TensorType::kI8, {10}, data).has_value());
  auto dup = w.add_tensor("x", TensorType::kI8, {10}, data);
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.error().message().find("twice"), std::string::npos);
}

TEST(Gguf, HonoursCustomAlignment) {
  Writer w(64);
  std::vector<std::byte> a(3), b(5);
  ASSERT_TRUE(w.add_tensor("a", TensorType::kI8, {3}, a).has_value());
  ASSERT_TRUE(w.add_tensor("b", TensorType::kI8, {5}, b).has_value());
  std::vector<std::byte> bytes = w.serialize();
  auto f = parse(bytes, "m");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  EXPECT_EQ(f->alignment, 64u);
  EXPECT_EQ(f->tensor("b")->offset, 64u);
  EXPECT_EQ(f->data_offset % 64, 0u);
}

}  // namespace
}  // namespace recur::gguf
