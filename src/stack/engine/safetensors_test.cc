#include "engine/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "engine/model_config.h"

namespace recur {
namespace {

std::vector<std::byte> floats(std::initializer_list<float> v) {
  std::vector<std::byte> out(v.size() * 4);
  std::memcpy(out.data(), v.begin(), out.size());
  return out;
}

std::vector<std::byte> sample() {
  auto bytes = safetensors::serialize({
      {"model.embed_tokens.weight", DType::kF32, {2, 3}, floats({1, 2, 3, 4, 5, 6})},
      {"model.norm.weight", DType::kF32, {3}, floats({7, 8, 9})},
      {"lm_head.weight", DType::kBF16, {1, 2}, std::vector<std::byte>(4, std::byte{0x3f})},
  });
  EXPECT_TRUE(bytes.has_value());
  return *bytes;
}

TEST(Safetensors, RoundTripsTensors) {
  std::vector<std::byte> bytes = sample();
  auto f = safetensors::parse(bytes, "m.safetensors");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  ASSERT_EQ(f->tensors.size(), 3u);
  const auto* emb = f->find("model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(emb->dtype, DType::kF32);
  float x[6];
  std::memcpy(x, emb->data, 24);
  EXPECT_EQ(x[5], 6.f);
  EXPECT_EQ(f->find("lm_head.weight")->dtype, DType::kBF16);
  EXPECT_EQ(f->find("missing"), nullptr);
}

std::vector<std::byte> with_header(const std::string& header, size_t data_bytes) {
  std::vector<std::byte> out(8 + header.size() + data_bytes);
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

TEST(Safetensors, BadFilesNameTheTensorAndTheProblem) {
  auto err = [](std::vector<std::byte> b) {
    auto f = safetensors::parse(b, "bad.safetensors");
    EXPECT_FALSE(f.has_value());
    return f.has_value() ? std::string() : f.error().message();
  };
  EXPECT_NE(err(std::vector<std::byte>(4)).find("too short"), std::string::npos);
  std::vector<std::byte> good = sample();
  EXPECT_NE(err(std::vector<std::byte>(good.begin(), good.begin() + 20)).find("header claims"), std::string::npos);
  EXPECT_NE(err(std::vector<std::byte>(good.begin(), good.end() - 2)).find("'lm_head.weight'"), std::string::npos);
  EXPECT_NE(err(with_header("{not json", 0)).find("not valid JSON"), std::string::npos);
  EXPECT_NE(err(with_header(R"({"w": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}})", 1)).find("dtype 'Q4'"),
            std::string::npos);
  EXPECT_NE(err(with_header(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", 4)).find("need 8 bytes"),
            std::string::npos);
  EXPECT_NE(err(with_header(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4)).find("non-negative"),
            std::string::npos);
  EXPECT_NE(err(with_header(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                                "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}})", 6)).find("overlap"),
            std::string::npos);
  EXPECT_NE(err(with_header(R"({"w": {"dtype": "F32", "shape": [1]}})", 4)).find("data_offsets"), std::string::npos);
}

TEST(ModelConfig, ReadsHuggingFaceConfig) {
  const char* json = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 5632,
    "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 4, "vocab_size": 32000,
    "rms_norm_eps": 1e-6, "rope_theta": 500000.0, "tie_word_embeddings": false, "max_position_embeddings": 2048})";
  auto c = ModelConfig::from_hf_config(json, "config.json");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->dim, 2048);
  EXPECT_EQ(c->n_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_FLOAT_EQ(c->rms_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c->rope_theta, 500000.f);

  EXPECT_NE(ModelConfig::from_hf_config("{}", "config.json").error().message().find("missing 'hidden_size'"),
            std::string::npos);
  EXPECT_EQ(ModelConfig::from_hf_config(R"({"architectures": ["BertModel"]})", "c").error().code(),
            ErrorCode::kUnsupported);
  auto bad_heads = ModelConfig::from_hf_config(
      R"({"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 6, "num_key_value_heads": 4,
          "num_hidden_layers": 1, "vocab_size": 10})", "c");
  EXPECT_NE(bad_heads.error().message().find("not a multiple"), std::string::npos) << bad_heads.error().message();
}

TEST(ModelConfig, RoundTripsHybridThroughGguf) {
  ModelConfig c;
  c.arch = Arch::kHybrid;
  c.dim = 256;
  c.n_layers = 8;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.ffn_dim = 512;
  c.vocab = 1000;
  c.layer_pattern = "kkka";
  c.kda_heads = 4;
  c.kda_key_heads = 2;
  c.kda_head_dim = 64;
  c.n_experts = 8;
  c.n_experts_used = 2;
  c.shared_expert = true;
  ASSERT_TRUE(c.validate().has_value());
  gguf::Writer w;
  c.to_gguf(w);
  auto f = gguf::parse(w.serialize(), "h.gguf");
  ASSERT_TRUE(f.has_value());
  auto back = ModelConfig::from_gguf(*f);
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->layer_pattern, "kkka");
  EXPECT_EQ(back->kda_key_heads, 2);
  EXPECT_EQ(back->n_experts_used, 2);
  EXPECT_TRUE(back->shared_expert);
  EXPECT_TRUE(back->is_kda_layer(0));
  EXPECT_FALSE(back->is_kda_layer(3));
  EXPECT_TRUE(back->is_kda_layer(4));

  c.layer_pattern = "kxa";
  EXPECT_FALSE(c.validate().has_value());
}

}  // namespace
}  // namespace recur
