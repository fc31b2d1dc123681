// The external proposers' shared protocol: finding the action in an LLM's free text, validating
// it against the state (the same rules for the command and the openai proposer), the compact
// state an LLM is prompted with, and the endpoint URL forms. Knobs are registered by the test
// (proposer_test_fixture.h); nothing here needs a network.
#include <gtest/gtest.h>

#include "loop/chat_client.h"
#include "loop/proposer_protocol.h"
#include "loop/proposer_test_fixture.h"

namespace recur::agent {
namespace {

using nlohmann::json;

std::string refusal(std::string_view text) {
  ProposerFixture f;
  Result<json> j = first_json_object(text);
  if (!j) return j.error().message();
  auto p = parse_action(*j, f.state, "test");
  return p ? "accepted" : p.error().message();
}

TEST(FirstJsonObject, FindsTheActionInProseAndFences) {
  const json want = {{"action", "set"}, {"knobs", {{"a", "b"}}}};
  EXPECT_EQ(*first_json_object(R"({"action": "set", "knobs": {"a": "b"}})"), want);
  EXPECT_EQ(*first_json_object("Sure! Here is my answer:\n```json\n{\"action\": \"set\", \"knobs\": {\"a\": \"b\"}}\n```\n"
                               "It should help."),
            want);
  // Two objects: the first one counts.
  EXPECT_EQ(*first_json_object(R"(first {"action": "set", "knobs": {"a": "b"}} then {"action": "stop"})"), want);
  // Braces inside strings do not end the object; a broken object before a good one is skipped.
  EXPECT_EQ(*first_json_object(R"({not json} {"why": "a } in a string {"})"), json({{"why", "a } in a string {"}}));
}

TEST(FirstJsonObject, NoObjectIsAnErrorThatQuotesTheAnswer) {
  for (std::string_view text : {"", "I would make it faster.", "[1, 2]", "{\"open\": "}) {
    Result<json> j = first_json_object(text);
    ASSERT_FALSE(j) << text;
    EXPECT_NE(j.error().message().find("no JSON object in the answer"), std::string::npos);
    EXPECT_NE(j.error().message().find(std::string(text)), std::string::npos);
  }
}

TEST(Excerpt, IsValidUtf8AndBounded) {
  EXPECT_EQ(excerpt("short"), "short");
  // Invalid bytes are replaced (U+FFFD), so the refusal can go into the journal's JSON.
  EXPECT_EQ(excerpt("a\xff\xfe b"), "a\xef\xbf\xbd\xef\xbf\xbd b");
  // A cut never splits a character: "é" is two bytes, the third byte would be inside the second.
  EXPECT_EQ(excerpt("\xc3\xa9\xc3\xa9", 3), "\xc3\xa9...");
  EXPECT_NO_THROW((void)json(excerpt(std::string(500, '\x80'), 100)).dump());
  EXPECT_LE(excerpt(std::string(500, 'x'), 100).size(), 103u);
}

TEST(ParseAction, AcceptsOneValidChange) {
  ProposerFixture f;
  auto p = parse_action(json::parse(R"({"action": "set", "knobs": {"test.proposer.color": "green"},
                                        "hypothesis": "green paints faster"})"),
                        f.state, "test");
  ASSERT_TRUE(p) << p.error().message();
  ASSERT_TRUE(p->has_value());
  EXPECT_EQ((*p)->change.knob, "test.proposer.color");
  EXPECT_EQ((*p)->change.value, "green");
  EXPECT_EQ((*p)->change.from, "red");
  EXPECT_EQ((*p)->change.component, "test:paint");
  EXPECT_EQ((*p)->hypothesis, "green paints faster");
  // The short form is the same change.
  auto s = parse_action(json::parse(R"({"knob": "test.proposer.color", "value": "green", "hypothesis": "h"})"), f.state,
                        "test");
  ASSERT_TRUE(s && s->has_value());
  EXPECT_EQ((*s)->change.key(), "test.proposer.color=green");
}

TEST(ParseAction, StopIsNoChange) {
  ProposerFixture f;
  for (const char* text : {R"({"action": "stop", "why": "done"})", R"({"stop": true})"}) {
    auto p = parse_action(json::parse(text), f.state, "test");
    ASSERT_TRUE(p) << text;
    EXPECT_FALSE(p->has_value()) << text;
  }
}

TEST(ParseAction, RefusesWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"action": "patch", "diff": "..."})", "action \"patch\" is not allowed in this run"},
      {R"({"action": "reset"})", "action \"reset\" is not supported"},
      {R"({"action": 3})", "action 3 is not supported"},
      {R"({"action": "probe", "probe": "gate", "args": {"kernel": "rmsnorm"}})", "\"check\" or \"bench\""},
      {R"({"action": "probe", "probe": "check", "args": {"kernel": "nosuch"}})", "unknown kernel 'nosuch'"},
      {R"({"action": "probe", "probe": "check", "args": {"kernel": "rmsnorm", "shape": "M1 --x"}})", "one word"},
      {R"({"action": "probe", "probe": "bench", "args": {"kernel": "rmsnorm", "budget_s": 99}})", "(0, 30]"},
      {R"({"action": "set", "knobs": {"test.proposer.color": "green", "test.proposer.other": "8"}, "hypothesis": "h"})",
       "exactly one knob"},
      {R"({"action": "set", "knobs": {"test.proposer.color": 2}, "hypothesis": "h"})", "exactly one knob and a string"},
      {R"({"action": "set", "knobs": ["test.proposer.color"], "hypothesis": "h"})", "exactly one knob"},
      {R"({"knob": "test.proposer.color", "value": true, "hypothesis": "h"})", "member 'value' must be a string"},
      {R"({"action": "set", "knobs": {"test.proposer.color": "green"}})", "'hypothesis' must be a string"},
      {R"({"action": "set", "knobs": {"test.proposer.color": "green"}, "hypothesis": 1})", "'hypothesis' must be a string"},
      {R"({"action": "set", "knobs": {"test.proposer.paint": "green"}, "hypothesis": "h"})",
       "unknown knob 'test.proposer.paint'"},
      {R"({"action": "set", "knobs": {"test.proposer.color": "purple"}, "hypothesis": "h"})",
       "test.proposer.color=purple"},
      {R"({"action": "set", "knobs": {"test.proposer.pinned": "true"}, "hypothesis": "h"})", "fixed by the episode"},
      {R"({"action": "set", "knobs": {"test.proposer.color": "red"}, "hypothesis": "h"})",
       "already red: a change must change something"},
      {R"({"action": "set", "knobs": {"test.proposer.color": "blue"}, "hypothesis": "h"})", "already tried"},
  };
  for (const auto& [text, want] : cases) {
    const std::string why = refusal(text);
    EXPECT_NE(why.find(want), std::string::npos) << text << " -> " << why;
    EXPECT_NE(why.find("proposer 'test'"), std::string::npos) << why;
  }
}

TEST(ParseAction, PatchAndProbeActions) {
  ProposerFixture f;
  f.state.allow_patches = true;
  const std::string diff = "--- a/x.h\n+++ b/x.h\n@@ -1 +1 @@\n-a\n+b\n";
  auto p = parse_action(json{{"action", "patch"}, {"patch", diff}, {"hypothesis", "h"}, {"kernel", "rmsnorm"}}, f.state,
                        "test");
  ASSERT_TRUE(p && *p) << (p ? "stop" : p.error().message());
  EXPECT_EQ((*p)->kind, ActionKind::kPatch);
  EXPECT_EQ((*p)->patch, diff);
  EXPECT_EQ((*p)->target.kernel, "rmsnorm");
  auto bad = parse_action(json{{"action", "patch"}, {"patch", "not a diff"}, {"hypothesis", "h"}}, f.state, "test");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("not a unified diff"), std::string::npos) << bad.error().message();
  auto q = parse_action(json::parse(R"({"action": "probe", "probe": "check", "args": {"kernel": "rmsnorm",
                                        "variant": "scalar", "budget_s": 1}})"),
                        f.state, "test");
  ASSERT_TRUE(q && *q) << (q ? "stop" : q.error().message());
  EXPECT_EQ((*q)->kind, ActionKind::kProbe);
  EXPECT_EQ((*q)->probe, ProbeKind::kCheck);
  EXPECT_EQ((*q)->target.variant, "scalar");
  EXPECT_EQ((*q)->target.budget_s, 1.0);
  // A shape is parsed against the kernel's parameters when the proposal is accepted.
  auto shaped = parse_action(json::parse(R"({"action": "probe", "probe": "bench", "args": {"kernel": "rmsnorm",
                                             "shape": "M8"}})"),
                             f.state, "test");
  ASSERT_TRUE(shaped && *shaped) << (shaped ? "stop" : shaped.error().message());
  ASSERT_TRUE((*shaped)->target.shape);
  EXPECT_EQ((*shaped)->target.shape->find("M"), 8);
  auto bad_shape = parse_action(json::parse(R"({"action": "probe", "probe": "bench", "args": {"kernel": "rmsnorm",
                                                "shape": "Q9"}})"),
                                f.state, "test");
  ASSERT_FALSE(bad_shape);
  EXPECT_NE(bad_shape.error().message().find("Q9"), std::string::npos) << bad_shape.error().message();
  EXPECT_EQ(state_json(f.state)["actions"], json({"set", "patch", "probe", "stop"}));
  // Evidence whose largest component no knob acts on asks a patch-capable proposer for a patch.
  f.state.evidence.components.insert(f.state.evidence.components.begin(), {"engine:norm", 0.7, "self time"});
  const json with = state_json(f.state);
  ASSERT_TRUE(with.contains("patch_request"));
  EXPECT_NE(with["patch_request"].get<std::string>().find("engine:norm"), std::string::npos);
  EXPECT_EQ(with["knobless"][0], "engine:norm (70%)");
  f.state.allow_patches = false;
  EXPECT_FALSE(state_json(f.state).contains("patch_request"));
}

TEST(CompactState, KeepsTheRelevantKnobsAndCutsLongText) {
  ProposerFixture f;
  f.state.rejected = {"refused: proposer 'test': unknown knob 'x'"};
  const json full = state_json(f.state);
  const json c = compact_state_json(f.state);
  std::vector<std::string> names;
  for (const json& k : c["knobs"]) names.push_back(k["name"]);
  // Tagged with the evidence's component (test:paint covers test:paint/brush); not the others.
  EXPECT_EQ(names, (std::vector<std::string>{"test.proposer.color", "test.proposer.pinned"}));
  EXPECT_GT(full["knobs"].size(), c["knobs"].size());
  EXPECT_LT(c["episode"]["description"].get<std::string>().size(), 300u);
  EXPECT_NE(c["episode"]["description"].get<std::string>().find("(1000 bytes in all)"), std::string::npos);
  EXPECT_EQ(c["rejected"], full["rejected"]);
  EXPECT_EQ(c["fixed"], json({"test.proposer.pinned"}));
  ASSERT_FALSE(c["next"].empty());
  EXPECT_EQ(c["next"][0]["knob"], "test.proposer.color");  // green: blue was tried
  EXPECT_EQ(c["next"][0]["value"], "green");
}

// A lookahead's state names the tentative change, its license and the score the pair must beat;
// outside a lookahead the member is absent. The compact state keeps it.
TEST(StateJson, ALookaheadSaysWhatIsTentativeAndWhatThePairMustBeat) {
  ProposerFixture f;
  EXPECT_FALSE(state_json(f.state).contains("lookahead"));
  f.state.lookahead = Lookahead{.knob = "test.proposer.color", .from = "red", .value = "green",
                                .licensed_by = "check: max_rel 0.001 -> 6e-08",
                                .alone = "1 failing -> 2 failing", .must_beat = "1 failing"};
  const json j = state_json(f.state);
  ASSERT_TRUE(j.contains("lookahead"));
  EXPECT_EQ(j["lookahead"]["tentative"], json({{"knob", "test.proposer.color"}, {"from", "red"}, {"value", "green"}}));
  EXPECT_EQ(j["lookahead"]["licensed_by"], "check: max_rel 0.001 -> 6e-08");
  EXPECT_EQ(j["lookahead"]["must_beat"], "1 failing");
  EXPECT_EQ(compact_state_json(f.state)["lookahead"]["alone"], "1 failing -> 2 failing");
}

TEST(ChatUrl, BaseOrFullUrl) {
  auto base = parse_chat_url("http://127.0.0.1:8000/v1/");
  ASSERT_TRUE(base);
  EXPECT_EQ(base->origin, "http://127.0.0.1:8000");
  EXPECT_EQ(base->chat_path, "/v1/chat/completions");
  EXPECT_EQ(base->models_path, "/v1/models");
  auto full = parse_chat_url("https://api.example.com/openai/v1/chat/completions");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->origin, "https://api.example.com");
  EXPECT_EQ(full->chat_path, "/openai/v1/chat/completions");
  EXPECT_EQ(full->models_path, "/openai/v1/models");
  EXPECT_EQ(parse_chat_url("http://localhost:9")->chat_path, "/v1/chat/completions");
  for (std::string_view bad : {"localhost:8000/v1", "ftp://x/v1", "http://", "http://h/v1?key=1"})
    EXPECT_FALSE(parse_chat_url(bad)) << bad;
}

}  // namespace
}  // namespace recur::agent

namespace recur::agent {
namespace {

TEST(Proposal, JsonRoundTripsEveryKind) {
  Proposal set;
  set.hypothesis = "h";
  set.change = {.knob = "engine.kv_dtype.layer[3]", .value = "bf16", .from = "fp8_e4m3",
                .component = "engine:kv_cache/layer[3]", .why = "another choice", .expected_gain = 0.84,
                .prediction = "should cut its error ~16x"};
  auto back = proposal_from_json(json::parse(proposal_to_json(set).dump()));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->kind, ActionKind::kSet);
  EXPECT_EQ(back->change.key(), set.change.key());
  EXPECT_EQ(back->change.from, "fp8_e4m3");
  EXPECT_EQ(back->change.component, set.change.component);
  EXPECT_DOUBLE_EQ(back->change.expected_gain, 0.84);
  EXPECT_EQ(describe_proposal(*back), "set engine.kv_dtype.layer[3]=bf16 (from fp8_e4m3)");
  EXPECT_EQ(back->change.prediction, set.change.prediction);

  Proposal probe;
  probe.kind = ActionKind::kProbe;
  probe.probe = ProbeKind::kBench;
  probe.target = {.kernel = "rmsnorm", .variant = "scalar", .vs = "avx2", .shape = parse_kernel_shape("rmsnorm", "M8").value(),
                  .budget_s = 1.5};
  const json pj = proposal_to_json(probe);
  EXPECT_EQ(pj["target"]["shape"]["M"], 8);  // a typed shape, not "M8"
  auto pb = proposal_from_json(pj);
  ASSERT_TRUE(pb) << pb.error().message();
  EXPECT_EQ(pb->probe, ProbeKind::kBench);
  EXPECT_EQ(pb->target.shape, probe.target.shape);
  EXPECT_EQ(pb->target.budget_s, 1.5);
  EXPECT_EQ(pb->target.vs, "avx2");
  EXPECT_EQ(describe_proposal(*pb), "probe bench rmsnorm variant scalar vs avx2 shape M8,N4096");

  Proposal patch;
  patch.kind = ActionKind::kPatch;
  patch.patch = "--- a/x\n+++ b/x\n";
  auto pp = proposal_from_json(proposal_to_json(patch));
  ASSERT_TRUE(pp) << pp.error().message();
  EXPECT_EQ(pp->patch, patch.patch);
  EXPECT_FALSE(pp->target.shape);
}

TEST(Proposal, ErrorsNameTheMember) {
  auto expect_error = [](const char* text, const char* want) {
    auto p = proposal_from_json(json::parse(text));
    ASSERT_FALSE(p) << text;
    EXPECT_NE(p.error().message().find(want), std::string::npos) << p.error().message();
  };
  expect_error(R"({"kind": "jump"})", "action.kind");
  expect_error(R"({"kind": "set"})", "action.change");
  expect_error(R"({"kind": "set", "change": {"knob": 3, "value": "x"}})", "action.change.knob");
  expect_error(R"({"kind": "probe", "probe": "check", "target": {"kernel": "rmsnorm", "shape": {"Q": 1}}})",
               "action.target.shape.Q");
  expect_error(R"({"kind": "probe", "probe": "check", "target": {"kernel": "rmsnorm", "shape": {"M": 0}}})",
               "action.target.shape");
  expect_error(R"({"kind": "probe", "probe": "fly", "target": {"kernel": "rmsnorm"}})", "action.probe");
  expect_error(R"([1])", "action: expected an object");
}

}  // namespace
}  // namespace recur::agent
