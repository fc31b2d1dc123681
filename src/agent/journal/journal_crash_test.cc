// kill -9 the journal's writer at random points mid-run, several times, then let it finish.
//
// The child (journal_crash_child.cc) plans, starts and finishes experiments in a loop, printing
// "start STEP" and "done STEP" as start() and finish() return. The parent kills it with SIGKILL
// after a random number of those plus a random delay: every other kill aims inside a running
// experiment (its probe or its finishing commit), the others land anywhere in a step (between
// transactions, inside a commit). After each kill it reopens the journal and checks:
//   - SQLite's integrity check and the journal's invariants hold;
//   - every acknowledged finish is present and done, every acknowledged start at least running
//     (committed means durable);
//   - steps are 0..n-1 with no gap and no duplicate, and no done experiment changed since the
//     last look (nothing finished is ever re-run or rewritten);
//   - the resume plan is exactly right: done = the done steps, rerun = the one running step (if
//     the kill landed inside an experiment), pending = a planned, unstarted step, next_step = n.
// Then a last child resumes and completes the run; every step is done exactly once, and a step
// that was running at a kill was re-run exactly once per kill (attempts = 1 + kills it saw) by a
// later process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "journal/journal.h"

namespace recur::agent {
namespace {

constexpr int kSteps = 40;
constexpr int kKills = 6;
constexpr int kWorkUs = 8000;  // a child's experiment sleeps up to this long (its "probe")
constexpr const char* kRun = "crash";

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of its stdout
  std::string buffer;
};

Child spawn(const std::string& db, int max_sleep_us) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    const std::string steps = std::to_string(kSteps), sleep_us = std::to_string(max_sleep_us);
    execl(JOURNAL_CRASH_CHILD, JOURNAL_CRASH_CHILD, db.c_str(), kRun, steps.c_str(), sleep_us.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  c.out = fds[0];
  return c;
}

// Reads lines until `count` lines starting with `word` ("start", "done") have arrived, or EOF.
// Every "start N" read is added to `started`, every "done N" to `acked`.
void read_until(Child& c, std::string_view word, size_t count, std::set<int64_t>& started, std::set<int64_t>& acked) {
  size_t seen = 0;
  char buf[256];
  while (seen < count) {
    size_t nl;
    while (seen < count && (nl = c.buffer.find('\n')) != std::string::npos) {
      std::string line = c.buffer.substr(0, nl);
      c.buffer.erase(0, nl + 1);
      if (line.rfind("done ", 0) == 0) acked.insert(std::stoll(line.substr(5)));
      if (line.rfind("start ", 0) == 0) started.insert(std::stoll(line.substr(6)));
      if (line.rfind(word, 0) == 0) ++seen;
    }
    if (seen >= count) break;
    ssize_t n = read(c.out, buf, sizeof buf);
    if (n <= 0) break;
    c.buffer.append(buf, size_t(n));
  }
}

int wait_exit(pid_t pid) {
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return status;
}

TEST(JournalCrash, KillNineAtRandomPointsLosesAndDuplicatesNothing) {
  char tmpl[] = "/tmp/recur-journal-crash-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, db = dir + "/journal.db";
  std::mt19937 rng(20240611);

  std::set<int64_t> started, acknowledged;
  std::map<int64_t, std::string> done_feedback;  // step -> Feedback notes at first sight
  std::map<int64_t, int> kills_seen_running;     // step -> kills that found it running
  int kills_mid_experiment = 0;

  for (int k = 0; k < kKills; ++k) {
    Child c = spawn(db, kWorkUs);
    // Even kills aim inside a running experiment (after a "start", within its work); odd ones
    // land anywhere in a step (after a "done", up to two steps' time later).
    const bool aim = k % 2 == 0;
    const size_t after = std::uniform_int_distribution<size_t>(1, 4)(rng);
    read_until(c, aim ? "start" : "done", after, started, acknowledged);
    const int delay_us = std::uniform_int_distribution<int>(0, aim ? kWorkUs / 4 : 40000)(rng);
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    ASSERT_EQ(kill(c.pid, SIGKILL), 0);
    const int status = wait_exit(c.pid);
    // Whatever it acknowledged before dying counts as committed.
    read_until(c, "done", SIZE_MAX, started, acknowledged);
    close(c.out);
    if (!WIFSIGNALED(status)) {
      // It finished all steps before the kill: nothing left to crash.
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      break;
    }

    auto j = Journal::open(db);
    ASSERT_TRUE(j.has_value()) << j.error().message();
    ASSERT_TRUE((*j)->check_integrity().has_value()) << "after kill " << k;
    auto run = (*j)->find_run(kRun);
    ASSERT_TRUE(run.has_value()) << run.error().message();
    auto exps = (*j)->experiments(run->id);
    ASSERT_TRUE(exps.has_value());
    std::vector<int64_t> done, running, planned;
    for (size_t i = 0; i < exps->size(); ++i) {
      const ExperimentRecord& e = (*exps)[i];
      ASSERT_EQ(e.step, int64_t(i)) << "steps are 0..n-1 without gaps or duplicates";
      if (e.state == ExperimentState::kDone) {
        done.push_back(e.step);
        ASSERT_FALSE(e.feedback->notes.empty());
        auto [it, fresh] = done_feedback.emplace(e.step, e.feedback->notes[0]);
        EXPECT_EQ(it->second, e.feedback->notes[0]) << "step " << e.step << " changed after it was done";
        (void)fresh;
      } else if (e.state == ExperimentState::kRunning) {
        running.push_back(e.step);
        ++kills_seen_running[e.step];
      } else {
        planned.push_back(e.step);
      }
    }
    for (int64_t s : acknowledged) {
      ASSERT_LT(size_t(s), exps->size()) << "acknowledged step " << s << " is missing";
      EXPECT_EQ((*exps)[size_t(s)].state, ExperimentState::kDone) << "acknowledged step " << s << " is not done";
    }
    for (int64_t s : started) {
      ASSERT_LT(size_t(s), exps->size()) << "started step " << s << " is missing";
      EXPECT_NE((*exps)[size_t(s)].state, ExperimentState::kPlanned) << "step " << s << " lost its start";
    }
    // One experiment at a time: at most one in flight, and it is the last step.
    EXPECT_LE(running.size() + planned.size(), 1u);
    if (!running.empty()) ++kills_mid_experiment;
    auto plan = (*j)->resume_plan(run->id, 100);
    ASSERT_TRUE(plan.has_value());
    EXPECT_EQ(plan->done, done);
    EXPECT_EQ(plan->rerun, running);
    EXPECT_EQ(plan->pending, planned);
    EXPECT_TRUE(plan->abandoned.empty());
    EXPECT_EQ(plan->next_step, int64_t(exps->size()));
    // Kept experiments are the steps divisible by 3 (the child's rule); the last one's diff wins.
    int64_t last_kept = -1;
    for (int64_t s : done)
      if (s % 3 == 0) last_kept = s;
    if (last_kept >= 0) {
      EXPECT_EQ(plan->config.at("step"), std::to_string(last_kept));
    }
    EXPECT_EQ(plan->config.at("engine.tp"), "1");
  }
  EXPECT_GT(kills_mid_experiment, 0) << "no kill landed inside an experiment; the test proved less than it claims";

  // A last child resumes and completes the run.
  Child c = spawn(db, 0);
  read_until(c, "done", SIZE_MAX, started, acknowledged);
  close(c.out);
  const int status = wait_exit(c.pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  auto j = Journal::open(db);
  ASSERT_TRUE(j.has_value());
  ASSERT_TRUE((*j)->check_integrity().has_value());
  auto run = (*j)->find_run(kRun);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->state, "done");
  auto exps = (*j)->experiments(run->id);
  ASSERT_TRUE(exps.has_value());
  ASSERT_EQ(exps->size(), size_t(kSteps));  // each step exactly once
  for (const ExperimentRecord& e : *exps) {
    EXPECT_EQ(e.state, ExperimentState::kDone) << e.step;
    const int kills = kills_seen_running.count(e.step) ? kills_seen_running[e.step] : 0;
    EXPECT_EQ(e.attempts, 1 + kills) << "step " << e.step << " was re-run other than once per crash";
    if (done_feedback.count(e.step)) {
      EXPECT_EQ(e.feedback->notes[0], done_feedback[e.step]) << e.step;
    }
    if (kills > 0) {
      // Finished by a later process, on its (kills + 1)-th attempt.
      EXPECT_NE(e.feedback->notes[0].find("attempt " + std::to_string(kills + 1)), std::string::npos)
          << e.feedback->notes[0];
    }
    EXPECT_EQ(e.decision, e.step % 3 == 0 ? Decision::kKeep : Decision::kRevert);
  }
  auto plan = (*j)->resume_plan(run->id);
  ASSERT_TRUE(plan.has_value());
  EXPECT_TRUE(plan->rerun.empty() && plan->pending.empty());
  EXPECT_EQ(plan->done.size(), size_t(kSteps));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace recur::agent
