// The change model's predictions and the ranking of open changes by expected gain, against hand
// computed values on a gate parsed from text (no probe runs).
#include "loop/candidate_rank.h"

#include <cmath>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gate/gate.h"

namespace recur::agent {
namespace {

TEST(ChangeModel, ValueTraitsNameFormatsAndInstructionSets) {
  EXPECT_EQ(value_traits("f32")->significand_bits, 24);
  EXPECT_EQ(value_traits("f32_tiled")->significand_bits, 24);  // a variant of its format
  EXPECT_EQ(value_traits("fp8_e4m3")->significand_bits, 4);    // the whole name first, not "fp8"
  EXPECT_EQ(value_traits("bf16x6")->cost, 3.0);
  EXPECT_EQ(value_traits("avx2_split4")->lanes, 8);
  EXPECT_FALSE(value_traits("vtile").has_value());
  EXPECT_FALSE(value_traits("_f32").has_value());
  EXPECT_FALSE(value_traits("").has_value());
}

TEST(ChangeModel, PredictsErrorFromSignificandAndTimeFromCost) {
  auto e = predict_change("fp8_e4m3", "bf16", Aim::kError);
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->factor, 1.0 / 16);
  auto t = predict_change("bf16x6", "f32", Aim::kTime);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->factor, 1.0 / 3);
  auto v = predict_change("scalar", "avx512", Aim::kTime);
  ASSERT_TRUE(v);
  EXPECT_DOUBLE_EQ(v->factor, 1.0 / 16);
  EXPECT_TRUE(v->upper_bound);
  EXPECT_DOUBLE_EQ(predict_change("scalar", "avx512", Aim::kError)->factor, 1.0);
  EXPECT_FALSE(predict_change("vtile", "hoisted", Aim::kTime).has_value());
  EXPECT_FALSE(predict_change("f32", "avx2", Aim::kTime).has_value());  // a format against an ISA
}

TEST(ChangeModel, JudgesPredictionsInEfolds) {
  EXPECT_EQ(judge_prediction(0.5, 0.6, false), PredictionHeld::kHeld);    // 0.51 of 0.69 e-folds
  EXPECT_EQ(judge_prediction(0.5, 0.9, false), PredictionHeld::kPartly);  // the right way, too little
  EXPECT_EQ(judge_prediction(0.5, 1.1, false), PredictionHeld::kFailed);
  EXPECT_EQ(judge_prediction(1.0, 1.02, false), PredictionHeld::kHeld);   // no effect predicted, none seen
  EXPECT_EQ(judge_prediction(1.0, 2.0, false), PredictionHeld::kFailed);
  EXPECT_EQ(judge_prediction(4.0, 3.0, false), PredictionHeld::kHeld);    // a predicted harm
  EXPECT_EQ(judge_prediction(1.0 / 16, 0.5, true), PredictionHeld::kHeld);  // an upper bound
  EXPECT_EQ(judge_prediction(0.5, 0.0, false), PredictionHeld::kFailed);
}

// A gate parsed from `conditions` over an engine workload, its state evaluated from `values`.
struct Fixture {
  gate::GateSpec spec;
  GateState state;
  Evidence evidence;
  RankContext ctx() const { return {.spec = &spec, .gate = &state, .evidence = &evidence, .candidate_arm = "cand"}; }
};

Fixture fixture(const std::string& conditions, gate::MetricValues values, std::vector<Attribution> components) {
  Fixture f;
  auto spec = gate::parse_gate_spec(fmt::format("name = \"rank\"\nconditions = [{}]\n[workload.engine]\n"
                                                "model = \"synthetic\"\n[arms.cand]\n[arms.base]\n[arms.ref]\n",
                                                conditions),
                                    "rank.toml");
  EXPECT_TRUE(spec.has_value()) << spec.error().message();
  f.spec = std::move(*spec);
  gate::GateResult r = gate::evaluate_gate(f.spec, std::move(values), {}, 1.0);
  f.state.verdict = r.verdict;
  f.state.values = r.values;
  f.evidence.components = std::move(components);
  return f;
}

gate::MetricValue point(double v, bool boolean = false) { return {.value = gate::Interval::point(v), .boolean = boolean}; }

// A speed gate with an accuracy bound that holds, as a ranking sees it after attribution.
Fixture speed_fixture(double decode_ratio, double rel_err) {
  return fixture(R"c("logits_max_rel_err(cand vs ref) <= 1e-4", "decode_ratio(cand vs base) >= 2.0")c",
                 {{"logits_max_rel_err(cand vs ref)", point(rel_err)},
                  {"decode_ratio(cand vs base)", {.value = {decode_ratio, decode_ratio * 0.98, decode_ratio * 1.02}}}},
                 {{"kernel:gemm", 0.8, "time split"}, {"engine:attention", 0.2, "time split"}});
}

Candidate change(std::string knob, std::string from, std::string to, std::string component) {
  return {.knob = std::move(knob), .value = std::move(to), .from = std::move(from), .component = std::move(component),
          .why = "another choice"};
}

TEST(CandidateRank, OutlookScalesTheComponentShare) {
  const Fixture f = speed_fixture(1.0, 1e-7);
  ASSERT_NE(f.state.deciding(f.spec), nullptr);
  const ChangeOutlook o = outlook_of(change("kernel.gemm.precision", "bf16x6", "f32", "kernel:gemm"), f.ctx());
  ASSERT_TRUE(o.prediction);
  EXPECT_EQ(o.aim, Aim::kTime);
  EXPECT_EQ(o.metric, "decode_ratio(cand vs base)");
  EXPECT_EQ(o.direction, -1);  // a ratio of the candidate's throughput
  EXPECT_NEAR(o.overall_factor, 1 - 0.8 + 0.8 / 3, 1e-12);
  EXPECT_NEAR(o.expected_gain, 0.8 * 2 / 3, 1e-12);
  EXPECT_NEAR(*o.predicted, 1.0 / o.overall_factor, 1e-12);
  EXPECT_TRUE(o.risk.empty());
  EXPECT_NE(o.text(change("kernel.gemm.precision", "bf16x6", "f32", "kernel:gemm")).find("faster"), std::string::npos);
}

TEST(CandidateRank, ARiskToAHoldingConditionRanksLast) {
  const Fixture f = speed_fixture(1.0, 1e-7);
  std::vector<Candidate> cs = {
      change("kernel.gemm.precision", "bf16x6", "bf16", "kernel:gemm"),       // 6x cheaper, error x65536
      change("engine.kda.decode_variant", "vtile", "hoisted", "kernel:gemm"),  // unmodelled
      change("kernel.gemm.precision", "bf16x6", "f32", "kernel:gemm"),        // 3x cheaper, same bits
      change("kernel.attention_decode.variant", "avx2", "scalar", "engine:attention"),  // predicted slower
  };
  rank_changes(cs, f.ctx());
  EXPECT_EQ(cs[0].key(), "kernel.gemm.precision=f32");
  EXPECT_EQ(cs[1].key(), "engine.kda.decode_variant=hoisted");
  EXPECT_NEAR(cs[1].expected_gain, 0.8 * kUnmodelledGain, 1e-12);
  EXPECT_EQ(cs[2].key(), "kernel.attention_decode.variant=scalar");
  EXPECT_LT(cs[2].expected_gain, 0);
  EXPECT_EQ(cs[3].key(), "kernel.gemm.precision=bf16");
  EXPECT_NE(cs[3].prediction.find("past 0.0001"), std::string::npos) << cs[3].prediction;
}

TEST(GateStateDistance, SaysWhatWasReachedAndWhatTheGateNeeds) {
  const Fixture f = speed_fixture(1.2, 1e-7);
  EXPECT_EQ(distance_to_pass(f.spec, f.state), "best reached 1.2 on `decode_ratio(cand vs base)`, the gate needs >= 2");
  const Fixture passing = speed_fixture(2.5, 1e-7);
  EXPECT_EQ(distance_to_pass(passing.spec, passing.state), "");
}

TEST(CandidateRank, ErrorConditionsPredictFromSignificandBits) {
  Fixture f = fixture(R"c("logits_max_rel_err(cand vs ref) <= 1e-4")c", {{"logits_max_rel_err(cand vs ref)", point(3e-3)}},
                      {{"engine:kv_cache/layer[3]", 0.9, "op errors"}, {"kernel:gemm", 0.1, "op errors"}});
  std::vector<Candidate> cs = {change("kernel.gemm.precision", "bf16", "f32", "kernel:gemm"),
                               change("engine.kv_dtype.layer[3]", "fp8_e4m3", "bf16", "engine:kv_cache/layer[3]")};
  rank_changes(cs, f.ctx());
  EXPECT_EQ(cs[0].knob, "engine.kv_dtype.layer[3]");
  EXPECT_NEAR(cs[0].expected_gain, 0.9 * (1 - 1.0 / 16), 1e-12);
  EXPECT_NE(cs[0].prediction.find("cut its error ~16x"), std::string::npos) << cs[0].prediction;

  // After the gate: the error fell from 3e-3 to 4e-4 against a predicted 1 - 0.9 + 0.9/16.
  const ChangeOutlook o = outlook_of(cs[0], f.ctx());
  GateState after = f.state;
  after.values["logits_max_rel_err(cand vs ref)"].value = gate::Interval::point(4e-4);
  EXPECT_NE(prediction_note(o, after).find("prediction held"), std::string::npos) << prediction_note(o, after);
  after.values["logits_max_rel_err(cand vs ref)"].value = gate::Interval::point(3.1e-3);
  EXPECT_NE(prediction_note(o, after).find("did not hold"), std::string::npos);
}

TEST(CandidateRank, ATruthConditionIsPredictedOnTheGatesErrorMetric) {
  const Fixture f = fixture(R"c("tokens_equal(cand vs ref)", "logits_max_rel_err(cand vs ref) <= 1e-4")c",
                            {{"tokens_equal(cand vs ref)", point(0, true)}, {"logits_max_rel_err(cand vs ref)", point(2e-3)}},
                            {{"op:all_reduce", 1.0, "op errors"}});
  const ChangeOutlook o = outlook_of(change("engine.tp.reduce_dtype", "bf16", "f32", "op:all_reduce"), f.ctx());
  EXPECT_EQ(o.aim, Aim::kError);
  EXPECT_EQ(o.metric, "logits_max_rel_err(cand vs ref)");
  ASSERT_TRUE(o.predicted);
  EXPECT_NEAR(*o.predicted, 2e-3 / 65536, 1e-12);
}

}  // namespace
}  // namespace recur::agent
