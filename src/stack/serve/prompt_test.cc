#include "serve/prompt.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "engine/synthetic.h"
#include "engine/test_models.h"
#include "serve/chat_template.h"

namespace recur::serve {
namespace {

class PromptTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string((std::filesystem::temp_directory_path() / fmt::format("serve_prompt_{}.gguf", getpid())).string());
    SyntheticModelOptions o;
    o.config = testing::tiny_hybrid_config(0);  // context 64, vocab 400
    ASSERT_TRUE(write_synthetic_model(o, *path_).has_value());
    auto m = load_model(*path_);
    ASSERT_TRUE(m.has_value());
    model_ = m->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    std::filesystem::remove(*path_);
    delete path_;
  }
  static CompletionRequest request(std::string_view body) {
    auto r = body.find("messages") != std::string_view::npos ? parse_chat_request(body) : parse_completion_request(body);
    EXPECT_TRUE(r.has_value()) << body;
    return *r;
  }
  static inline std::string* path_ = nullptr;
  static inline Model* model_ = nullptr;
};

TEST_F(PromptTest, TextPromptIsTokenizedWithTheModelsTokenizer) {
  auto p = prepare_request(request(R"({"model":"tiny","prompt":"hello world","max_tokens":4,"temperature":0})"), "tiny",
                           *model_);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  const Tokenizer& tok = model_->tokenizer();
  EXPECT_EQ(p->prompt_ids, tok.encode("hello world", tok.vocabulary().add_bos));
  EXPECT_EQ(p->options.max_new_tokens, 4);
  EXPECT_EQ(p->options.sampling.temperature, 0.0f);
  EXPECT_TRUE(p->options.stop_at_eos);
}

TEST_F(PromptTest, ChatUsesTheTemplate) {
  auto r = request(R"({"model":"tiny","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(render_chat_prompt(r.messages), "<|user|>\nhi\n<|assistant|>\n");
  auto p = prepare_request(r, "tiny", *model_);
  ASSERT_TRUE(p.has_value());
  const Tokenizer& tok = model_->tokenizer();
  EXPECT_EQ(p->prompt_ids, tok.encode("<|user|>\nhi\n<|assistant|>\n", tok.vocabulary().add_bos));
  // No max_tokens: run to the end of the context (capped).
  EXPECT_EQ(p->options.max_new_tokens, std::min(kDefaultChatTokens, 64 - int(p->prompt_ids.size())));
}

TEST_F(PromptTest, DefaultCompletionLengthIs16) {
  auto p = prepare_request(request(R"({"model":"tiny","prompt":[1,2,3],"ignore_eos":true})"), "tiny", *model_);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->prompt_ids, (std::vector<TokenId>{1, 2, 3}));
  EXPECT_EQ(p->options.max_new_tokens, kDefaultCompletionTokens);
  EXPECT_FALSE(p->options.stop_at_eos);
}

TEST_F(PromptTest, Rejections) {
  auto unknown = prepare_request(request(R"({"model":"other","prompt":"x"})"), "tiny", *model_);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().http_status, 404);
  EXPECT_EQ(unknown.error().code, "model_not_found");
  auto too_long = prepare_request(request(R"({"model":"tiny","prompt":"x","max_tokens":100})"), "tiny", *model_);
  ASSERT_FALSE(too_long.has_value());
  EXPECT_EQ(too_long.error().http_status, 400);
  EXPECT_EQ(too_long.error().code, "context_length_exceeded");
  std::string long_prompt = R"({"model":"tiny","prompt":[)";
  for (int i = 0; i < 64; ++i) long_prompt += (i ? ",5" : "5");
  auto no_room = prepare_request(request(long_prompt + "]}"), "tiny", *model_);
  ASSERT_FALSE(no_room.has_value());
  EXPECT_EQ(no_room.error().code, "context_length_exceeded");
  auto bad_id = prepare_request(request(R"({"model":"tiny","prompt":[1,400]})"), "tiny", *model_);
  ASSERT_FALSE(bad_id.has_value());
  EXPECT_EQ(bad_id.error().http_status, 400);
  EXPECT_EQ(bad_id.error().param, "prompt");
}

}  // namespace
}  // namespace recur::serve
