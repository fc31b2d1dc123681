#include "journal/journal.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace recur::agent {
namespace {

namespace fs = std::filesystem;

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/recur-journal-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/journal.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Journal> open() {
    auto j = Journal::open(path_);
    EXPECT_TRUE(j.has_value()) << j.error().message();
    return j ? std::move(*j) : nullptr;
  }

  // Runs SQL on the file directly (what another process, or a bug, might do).
  void raw_sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }

  std::string dir_, path_;
};

ExperimentSpec spec(int step) {
  return {.hypothesis = "hoisting the prologue makes kda_decode faster " + std::to_string(step),
          .probe = "bench.kernel",
          .tier = 2,
          .config_diff = {{"kernel.kda_decode.variant", step % 2 ? "hoisted" : "vtile"}}};
}

Feedback feedback(Verdict v, double cost = 1.5) {
  Feedback f;
  f.probe = "bench.kernel";
  f.tier = 2;
  f.cost_s = cost;
  f.subject = "kernel:kda_decode variant=hoisted vs vtile";
  f.hypothesis = "hoisted is faster than vtile";
  f.verdict = v;
  f.add_metric("ratio", 0.8).ci95 = std::pair(0.78, 0.82);
  f.notes.push_back("bench verdict: faster");
  return f;
}

TEST_F(JournalTest, OpensInWalModeWithTheSchema) {
  auto j = open();
  ASSERT_TRUE(j);
  auto run = j->begin_run("r1", "episodes/x.toml", {{"engine.tp", "4"}});
  ASSERT_TRUE(run.has_value()) << run.error().message();
  EXPECT_TRUE(fs::exists(path_ + "-wal"));  // WAL file next to the database while open
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");  // persistent in the file
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST_F(JournalTest, RunsAreIdempotentByName) {
  auto j = open();
  auto a = j->begin_run("r1", "ep", {{"engine.tp", "4"}});
  ASSERT_TRUE(a.has_value());
  auto b = j->begin_run("r1", "ep", {});
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a->id, b->id);
  EXPECT_EQ(b->base_config.at("engine.tp"), "4");  // the recorded run, not the new arguments
  auto c = j->begin_run("r1", "other", {});
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message().find("run 'r1' exists for episode 'ep', not 'other'"), std::string::npos);
  auto by_id = j->find_run(std::to_string(a->id));
  ASSERT_TRUE(by_id.has_value());
  EXPECT_EQ(by_id->name, "r1");
  auto missing = j->find_run("nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find(path_), std::string::npos);
  ASSERT_TRUE(j->end_run(a->id, "done", "gate pass").has_value());
  auto runs = j->runs();
  ASSERT_TRUE(runs.has_value());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].state, "done");
  EXPECT_EQ((*runs)[0].outcome, "gate pass");
  EXPECT_TRUE((*runs)[0].ended_at.has_value());
}

TEST_F(JournalTest, ExperimentLifecycleAndRecordedFields) {
  auto j = open();
  auto run = j->begin_run("r1", "ep", {});
  ASSERT_TRUE(run.has_value());
  auto p = j->plan(run->id, 0, spec(0));
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_EQ(p->state, ExperimentState::kPlanned);
  EXPECT_EQ(p->attempts, 0);
  EXPECT_FALSE(p->feedback.has_value());
  auto s = j->start(run->id, 0);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ(s->state, ExperimentState::kRunning);
  EXPECT_EQ(s->attempts, 1);
  EXPECT_TRUE(s->started_at.has_value());
  auto d = j->finish(run->id, 0, feedback(Verdict::kConfirmed, 2.5), Decision::kKeep);
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->state, ExperimentState::kDone);
  EXPECT_EQ(d->verdict, Verdict::kConfirmed);
  EXPECT_EQ(d->decision, Decision::kKeep);
  EXPECT_DOUBLE_EQ(d->cost_s, 2.5);
  ASSERT_TRUE(d->feedback.has_value());
  EXPECT_EQ(d->feedback->find_metric("ratio")->ci95->second, 0.82);  // the Feedback round-trips
  EXPECT_EQ(d->spec.config_diff.at("kernel.kda_decode.variant"), "vtile");
  EXPECT_EQ(d->spec.hypothesis, spec(0).hypothesis);
  EXPECT_LE(d->planned_at, *d->started_at);
  EXPECT_LE(*d->started_at, *d->ended_at);
}

TEST_F(JournalTest, TransitionsOutOfOrderFailAndNameThePathAndStep) {
  auto j = open();
  auto run = j->begin_run("r1", "ep", {});
  ASSERT_TRUE(j->plan(run->id, 0, spec(0)).has_value());
  // finish before start
  auto f = j->finish(run->id, 0, feedback(Verdict::kConfirmed), Decision::kKeep);
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(f.error().message().find("journal " + path_ + ": finish experiment (run 1, step 0): the experiment is "
                                                          "planned, not running"),
            std::string::npos)
      << f.error().message();
  ASSERT_TRUE(j->start(run->id, 0).has_value());
  ASSERT_TRUE(j->finish(run->id, 0, feedback(Verdict::kRefuted), Decision::kRevert).has_value());
  // A done experiment is never overwritten or restarted.
  auto again = j->finish(run->id, 0, feedback(Verdict::kConfirmed), Decision::kKeep);
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().message().find("never overwritten"), std::string::npos);
  EXPECT_EQ(j->experiment(run->id, 0)->verdict, Verdict::kRefuted);
  auto restart = j->start(run->id, 0);
  ASSERT_FALSE(restart.has_value());
  EXPECT_NE(restart.error().message().find("start experiment (run 1, step 0): the experiment is done"),
            std::string::npos);
  // Unknown steps.
  auto unknown = j->start(run->id, 9);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code(), ErrorCode::kNotFound);
  // Invalid Feedback is refused before it is stored.
  ASSERT_TRUE(j->plan(run->id, 1, spec(1)).has_value());
  ASSERT_TRUE(j->start(run->id, 1).has_value());
  Feedback bad = feedback(Verdict::kConfirmed);
  bad.tier = 7;
  auto b = j->finish(run->id, 1, bad, Decision::kKeep);
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.error().message().find("invalid Feedback"), std::string::npos);
  EXPECT_EQ(j->experiment(run->id, 1)->state, ExperimentState::kRunning);
}

TEST_F(JournalTest, PlanningIsIdempotentPerRunAndStep) {
  auto j = open();
  auto run = j->begin_run("r1", "ep", {});
  ASSERT_TRUE(j->plan(run->id, 3, spec(3)).has_value());
  ASSERT_TRUE(j->start(run->id, 3).has_value());
  auto same = j->plan(run->id, 3, spec(3));
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->state, ExperimentState::kRunning);  // the recorded experiment, untouched
  auto other = j->plan(run->id, 3, spec(4));
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.error().message().find("plan experiment (run 1, step 3): step 3 is already recorded with another "
                                         "experiment"),
            std::string::npos)
      << other.error().message();
  auto all = j->experiments(run->id);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->size(), 1u);
  // The same step in another run is another experiment.
  auto run2 = j->begin_run("r2", "ep", {});
  ASSERT_TRUE(j->plan(run2->id, 3, spec(4)).has_value());
}

TEST_F(JournalTest, ResumePlanSortsStepsAndFoldsKeptDiffsOverTheBase) {
  auto j = open();
  auto run = j->begin_run("r1", "ep", {{"engine.tp", "4"}, {"kernel.kda_decode.variant", "vtile"}});
  auto done = [&](int step, Decision d, KnobDiff diff) {
    ExperimentSpec s = spec(step);
    s.config_diff = std::move(diff);
    ASSERT_TRUE(j->plan(run->id, step, s).has_value());
    ASSERT_TRUE(j->start(run->id, step).has_value());
    ASSERT_TRUE(j->finish(run->id, step, feedback(Verdict::kConfirmed), d).has_value());
  };
  done(0, Decision::kKeep, {{"kernel.kda_decode.variant", "vtile_recip"}});
  done(1, Decision::kRevert, {{"engine.tp", "1"}});
  done(2, Decision::kKeep, {{"kernel.kda_decode.variant", "hoisted"}, {"kernel.gemm.precision", "bf16x3"}});
  ASSERT_TRUE(j->plan(run->id, 3, spec(3)).has_value());
  ASSERT_TRUE(j->start(run->id, 3).has_value());  // crashed here
  ASSERT_TRUE(j->plan(run->id, 4, spec(4)).has_value());
  auto p = j->resume_plan(run->id);
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_EQ(p->done, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(p->rerun, (std::vector<int64_t>{3}));
  EXPECT_EQ(p->pending, (std::vector<int64_t>{4}));
  EXPECT_TRUE(p->abandoned.empty());
  EXPECT_EQ(p->next_step, 5);
  EXPECT_EQ(p->config, (KnobDiff{{"engine.tp", "4"},
                                 {"kernel.kda_decode.variant", "hoisted"},
                                 {"kernel.gemm.precision", "bf16x3"}}));
  // Re-running step 3 counts a second attempt.
  auto again = j->start(run->id, 3);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->attempts, 2);
  // With max_attempts 2 it would now be abandoned instead.
  auto strict = j->resume_plan(run->id, 2);
  ASSERT_TRUE(strict.has_value());
  EXPECT_EQ(strict->abandoned, (std::vector<int64_t>{3}));
  EXPECT_TRUE(strict->rerun.empty());
  auto ab = j->abandon(run->id, 3, "the probe crashed the process twice");
  ASSERT_TRUE(ab.has_value()) << ab.error().message();
  EXPECT_EQ(ab->state, ExperimentState::kDone);
  EXPECT_EQ(ab->verdict, Verdict::kFailed);
  EXPECT_EQ(ab->decision, Decision::kNone);
  EXPECT_NE(ab->feedback->notes.at(0).find("abandoned after 2 attempt(s): the probe crashed"), std::string::npos);
  EXPECT_TRUE(j->check_integrity().has_value());
}

TEST_F(JournalTest, SurvivesReopeningAndSeesOtherConnectionsWrites) {
  auto writer = open();
  auto run = writer->begin_run("r1", "ep", {});
  ASSERT_TRUE(writer->plan(run->id, 0, spec(0)).has_value());
  auto reader = open();  // a second connection, as `recur journal show` while the agent runs
  ASSERT_TRUE(writer->start(run->id, 0).has_value());
  ASSERT_TRUE(writer->finish(run->id, 0, feedback(Verdict::kConfirmed), Decision::kKeep).has_value());
  auto seen = reader->experiment(run->id, 0);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->state, ExperimentState::kDone);
  writer.reset();
  reader.reset();
  auto j = open();
  EXPECT_EQ(j->experiments(run->id)->size(), 1u);
  EXPECT_TRUE(j->check_integrity().has_value());
}

TEST_F(JournalTest, OpenErrorsNameThePathAndTheStep) {
  auto missing = Journal::open(dir_ + "/none.db", {.create = false});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find(dir_ + "/none.db"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ + "/none.db"));
  {
    std::ofstream garbage(path_);
    garbage << std::string(4096, 'x');
  }
  auto bad = Journal::open(path_);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("journal " + path_ + ": set journal_mode=WAL: file is not a database"),
            std::string::npos)
      << bad.error().message();
}

TEST_F(JournalTest, IntegrityCheckFindsTamperedRecords) {
  {
    auto j = open();
    auto run = j->begin_run("r1", "ep", {});
    ASSERT_TRUE(j->plan(run->id, 0, spec(0)).has_value());
    ASSERT_TRUE(j->start(run->id, 0).has_value());
    ASSERT_TRUE(j->finish(run->id, 0, feedback(Verdict::kConfirmed), Decision::kKeep).has_value());
    ASSERT_TRUE(j->check_integrity().has_value());
  }
  // The schema's CHECKs refuse a done row without its result.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  EXPECT_NE(sqlite3_exec(db, "UPDATE experiments SET feedback = NULL", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  // A Feedback that no longer parses is reported by check_integrity.
  raw_sql("UPDATE experiments SET feedback = '{\"probe\": 3}'");
  auto j = open();
  auto s = j->check_integrity();
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("run 1 step 0: stored Feedback"), std::string::npos) << s.error().message();
}

}  // namespace
}  // namespace recur::agent
