// [expect] parsing and matching, the scorer (score_run, summarize), the random proposer and the
// suite's file discovery: values against hand-computed references, and errors on bad input.
#include <filesystem>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>

#include "loop/gate_state.h"
#include "loop/proposer_factory.h"

#include "eval/eval.h"
#include "loop/expect.h"
#include "loop/proposer_test_fixture.h"
#include "loop/random_proposer.h"

namespace recur::agent {
namespace {

namespace fs = std::filesystem;

RECUR_KNOB(eval_test_layer, {.name = "test.eval.layer[]", .type = KnobType::kEnum, .choices = {"wide", "narrow"},
                             .default_value = "wide", .components = {"test:layer"}, .help = "a per-layer knob"});

Result<Expect> parse(std::string_view text) {
  auto root = gate::parse_toml(text, "e.toml");
  if (!root) return unexpected(root.error());
  static toml::table keep;  // TomlTable refers to the table; keep it alive for the call
  keep = std::move(*root);
  gate::TomlTable top(keep, "e.toml", "the top level");
  auto sub = top.subtable("expect");
  if (!sub) return unexpected(sub.error());
  return parse_expect(**sub, KnobRegistry::global());
}

TEST(Expect, ReadsEveryFieldAndDefaultsVerifyToLiteralRootCauses) {
  auto e = parse(R"toml([expect]
passes = true
root_cause = ["test.proposer.color=green", "test.proposer.other=(8|16)"]
decoys = ["test.proposer.pinned"]
why = "because"
[expect.verify]
"test.proposer.other" = 8
)toml");
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_TRUE(e->passes);
  ASSERT_EQ(e->root_cause.size(), 2u);
  EXPECT_EQ(e->root_cause[1].text(), "test.proposer.other=(8|16)");
  EXPECT_TRUE(e->root_cause[1].matches("16"));
  EXPECT_FALSE(e->root_cause[1].matches("160"));  // the whole value must match
  EXPECT_EQ(e->decoys, std::vector<std::string>{"test.proposer.pinned"});
  EXPECT_EQ(e->why, "because");
  // The literal root cause joins the explicit verify value.
  EXPECT_EQ(e->verify, (std::map<std::string, std::string>{{"test.proposer.color", "green"}, {"test.proposer.other", "8"}}));
}

TEST(Expect, RefusesMalformedTablesWithThePosition) {
  const std::pair<const char*, const char*> cases[] = {
      {"[expect]\nroot_cause = [\"test.proposer.color\"]\n", "expected \"knob=VALUE\""},
      {"[expect]\nroot_cause = [\"no.such.knob=1\"]\n", "unknown knob 'no.such.knob'"},
      {"[expect]\nroot_cause = [\"test.proposer.color=(red\"]\n", "bad regex"},
      {"[expect]\npasses = false\nroot_cause = [\"test.proposer.color=green\"]\n", "no root cause to name"},
      {"[expect]\npasses = \"yes\"\n", "expected true or false"},
      {"[expect]\nroot_cause = [\"test.proposer.color=green\"]\ndecoys = [\"test.proposer.color\"]\n",
       "also a root cause knob"},
      {"[expect]\nroot_cause = [\"test.proposer.color=gr.*\"]\n", "give [expect.verify] a concrete value"},
      {"[expect]\nroot_cause = [\"test.proposer.color=green\"]\n[expect.verify]\n\"test.proposer.color\" = \"blue\"\n",
       "does not match the root cause"},
      {"[expect]\nroot_cause = [\"test.proposer.color=purple\"]\n", "test.proposer.color"},
      {"[expect]\npasses = false\n[expect.verify]\n\"test.proposer.color\" = \"blue\"\n", "nothing to verify"},
      {"[expect]\nroot_causes = []\n", "root_causes"},
      {"[expect]\nroot_cause = [\"test.proposer.color=(((((red)))))\"]\n", "at most 200 bytes and 4 nested groups"},
  };
  for (const auto& [text, wanted] : cases) {
    auto e = parse(text);
    ASSERT_FALSE(e) << text;
    EXPECT_NE(e.error().message().find(wanted), std::string::npos) << e.error().message();
    EXPECT_NE(e.error().message().find("e.toml"), std::string::npos) << e.error().message();
  }
}

Expect paint_expect() {
  return {.passes = true,
          .root_cause = {{"test.proposer.color", "green|blue"}},
          .decoys = {"test.proposer.other"},
          .why = "",
          .verify = {{"test.proposer.color", "green"}}};
}

TEST(Expect, MatchComparesTheFinalConfigurationWithTheStart) {
  const Expect e = paint_expect();
  const std::map<std::string, std::string> start = {{"test.proposer.color", "red"}};
  ExpectMatch m = match_expect(e, start, {{"test.proposer.color", "green"}});
  EXPECT_TRUE(m.root_cause_named);
  m = match_expect(e, start, {{"test.proposer.color", "green"}, {"test.proposer.other", "8"}});
  EXPECT_FALSE(m.root_cause_named);
  EXPECT_EQ(m.decoys_kept, std::vector<std::string>{"test.proposer.other=8"});
  // Setting a knob to its default is no change; missing the root cause is reported.
  m = match_expect(e, start, {{"test.proposer.color", "red"}, {"test.proposer.other", "4"}});
  EXPECT_FALSE(m.root_cause_named);
  EXPECT_EQ(m.missing, std::vector<std::string>{"test.proposer.color=green|blue"});
  EXPECT_TRUE(m.decoys_kept.empty());
  // A "[]" decoy names every index of its family.
  Expect family = e;
  family.decoys = {"test.eval.layer[]"};
  EXPECT_TRUE(is_decoy(family, "test.eval.layer[2]"));
  EXPECT_FALSE(is_decoy(family, "test.eval.layers"));
  m = match_expect(family, start, {{"test.proposer.color", "green"}, {"test.eval.layer[2]", "narrow"}});
  EXPECT_EQ(m.decoys_kept, std::vector<std::string>{"test.eval.layer[2]=narrow"});
  m = match_expect(e, start, {{"test.proposer.color", "blue"}, {"test.proposer.pinned", "true"}});
  EXPECT_TRUE(m.root_cause_named);
  EXPECT_EQ(m.extra, std::vector<std::string>{"test.proposer.pinned=true"});
}

LoggedExperiment experiment(int64_t step, KnobDiff diff, Decision d, double cost) {
  LoggedExperiment e;
  e.step = step;
  e.spec.config_diff = std::move(diff);
  e.decision = d;
  e.feedback.cost_s = cost;
  return e;
}

TEST(Eval, ScoreCountsWastedSecondsAndTheOutcome) {
  Episode ep;
  ep.name = "paint";
  ep.expect = paint_expect();
  LoopResult r;
  r.start = {{"test.proposer.color", "red"}};
  r.final_config = {{"test.proposer.color", "green"}, {"test.proposer.other", "8"}};
  r.passed = true;
  r.spent_s = 10;
  r.experiments = {experiment(0, {}, Decision::kNone, 1),                                    // the gate
                   experiment(1, {{"test.proposer.color", "blue"}}, Decision::kNone, 0.5),  // check, then
                   experiment(2, {{"test.proposer.color", "blue"}}, Decision::kRevert, 2),  // reverted
                   experiment(3, {{"test.proposer.other", "8"}}, Decision::kKeep, 3),       // a decoy kept
                   experiment(4, {{"test.proposer.color", "green"}}, Decision::kNone, 0.25),
                   experiment(5, {{"test.proposer.color", "green"}}, Decision::kKeep, 3.25)};
  // The final ablation puts a kept knob back to its start value: a verification, not waste.
  r.experiments.push_back(experiment(6, {{"test.proposer.color", "red"}}, Decision::kRevert, 7));
  EvalRun s = score_run(ep, r);
  EXPECT_DOUBLE_EQ(s.wasted_s, 0.5 + 2 + 3);
  EXPECT_TRUE(s.outcome_met);
  ASSERT_TRUE(s.root_cause_named.has_value());
  EXPECT_FALSE(*s.root_cause_named);  // the decoy stayed
  EXPECT_EQ(s.decoys_kept, std::vector<std::string>{"test.proposer.other=8"});
  EXPECT_EQ(s.s_to_pass, 10.0);

  // Infeasible: the right answer is not to pass; a claimed pass misses the outcome.
  ep.expect = Expect{.passes = false};
  EXPECT_FALSE(score_run(ep, r).outcome_met);
  EXPECT_FALSE(score_run(ep, r).root_cause_named.has_value());
  r.passed = false;
  EXPECT_TRUE(score_run(ep, r).outcome_met);

  // Already passing: only a pass with no change meets it.
  ep.expect = Expect{.passes = true};
  r.passed = true;
  EXPECT_FALSE(score_run(ep, r).outcome_met);
  r.final_config = r.start;
  EXPECT_TRUE(score_run(ep, r).outcome_met);
  EXPECT_TRUE(*score_run(ep, r).root_cause_named);
}

// A change probed to a knob the latest gate's workload did not read is a dead probe; one the
// gate read is not, and neither is the ablation's put-back.
TEST(Eval, ScoreNamesProbesOfKnobsTheWorkloadDidNotRead) {
  Episode ep;
  ep.name = "paint";
  LoopResult r;
  r.start = {{"test.proposer.color", "red"}};
  LoggedExperiment g = experiment(0, {}, Decision::kNone, 1);
  g.spec.probe = "gate";
  g.feedback.notes = {knobs_read_note({"test.proposer.color"})};
  r.experiments = {g,
                   experiment(1, {{"test.proposer.other", "8"}}, Decision::kRevert, 1),  // never read
                   experiment(2, {{"test.proposer.color", "blue"}}, Decision::kRevert, 1),
                   experiment(3, {{"test.proposer.color", "red"}}, Decision::kRevert, 1)};
  EXPECT_EQ(score_run(ep, r).dead_probes, std::vector<std::string>{"test.proposer.other=8"});
  // Before any gate said what it read (or for a program workload), nothing is known: none counted.
  r.experiments.erase(r.experiments.begin());
  EXPECT_TRUE(score_run(ep, r).dead_probes.empty());
}

EvalRun scored(std::string proposer, bool met, std::optional<double> to_pass, bool expect_passes = true) {
  EvalRun r;
  r.proposer = std::move(proposer);
  r.outcome_met = met;
  r.passed = to_pass.has_value();
  r.s_to_pass = to_pass;
  r.expect_passes = expect_passes;
  r.probe_s = to_pass.value_or(30);
  r.root_cause_named = expect_passes ? std::optional<bool>(met) : std::nullopt;
  return r;
}

TEST(Eval, SummaryMediansCountRunsThatNeverPassedAndCompareWithRandom) {
  const std::vector<EvalRun> runs = {
      scored("builtin", true, 2.0),         scored("builtin", true, 4.0),  scored("builtin", false, std::nullopt),
      scored("builtin", true, std::nullopt, false),
      scored("random:3", true, 12.0),       scored("random:3", true, 20.0), scored("random:3", false, std::nullopt),
      scored("random:3", false, 5.0, false)};
  const auto s = summarize(runs);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].proposer, "builtin");
  EXPECT_EQ(s[0].runs, 4);
  EXPECT_EQ(s[0].outcome_met, 3);
  EXPECT_EQ(s[0].feasible_runs, 3);
  EXPECT_EQ(s[0].root_cause_named, 2);
  ASSERT_TRUE(s[0].median_s_to_pass);
  EXPECT_DOUBLE_EQ(*s[0].median_s_to_pass, 4.0);  // of {2, 4, never}
  ASSERT_TRUE(s[1].median_s_to_pass);
  EXPECT_DOUBLE_EQ(*s[1].median_s_to_pass, 20.0);  // of {12, 20, never}
  ASSERT_TRUE(s[0].speedup_vs_random);
  EXPECT_DOUBLE_EQ(*s[0].speedup_vs_random, 5.0);
  EXPECT_DOUBLE_EQ(*s[0].outcome_rate_vs_random, 1.5);

  // Half or more never passing: no median, so no ratio.
  const auto t = summarize({scored("random", false, std::nullopt), scored("random", true, 3.0), scored("builtin", true, 1.0)});
  EXPECT_FALSE(t[0].median_s_to_pass);
  EXPECT_FALSE(t[1].speedup_vs_random);
  EXPECT_TRUE(t[1].random_median_not_reached);
  EXPECT_FALSE(t[0].random_median_not_reached);
}

TEST(RandomProposer, DrawsReproduciblyFromTheUnfixedUntriedChanges) {
  ProposerFixture f;
  RandomProposer a(7), b(7);
  auto pa = a.propose(f.state), pb = b.propose(f.state);
  ASSERT_TRUE(pa && pb && pa->has_value() && pb->has_value());
  EXPECT_EQ((*pa)->change.key(), (*pb)->change.key());  // a function of seed and state
  EXPECT_EQ(a.name(), "random:7");

  std::set<std::string> drawn;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    RandomProposer p(seed);
    auto r = p.propose(f.state);
    ASSERT_TRUE(r && r->has_value());
    const Candidate& c = (*r)->change;
    EXPECT_NE(c.knob, "test.proposer.pinned");  // fixed by the episode
    EXPECT_NE(c.key(), "test.proposer.color=blue");  // already tried
    drawn.insert(c.knob);
  }
  // Knobs no evidence points at are drawn too: the baseline ignores attribution.
  EXPECT_TRUE(drawn.count("test.proposer.other"));
  EXPECT_TRUE(drawn.count("test.proposer.color"));
  EXPECT_GT(drawn.size(), 5u);
}

TEST(RandomProposer, ExpandsPerLayerKnobsToTheGateModelsLayers) {
  ProposerFixture f;
  gate::SyntheticModel m;
  m.layers = 3;
  f.episode.gate.engine = gate::EngineWorkload{};
  f.episode.gate.engine->synthetic = m;
  auto space = random_search_space(f.state);
  ASSERT_TRUE(space);
  std::set<std::string> names;
  for (const auto& knob : *space) names.insert(knob.front().knob);
  EXPECT_TRUE(names.count("test.eval.layer[0]"));
  EXPECT_TRUE(names.count("test.eval.layer[2]"));
  EXPECT_FALSE(names.count("test.eval.layer[3]"));
  EXPECT_FALSE(names.count("test.eval.layer[]"));

  // Nothing left: every knob fixed.
  for (const auto* k : KnobRegistry::global().all()) f.episode.fixed.push_back(k->name);
  for (int i = 0; i < 3; ++i) f.episode.fixed.push_back(fmt::format("test.eval.layer[{}]", i));
  RandomProposer p(1);
  auto r = p.propose(f.state);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->has_value());
}

TEST(RandomProposer, MakeProposerTakesASeed) {
  auto p = make_proposer("random:42");
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)->name(), "random:42");
  EXPECT_EQ((*make_proposer("random"))->name(), "random:1");
  for (const char* bad : {"random:", "random:x", "random:-1", "random:99999999999999999999"}) {
    auto q = make_proposer(bad);
    ASSERT_FALSE(q) << bad;
    EXPECT_EQ(q.error().code(), ErrorCode::kInvalidArgument);
  }
}

TEST(Eval, FindsEpisodeFilesOutsideGateFolders) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("recur-eval-test-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "gates");
  fs::create_directories(dir / "kernels");
  for (const fs::path& p : {dir / "a.toml", dir / "kernels" / "b.toml", dir / "gates" / "g.toml", dir / "notes.md"})
    std::ofstream(p) << "x";
  auto files = find_episode_files({dir.string()});
  ASSERT_TRUE(files) << files.error().message();
  EXPECT_EQ(*files, (std::vector<std::string>{(dir / "a.toml").string(), (dir / "kernels" / "b.toml").string()}));
  auto missing = find_episode_files({(dir / "nope").string()});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("nope"), std::string::npos);
  fs::create_directories(dir / "empty" / "gates");
  std::ofstream(dir / "empty" / "gates" / "g.toml") << "x";
  auto empty = find_episode_files({(dir / "empty").string()});
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message().find("no episode files"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace recur::agent
