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

namespace recur::serve {
namespace {

TEST(RequestLogprobsTest, ChatLogprobsAndTopLogprobs) {
  auto r = parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":4})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->sampling.logprobs, 4);
  auto plain = parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":false})");
  ASSERT_TRUE(plain.has_value());
  EXPECT_FALSE(plain->sampling.logprobs.has_value());
  for (const char* body : {R"({"model":"m","messages":[{"role":"user","content":"hi"}],"top_logprobs":2})",
                           R"({"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":21})"}) {
    auto e = parse_chat_request(body);
    ASSERT_FALSE(e.has_value()) << body;
    EXPECT_EQ(e.error().http_status, 400) << body;
    EXPECT_EQ(e.error().param, "top_logprobs") << body;
  }
}

TEST(RequestLogprobsTest, CompletionLogprobsAndEcho) {
  auto r = parse_completion_request(R"({"model":"m","prompt":"x","logprobs":2,"echo":true,"max_tokens":0})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->sampling.logprobs, 2);
  EXPECT_TRUE(r->echo);
  EXPECT_EQ(r->sampling.max_tokens, 0);
  auto no_echo = parse_completion_request(R"({"model":"m","prompt":"x","max_tokens":0})");
  ASSERT_FALSE(no_echo.has_value());
  EXPECT_NE(no_echo.error().message.find("only with 'echo'"), std::string::npos) << no_echo.error().message;
  auto chat_zero = parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":0})");
  ASSERT_FALSE(chat_zero.has_value());
  EXPECT_EQ(chat_zero.error().param, "max_tokens");
}

TEST(RequestLimitsTest, MaxTokensOverTheLimitNamesIt) {
  auto e = parse_completion_request(R"({"model":"m","prompt":"x","max_tokens":99999999})");
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().http_status, 400);
  EXPECT_EQ(e.error().message, "'max_tokens' is 99999999; expected 1 to 16777216") << e.error().message;
}

TEST(RequestLimitsTest, EmptyPromptArraysAreRefused) {
  for (const char* body : {R"({"model":"m","prompt":[]})", R"({"model":"m","prompt":[[]]})"}) {
    auto e = parse_completion_request(body);
    ASSERT_FALSE(e.has_value()) << body;
    EXPECT_EQ(e.error().http_status, 400) << body;
    EXPECT_EQ(e.error().param, "prompt") << body;
  }
}

// Every unsupported field gets a 400 naming it; its no-op value passes.
TEST(RequestUnsupportedTest, EachFieldIsRefusedByName) {
  struct Case {
    const char* field;
    const char* value;
    const char* noop;  // nullptr: no value is a no-op
    bool chat;
  };
  const Case cases[] = {
      {"n", "2", "1", true},
      {"n", "3", "1", false},
      {"best_of", "2", "1", false},
      {"tools", R"([{"type":"function","function":{"name":"f"}}])", "[]", true},
      {"tool_choice", R"("auto")", R"("none")", true},
      {"parallel_tool_calls", "true", "false", true},
      {"functions", R"([{"name":"f"}])", "[]", true},
      {"function_call", R"("auto")", R"("none")", true},
      {"response_format", R"({"type":"json_object"})", R"({"type":"text"})", true},
      {"response_format", R"({"type":"json_schema","json_schema":{}})", R"({"type":"text"})", false},
      {"logit_bias", R"({"5":10})", "{}", true},
      {"logit_bias", R"({"5":-100})", "{}", false},
      {"presence_penalty", "0.5", "0", true},
      {"frequency_penalty", "1", "0", false},
      {"suffix", R"("end")", R"("")", false},
      {"audio", R"({"voice":"x"})", nullptr, true},
      {"modalities", R"(["text","audio"])", R"(["text"])", true},
      {"prediction", R"({"type":"content","content":"x"})", nullptr, true},
      {"web_search_options", "{}", nullptr, true},
      {"reasoning_effort", R"("low")", nullptr, true},
      {"store", "true", "false", true},
      {"top_k", "40", "-1", false},
      {"min_p", "0.1", "0", true},
      {"repetition_penalty", "1.2", "1", false},
      {"use_beam_search", "true", "false", false},
      {"guided_json", "{}", nullptr, true},
      {"guided_regex", R"("a+")", nullptr, false},
      {"guided_choice", R"(["a"])", nullptr, false},
      {"guided_grammar", R"("g")", nullptr, true},
  };
  for (const Case& c : cases) {
    const std::string head = c.chat ? R"({"model":"m","messages":[{"role":"user","content":"hi"}],")"
                                    : R"({"model":"m","prompt":"x",")";
    auto parse = [&](const char* value) {
      const std::string body = head + c.field + "\":" + value + "}";
      return c.chat ? parse_chat_request(body) : parse_completion_request(body);
    };
    auto refused = parse(c.value);
    ASSERT_FALSE(refused.has_value()) << c.field << " " << c.value;
    EXPECT_EQ(refused.error().http_status, 400) << c.field;
    EXPECT_EQ(refused.error().param, c.field);
    EXPECT_EQ(refused.error().code, "unsupported") << c.field;
    EXPECT_NE(refused.error().message.find(fmt::format("'{}' is not supported", c.field)), std::string::npos)
        << refused.error().message;
    if (c.noop) {
      EXPECT_TRUE(parse(c.noop).has_value()) << c.field << " " << c.noop;
    }
    EXPECT_TRUE(parse("null").has_value()) << c.field;
  }
}

}  // namespace
}  // namespace recur::serve
