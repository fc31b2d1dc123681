#include "serve/request.h"

#include <gtest/gtest.h>

namespace recur::serve {
namespace {

ApiError completion_error(std::string_view body) {
  auto r = parse_completion_request(body);
  EXPECT_FALSE(r.has_value()) << body;
  return r ? ApiError{} : r.error();
}

ApiError chat_error(std::string_view body) {
  auto r = parse_chat_request(body);
  EXPECT_FALSE(r.has_value()) << body;
  return r ? ApiError{} : r.error();
}

TEST(RequestTest, CompletionWithEveryField) {
  auto r = parse_completion_request(R"({"model":"m","prompt":"hi","max_tokens":5,"temperature":0,"top_p":0.5,
    "seed":7,"stop":["a","bc"],"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"user":"x"})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->kind, CompletionRequest::Kind::kCompletion);
  EXPECT_EQ(r->model, "m");
  EXPECT_EQ(r->prompt, "hi");
  EXPECT_EQ(r->sampling.max_tokens, 5);
  EXPECT_EQ(r->sampling.temperature, 0.0f);
  EXPECT_EQ(r->sampling.top_p, 0.5f);
  EXPECT_EQ(r->sampling.seed, 7u);
  EXPECT_EQ(r->sampling.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_TRUE(r->sampling.ignore_eos);
}

TEST(RequestTest, DefaultsFollowOpenAI) {
  auto r = parse_completion_request(R"({"model":"m","prompt":"hi","stop":null,"max_tokens":null})");
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->sampling.max_tokens.has_value());
  EXPECT_EQ(r->sampling.temperature, 1.0f);
  EXPECT_EQ(r->sampling.top_p, 1.0f);
  EXPECT_TRUE(r->sampling.stop.empty());
  EXPECT_FALSE(r->stream);
}

TEST(RequestTest, PromptForms) {
  auto one = parse_completion_request(R"({"model":"m","prompt":["batch of one"],"stop":"x"})");
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->prompt, "batch of one");
  EXPECT_EQ(one->sampling.stop, std::vector<std::string>{"x"});
  auto ids = parse_completion_request(R"({"model":"m","prompt":[1,2,3]})");
  ASSERT_TRUE(ids.has_value());
  EXPECT_TRUE(ids->prompt_ids_given);
  EXPECT_EQ(ids->prompt_ids, (std::vector<int64_t>{1, 2, 3}));
  auto nested = parse_completion_request(R"({"model":"m","prompt":[[4,5]]})");
  ASSERT_TRUE(nested.has_value());
  EXPECT_EQ(nested->prompt_ids, (std::vector<int64_t>{4, 5}));
}

TEST(RequestTest, MalformedJsonIs400WithOffset) {
  ApiError e = completion_error(R"({"model": "m", "prompt": )");
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.code, "invalid_json");
  EXPECT_NE(e.message.find("byte"), std::string::npos) << e.message;
  EXPECT_EQ(completion_error("").http_status, 400);
  EXPECT_EQ(completion_error("\xff").http_status, 400);
  // A number past double range is an out_of_range exception in the parser, not a parse_error.
  ApiError overflow = completion_error(R"({"model": 7777e77777})");
  EXPECT_EQ(overflow.http_status, 400);
  EXPECT_EQ(overflow.code, "invalid_json");
}

TEST(RequestTest, SchemaViolationsAre422AndNameTheField) {
  struct Case {
    const char* body;
    const char* param;
  } cases[] = {
      {R"([1,2])", ""},
      {R"({"prompt":"x"})", "model"},
      {R"({"model":3,"prompt":"x"})", "model"},
      {R"({"model":"m"})", "prompt"},
      {R"({"model":"m","prompt":{"a":1}})", "prompt"},
      {R"({"model":"m","prompt":[1,"x"]})", "prompt"},
      {R"({"model":"m","prompt":"x","max_tokens":"5"})", "max_tokens"},
      {R"({"model":"m","prompt":"x","max_tokens":2.5})", "max_tokens"},
      {R"({"model":"m","prompt":"x","temperature":"hot"})", "temperature"},
      {R"({"model":"m","prompt":"x","stream":1})", "stream"},
      {R"({"model":"m","prompt":"x","stop":5})", "stop"},
      {R"({"model":"m","prompt":"x","stop":["a",1]})", "stop"},
      {R"({"model":"m","prompt":"x","seed":"s"})", "seed"},
  };
  for (const Case& c : cases) {
    ApiError e = completion_error(c.body);
    EXPECT_EQ(e.http_status, 422) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_EQ(e.type, "invalid_request_error");
  }
}

TEST(RequestTest, OutOfRangeIs400) {
  for (const char* body : {R"({"model":"m","prompt":"x","max_tokens":0})", R"({"model":"m","prompt":"x","max_tokens":-3})",
                           R"({"model":"m","prompt":"x","temperature":2.5})", R"({"model":"m","prompt":"x","top_p":0})",
                           R"({"model":"m","prompt":"x","top_p":1.5})", R"({"model":"m","prompt":"x","n":2})",
                           R"({"model":"m","prompt":"x","stop":["a","b","c","d","e"]})",
                           R"({"model":"m","prompt":"x","stop":""})", R"({"model":"m","prompt":["a","b"]})"}) {
    ApiError e = completion_error(body);
    EXPECT_EQ(e.http_status, 400) << body;
    EXPECT_FALSE(e.param.empty()) << body;
  }
}

TEST(RequestTest, ChatContentAsStringOrTextParts) {
  auto r = parse_chat_request(R"({"model":"m","messages":[{"role":"system","content":"be brief"},
    {"role":"user","content":[{"type":"text","text":"one "},{"type":"text","text":"two"}]},
    {"role":"assistant","content":null},{"role":"developer","content":"d"}],"max_completion_tokens":3})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_EQ(r->messages[1].content, "one two");
  EXPECT_EQ(r->messages[2].content, "");
  EXPECT_EQ(r->messages[3].role, "system");
  EXPECT_EQ(r->sampling.max_tokens, 3);
}

TEST(RequestTest, ChatErrors) {
  EXPECT_EQ(chat_error(R"({"model":"m"})").param, "messages");
  EXPECT_EQ(chat_error(R"({"model":"m","messages":[]})").http_status, 400);
  EXPECT_EQ(chat_error(R"({"model":"m","messages":"hi"})").http_status, 422);
  EXPECT_EQ(chat_error(R"({"model":"m","messages":[{"role":"user"}]})").param, "messages[0].content");
  EXPECT_EQ(chat_error(R"({"model":"m","messages":[{"role":"king","content":"x"}]})").param, "messages[0].role");
  EXPECT_EQ(chat_error(R"({"model":"m","messages":[{"content":"x"}]})").http_status, 422);
  ApiError image = chat_error(R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]})");
  EXPECT_EQ(image.http_status, 422);
  EXPECT_EQ(image.param, "messages[0].content[0].image_url");
}

TEST(RequestTest, ChatImagePartsAreKeptWhereTheySit) {
  auto r = parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":[
    {"type":"text","text":"look: "},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},
    {"type":"text","text":" and "},{"type":"input_image","image_url":"data:image/ppm;base64,BB"}]}]})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const ChatMessage& m = r->messages[0];
  EXPECT_EQ(m.content, "look:  and ");
  ASSERT_EQ(m.images.size(), 2u);
  EXPECT_EQ(m.images[0].offset, 6u);
  EXPECT_EQ(m.images[0].url, "data:image/png;base64,AAAA");
  EXPECT_EQ(m.images[0].param, "messages[0].content[1]");
  EXPECT_EQ(m.images[1].offset, 11u);
  EXPECT_EQ(m.images[1].url, "data:image/ppm;base64,BB");
}

TEST(RequestTest, ErrorBodyIsOpenAIShape) {
  ApiError e = completion_error(R"({"prompt":"x"})");
  nlohmann::json j = nlohmann::json::parse(e.body());
  ASSERT_TRUE(j.contains("error"));
  for (const char* key : {"message", "type", "param", "code"}) EXPECT_TRUE(j["error"].contains(key)) << key;
  EXPECT_EQ(j["error"]["param"], "model");
  ApiError no_param{400, "m\xff"};
  EXPECT_TRUE(nlohmann::json::parse(no_param.body())["error"]["param"].is_null());
}

}  // namespace
}  // namespace recur::serve
