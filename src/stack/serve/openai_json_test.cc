#include "serve/openai_json.h"

#include "serve/logprobs_json.h"

#include <gtest/gtest.h>

namespace recur::serve {
namespace {

using nlohmann::json;

const ResponseMeta kChat{CompletionRequest::Kind::kChat, "chatcmpl-1", 1700000000, "tiny"};
const ResponseMeta kText{CompletionRequest::Kind::kCompletion, "cmpl-1", 1700000000, "tiny"};

// The JSON inside one SSE event, checking the framing.
json event_json(const std::string& event) {
  EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n");
  EXPECT_EQ(event.find('\n'), event.size() - 2) << "one line per event";
  return json::parse(event.substr(6, event.size() - 8));
}

TEST(OpenAIJsonTest, ChatChunks) {
  json first = event_json(sse_event(stream_chunk(kChat, "Hi", true, std::nullopt, false)));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["id"], "chatcmpl-1");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "Hi");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));
  json next = event_json(sse_event(stream_chunk(kChat, "!", false, std::nullopt, true)));
  EXPECT_FALSE(next["choices"][0]["delta"].contains("role"));
  EXPECT_TRUE(next["usage"].is_null());
  json last = event_json(sse_event(stream_chunk(kChat, "", false, "length", false)));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
}

TEST(OpenAIJsonTest, CompletionChunkAndUsageChunk) {
  json chunk = event_json(sse_event(stream_chunk(kText, "abc", true, std::nullopt, false)));
  EXPECT_EQ(chunk["object"], "text_completion");
  EXPECT_EQ(chunk["choices"][0]["text"], "abc");
  json usage = event_json(sse_event(usage_chunk(kText, {5, 3})));
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 8);
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST(OpenAIJsonTest, FullResponses) {
  json chat = full_response(kChat, "hello", "stop", {4, 2});
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(chat["choices"][0]["message"]["content"], "hello");
  EXPECT_EQ(chat["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(chat["usage"]["completion_tokens"], 2);
  EXPECT_EQ(chat["usage"]["total_tokens"], 6);
  json text = full_response(kText, "x", "length", {1, 1});
  EXPECT_EQ(text["choices"][0]["text"], "x");
  EXPECT_EQ(text["choices"][0]["finish_reason"], "length");
}

TEST(OpenAIJsonTest, InvalidUtf8IsReplacedNotThrown) {
  std::string event = sse_event(stream_chunk(kText, "a\xE2\x82", false, std::nullopt, false));
  json j = event_json(event);
  EXPECT_EQ(j["choices"][0]["text"], "a\xEF\xBF\xBD");
}

TEST(LogprobsJsonTest, LegacyFormatWithAnEchoedPromptAndRunningOffsets) {
  LogprobsJson lj(CompletionRequest::Kind::kCompletion);
  const std::vector<TokenLogprob> first = {{"Once", std::nullopt, {}}, {" upon", -1.5, {{" upon", -1.5}, {" a", -2.0}}}};
  json a = lj.render(first);
  EXPECT_EQ(a["tokens"], json({"Once", " upon"}));
  EXPECT_EQ(a["token_logprobs"], json({nullptr, -1.5}));
  EXPECT_TRUE(a["top_logprobs"][0].is_null());
  EXPECT_EQ(a["top_logprobs"][1], json({{" upon", -1.5}, {" a", -2.0}}));
  EXPECT_EQ(a["text_offset"], json({0, 4}));
  // The sampled token is in the dictionary even when it is not among the alternatives.
  const std::vector<TokenLogprob> next = {{" x", -3.0, {{" a", -0.5}}}};
  json b = lj.render(next);
  EXPECT_EQ(b["text_offset"], json({9}));
  EXPECT_EQ(b["top_logprobs"][0], json({{" a", -0.5}, {" x", -3.0}}));
}

TEST(LogprobsJsonTest, ChatFormatHasBytes) {
  const std::vector<TokenLogprob> entries = {{"h\xC3", -0.25, {{"h\xC3", -0.25}}}};
  json j = LogprobsJson(CompletionRequest::Kind::kChat).render(entries);
  ASSERT_EQ(j["content"].size(), 1u);
  EXPECT_EQ(j["content"][0]["bytes"], json({104, 195}));
  EXPECT_EQ(j["content"][0]["logprob"], -0.25);
  EXPECT_EQ(j["content"][0]["top_logprobs"][0]["bytes"], json({104, 195}));
  EXPECT_TRUE(j["refusal"].is_null());
  // Invalid UTF-8 in a token is written replaced, never an exception.
  EXPECT_NE(json_text(j).find("h\xEF\xBF\xBD"), std::string::npos);
}

}  // namespace
}  // namespace recur::serve
