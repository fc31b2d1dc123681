// OpenAIProposer against an in-process fake OpenAI endpoint (cpp-httplib on 127.0.0.1): the
// request it sends (model from /models, temperature 0, bounded max_tokens, the system prompt,
// the compact state, the Bearer key), an answer wrapped in prose and fences accepted, HTTP and
// connection errors refused with the reason, and the call and token limits stopping it.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "loop/openai_proposer.h"
#include "loop/proposer_factory.h"
#include "loop/proposer_protocol.h"
#include "loop/proposer_test_fixture.h"

namespace recur::agent {
namespace {

using nlohmann::json;

class FakeEndpoint {
 public:
  explicit FakeEndpoint(int status, std::string body) {
    server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})", "application/json");
    });
    server_.Post("/v1/chat/completions", [this, status, body](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      requests_.push_back(json::parse(req.body, nullptr, false));
      authorization_ = req.get_header_value("Authorization");
      res.status = status;
      res.set_content(body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~FakeEndpoint() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::vector<json> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  std::string authorization() {
    std::lock_guard lock(mu_);
    return authorization_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<json> requests_;
  std::string authorization_;
};

std::string chat_completion(std::string_view content, int prompt_tokens, int completion_tokens) {
  return json({{"object", "chat.completion"},
               {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}},
                             {"finish_reason", "stop"}}}},
               {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}}}})
      .dump();
}

TEST(OpenAIProposer, SendsTheCompactStateAndAcceptsAnAnswerInProse) {
  FakeEndpoint fake(200, chat_completion("Green should help.\n```json\n{\"action\": \"set\", \"knobs\": "
                                         "{\"test.proposer.color\": \"green\"}, \"hypothesis\": \"green is faster\"}\n```",
                                         100, 20));
  ProposerFixture f;
  f.state.rejected = {"refused: an earlier answer"};
  ::setenv("RECUR_PROPOSER_API_KEY", "test-key", 1);
  ProposerOptions o;
  o.limits.max_tokens = 100;
  auto p = OpenAIProposer::create(fake.url(), o);
  ::unsetenv("RECUR_PROPOSER_API_KEY");
  ASSERT_TRUE(p) << p.error().message();
  auto r = (*p)->propose(f.state);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->change.key(), "test.proposer.color=green");
  EXPECT_EQ((*r)->change.from, "red");
  EXPECT_EQ((*r)->hypothesis, "green is faster");
  EXPECT_EQ((*r)->change.why, "proposed by openai:" + fake.url());

  const std::vector<json> requests = fake.requests();
  ASSERT_EQ(requests.size(), 1u);
  const json& req = requests[0];
  EXPECT_EQ(req["model"], "fake-model");  // from GET /v1/models
  EXPECT_EQ(req["temperature"], 0);
  EXPECT_GT(req["max_tokens"].get<int>(), 0);
  EXPECT_LE(req["max_tokens"].get<int>(), 1024);
  EXPECT_EQ(req["messages"][0]["role"], "system");
  EXPECT_EQ(req["messages"][0]["content"], std::string(kOpenAIProposerSystemPrompt));
  const json state = json::parse(req["messages"][1]["content"].get<std::string>());
  EXPECT_EQ(state["rejected"], json({"refused: an earlier answer"}));
  EXPECT_EQ(state["knobs"].size(), 2u);  // only the knobs tagged with the evidence's component
  EXPECT_EQ(fake.authorization(), "Bearer test-key");

  // 120 tokens of usage spent the 100-token limit: the next proposal is a stop with the reason.
  EXPECT_EQ((*p)->tokens(), 120);
  auto next = (*p)->propose(f.state);
  ASSERT_TRUE(next);
  EXPECT_FALSE(next->has_value());
  EXPECT_EQ((*p)->stop_reason(), "proposer limit: 120 tokens of 100 (--proposer-max-tokens)");
  EXPECT_EQ(fake.requests().size(), 1u);
}

TEST(OpenAIProposer, AnInvalidActionIsRefusedWithTheParseActionReason) {
  FakeEndpoint fake(200, chat_completion(R"({"action": "set", "knobs": {"test.proposer.pinned": "true"}, "hypothesis": "h"})",
                                         10, 10));
  ProposerFixture f;
  ProposerOptions o;
  o.model = "m";
  auto p = OpenAIProposer::create(fake.url() + "/chat/completions", o);
  ASSERT_TRUE(p);
  auto r = (*p)->propose(f.state);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("knob test.proposer.pinned is fixed by the episode"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(fake.requests().at(0)["model"], "m");
}

TEST(OpenAIProposer, AnHttpErrorIsRefusedWithTheEndpointsMessage) {
  FakeEndpoint fake(503, R"({"error": {"message": "the model is overloaded", "type": "server_error"}})");
  ProposerFixture f;
  ProposerOptions o;
  o.model = "m";
  auto p = OpenAIProposer::create(fake.url(), o);
  ASSERT_TRUE(p);
  auto r = (*p)->propose(f.state);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("HTTP 503: the model is overloaded"), std::string::npos) << r.error().message();
}

TEST(OpenAIProposer, AConnectionErrorIsRefusedAndTheCallLimitStops) {
  ProposerFixture f;
  ProposerOptions o;
  o.model = "m";
  o.limits.max_calls = 1;
  auto p = OpenAIProposer::create("http://127.0.0.1:1/v1", o);  // nothing listens on port 1
  ASSERT_TRUE(p) << p.error().message();
  auto first = (*p)->propose(f.state);
  ASSERT_FALSE(first);
  EXPECT_NE(first.error().message().find("POST http://127.0.0.1:1/v1/chat/completions"), std::string::npos)
      << first.error().message();
  auto second = (*p)->propose(f.state);
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->has_value());
  EXPECT_EQ((*p)->stop_reason(), "proposer limit: 1 calls (--proposer-max-calls)");
  EXPECT_EQ((*p)->calls(), 1);
}

// [expect] is for the scorer only: no proposer input may carry it. Every input a proposer gets
// (the command proposer's stdin, the OpenAI request with its system prompt, the state documents
// both are built from) is searched for the table's strings.
TEST(ProposerInputs, NeverContainTheExpectTable) {
  ProposerFixture f;
  f.episode.expect = Expect{.passes = true,
                            .root_cause = {{"test.proposer.color", "green|SENTINEL_ROOT_5e1f"}},
                            .decoys = {"test.proposer.other"},
                            .why = "SENTINEL_WHY_c0de",
                            .verify = {{"test.proposer.color", "green"}}};
  const std::vector<std::string> secrets = {"SENTINEL_ROOT_5e1f", "SENTINEL_WHY_c0de", "root_cause", "decoys",
                                            "\"expect\"", "verify"};
  std::vector<std::pair<std::string, std::string>> inputs = {{"state_json", state_json(f.state).dump()},
                                                             {"compact_state_json", compact_state_json(f.state).dump()}};
  FakeEndpoint fake(200, chat_completion(R"({"action": "stop", "why": "enough"})", 1, 1));
  ProposerOptions o;
  o.model = "m";
  auto openai = OpenAIProposer::create(fake.url(), o);
  ASSERT_TRUE(openai);
  ASSERT_TRUE((*openai)->propose(f.state));
  ASSERT_EQ(fake.requests().size(), 1u);
  inputs.push_back({"openai request", fake.requests()[0].dump()});
  const std::string stdin_copy = ::testing::TempDir() + "recur-proposer-stdin.json";
  auto cmd = make_proposer("cmd:{ cat > '" + stdin_copy + "'; echo '{\"stop\": true}'; }");
  ASSERT_TRUE(cmd);
  ASSERT_TRUE((*cmd)->propose(f.state));
  std::ifstream in(stdin_copy);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty());
  inputs.push_back({"command proposer stdin", text.str()});
  for (const auto& [what, body] : inputs)
    for (const std::string& secret : secrets) EXPECT_EQ(body.find(secret), std::string::npos) << what << " contains " << secret;
  std::remove(stdin_copy.c_str());
}

}  // namespace
}  // namespace recur::agent
