// Chat prompts with images (image_prompt.h) on a tiny model with a tiny in-process encoder: the
// image rows sit where the part sits, positions and usage count them, errors are OpenAI's; the
// encode worker's wire format (encode_wire.h) round-trips.
#include "serve/image_prompt.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/synthetic.h"
#include "engine/test_models.h"
#include "engine/vision_encoder.h"
#include "serve/encode_wire.h"
#include "serve/image_decode.h"
#include "serve/image_encoder.h"

namespace recur::serve {
namespace {

std::string tiny_ppm_uri() { return ppm_data_uri(RgbImage{2, 2, {0, 50, 100, 150, 200, 250, 10, 20, 30, 40, 50, 60}}); }

class ImagePromptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = synthetic_model({recur::testing::tiny_hybrid_config(0), gguf::TensorType::kF32, 3});
    ASSERT_TRUE(w.has_value());
    storage_ = w->serialize();
    auto m = model_from_file(std::move(*gguf::parse(storage_, "tiny.gguf")));
    ASSERT_TRUE(m.has_value());
    model_ = std::move(*m);
    VisionConfig c;
    c.image_size = 16;
    c.patch = 8;
    c.dim = 16;
    c.n_layers = 1;
    c.n_heads = 2;
    c.ffn_dim = 32;
    c.out_dim = model_->config().dim;
    path_ = (std::filesystem::temp_directory_path() / fmt::format("recur-vision-{}.gguf", ::getpid())).string();
    ASSERT_TRUE(synthetic_vision_encoder(c, 2)->write(path_).has_value());
    auto e = local_image_encoder(path_, c.out_dim);
    ASSERT_TRUE(e.has_value()) << e.error().message();
    install_image_encoder(std::move(*e));
  }
  void TearDown() override {
    install_image_encoder(nullptr);
    std::filesystem::remove(path_);
  }
  std::vector<std::byte> storage_;
  std::unique_ptr<Model> model_;
  std::string path_;
};

std::vector<ChatMessage> chat_with_image(const std::string& url) {
  ChatMessage m{"user", "look:  now", {{.offset = 6, .url = url, .param = "messages[0].content[1]"}}};
  return {m};
}

TEST_F(ImagePromptTest, ImageRowsSitWhereThePartSits) {
  CompletionRequest r;
  r.kind = CompletionRequest::Kind::kChat;
  r.model = "tiny";
  r.messages = chat_with_image(tiny_ppm_uri());
  auto p = prepare_request(r, "tiny", *model_);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  ASSERT_EQ(p->embedding_row.size(), p->prompt_ids.size());
  std::vector<size_t> image_positions;
  for (size_t i = 0; i < p->embedding_row.size(); ++i)
    if (p->embedding_row[i] >= 0) image_positions.push_back(i);
  ASSERT_EQ(image_positions.size(), 4u);  // 16 / 8 = 2 patches a side
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(image_positions[k], image_positions[0] + k);  // contiguous, in row order
    EXPECT_EQ(p->embedding_row[image_positions[k]], int32_t(k));
  }
  EXPECT_GT(image_positions[0], 1u);                              // after the header and "look:"
  EXPECT_LT(image_positions.back() + 1, p->prompt_ids.size());    // before " now" and the assistant header
  EXPECT_EQ(p->embeddings.size(), 4u * size_t(model_->config().dim));
  EXPECT_EQ(p->prompt_embedding(image_positions[2]), p->embeddings.data() + 2 * model_->config().dim);
  EXPECT_EQ(p->prompt_embedding(0), nullptr);
  // The same request without the image: the text around it gives the same token count, near enough.
  CompletionRequest text = r;
  text.messages[0].images.clear();
  auto t = prepare_request(text, "tiny", *model_);
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(t->embedding_row.empty());
  EXPECT_NEAR(double(p->prompt_ids.size()), double(t->prompt_ids.size() + 4), 2.0);
}

TEST_F(ImagePromptTest, ErrorsAreOpenAIErrorsNamingThePart) {
  CompletionRequest r;
  r.kind = CompletionRequest::Kind::kChat;
  r.model = "tiny";
  r.messages = chat_with_image("data:image/png;base64,AAAA");
  auto bad = prepare_request(r, "tiny", *model_);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().http_status, 400);
  EXPECT_EQ(bad.error().code, "invalid_image");
  EXPECT_EQ(bad.error().param, "messages[0].content[1]");
  r.messages = chat_with_image(tiny_ppm_uri());
  install_image_encoder(nullptr);  // as the disaggregated roles: no encoder in the process
  auto none = prepare_request(r, "tiny", *model_);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, "unsupported");
}

TEST(EncodeWire, RoundTripsAndRejectsMismatchedData) {
  ImageEmbedding e{2, 3, {1.5f, -2.0f, 0.0f, 3.25f, 1e-8f, -7.0f}};
  auto back = parse_encode_response(encode_response_json(e));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->rows, 2);
  EXPECT_EQ(back->dim, 3);
  EXPECT_EQ(back->data, e.data);
  auto uri = parse_encode_request(encode_request_json(tiny_ppm_uri()));
  ASSERT_TRUE(uri.has_value());
  auto pixels = decode_image_data_uri(*uri, "image");
  ASSERT_TRUE(pixels.has_value());
  EXPECT_EQ(pixels->pixels[5], 250);
  EXPECT_FALSE(parse_encode_response(R"({"rows":2,"dim":3,"dtype":"float32","data":"AAAA"})").has_value());
  EXPECT_EQ(parse_encode_request(R"({"img":1})").error().http_status, 422);
}

}  // namespace
}  // namespace recur::serve
