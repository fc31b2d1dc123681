#include "core/feedback.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace recur {
namespace {

Feedback example() {
  Feedback f;
  f.probe = "bench.kernel";
  f.tier = 2;
  f.cost_s = 1.8;
  f.subject = "kernel:kda_decode variant=vtile shape=B8,HV32,K128,V128";
  f.hypothesis = "the prologue is recomputed per V tile";
  f.verdict = Verdict::kConfirmed;
  f.add_metric("time_us", 41.2, "us").ci95 = std::pair(40.8, 41.7);
  f.add_metric("bandwidth_frac", 0.31);
  f.attribution = {{"kernel:kda_decode/prologue", 0.46, "instructions 46% in prologue"},
                   {"kernel:kda_decode/update", 0.50, "instructions 50% in the state update"},
                   {std::string(kUnattributed), 0.04, "other functions"}};
  f.attribution_is_decomposition = true;
  f.notes = {"compute-bound"};
  f.next = {"bench.kernel kda_decode variant=hoisted"};
  f.artifacts = {{"trace", "runs/12/trace.json"}};
  f.action = R"({"kind":"set","change":{"knob":"k","value":"v"}})";
  return f;
}

TEST(Feedback, JsonRoundTripKeepsEveryField) {
  Feedback f = example();
  ASSERT_TRUE(validate_feedback(f));
  std::string text = feedback_to_json(f).dump();
  auto back = feedback_from_json_text(text);
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(feedback_to_json(*back), feedback_to_json(f));
  EXPECT_EQ(back->verdict, Verdict::kConfirmed);
  ASSERT_EQ(back->metrics.size(), 2u);
  ASSERT_TRUE(back->metrics[0].ci95.has_value());
  EXPECT_DOUBLE_EQ(back->metrics[0].ci95->second, 41.7);
  EXPECT_FALSE(back->metrics[1].ci95.has_value());
  EXPECT_EQ(back->metrics[0].unit, "us");
  EXPECT_TRUE(back->attribution_is_decomposition);
  EXPECT_EQ(back->artifacts.at("trace"), "runs/12/trace.json");
  EXPECT_EQ(nlohmann::json::parse(back->action), nlohmann::json::parse(f.action));
  EXPECT_TRUE(feedback_to_json(f)["action"].is_object());  // its own member, an object, not text
}

TEST(Feedback, JsonMatchesTheDesignExampleShape) {
  nlohmann::json j = feedback_to_json(example());
  EXPECT_EQ(j["verdict"], "confirmed");
  EXPECT_EQ(j["metrics"][0]["ci95"], nlohmann::json({40.8, 41.7}));
  EXPECT_FALSE(j["metrics"][1].contains("unit"));
  EXPECT_EQ(j["attribution"][0]["share"], 0.46);
}

TEST(Feedback, ParseErrorsNameTheField) {
  auto bad_verdict = feedback_from_json_text(R"({"probe":"p","tier":1,"cost_s":0,"verdict":"maybe"})");
  ASSERT_FALSE(bad_verdict);
  EXPECT_NE(bad_verdict.error().message().find("verdict"), std::string::npos);
  auto missing = feedback_from_json_text(R"({"tier":1,"cost_s":0,"verdict":"failed"})");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("probe: missing"), std::string::npos);
  auto bad_metric = feedback_from_json_text(
      R"({"probe":"p","tier":1,"cost_s":0,"verdict":"failed","metrics":[{"name":"x","value":"fast"}]})");
  ASSERT_FALSE(bad_metric);
  EXPECT_NE(bad_metric.error().message().find("metrics[0].value"), std::string::npos) << bad_metric.error().message();
  EXPECT_FALSE(feedback_from_json_text("{not json"));
  auto bad_action = feedback_from_json_text(R"({"probe":"p","tier":1,"cost_s":0,"verdict":"failed","action":"set"})");
  ASSERT_FALSE(bad_action);
  EXPECT_NE(bad_action.error().message().find("action: expected an object"), std::string::npos);
  Feedback text_action = example();
  text_action.action = "change: k=v";
  EXPECT_FALSE(validate_feedback(text_action));
  EXPECT_FALSE(feedback_from_json_text(R"({"probe":"p","tier":1.5,"cost_s":0,"verdict":"failed"})"));
}

TEST(Feedback, ValidatorRejectsBadSharesAndDecompositions) {
  Feedback f = example();
  f.attribution[0].share = 1.3;
  auto s = validate_feedback(f);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("attribution[0].share"), std::string::npos);

  f = example();
  f.attribution.pop_back();  // no explicit remainder
  s = validate_feedback(f);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("unattributed"), std::string::npos);

  f = example();
  f.attribution[2].share = 0.10;  // sums to 1.06
  s = validate_feedback(f);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("sum"), std::string::npos);

  f = example();
  f.attribution_is_decomposition = false;  // a non-decomposition need not sum to 1
  f.attribution.pop_back();
  EXPECT_TRUE(validate_feedback(f));

  f = example();
  f.tier = 5;
  EXPECT_FALSE(validate_feedback(f));
  f = example();
  f.metrics[0].ci95 = std::pair(42.0, 41.0);
  EXPECT_FALSE(validate_feedback(f));
  f = example();
  f.metrics[1].value = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(validate_feedback(f));
}

TEST(Feedback, RenderFitsOnOneScreenAndShowsTheEssentials) {
  std::string text = render_feedback(example());
  EXPECT_NE(text.find("bench.kernel (tier 2"), std::string::npos) << text;
  EXPECT_NE(text.find("confirmed"), std::string::npos);
  EXPECT_NE(text.find("[40.8, 41.7]"), std::string::npos) << text;
  EXPECT_NE(text.find("46.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("next: bench.kernel kda_decode variant=hoisted"), std::string::npos);
  EXPECT_LT(std::count(text.begin(), text.end(), '\n'), 25);
}

}  // namespace
}  // namespace recur
