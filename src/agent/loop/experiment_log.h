// Runs the agent's experiments through the journal so that a run can be resumed by replaying
// it: the loop is a deterministic function of the Feedback records it has seen, so a resumed
// run executes the same code, and every experiment the journal already holds as done is
// returned from the journal instead of being run again (docs/agent.md, "Crash and resume").
//
//   ExperimentLog log(journal, run.id);
//   auto out = log.run({.hypothesis = "...", .probe = "bench.kernel", .tier = 2, .config_diff = d},
//                      [&] { return bench(...); },                    // not called when replayed
//                      [](const Feedback& f) { return Decision::kNone; });
//
// A step whose spec differs from the one recorded (the episode or recur changed in between) is
// an error, never a silent overwrite. A step that crashed the process max_attempts times is
// abandoned with a `failed` Feedback. Budgets count recorded probe cost, so a replay makes the
// same budget decisions as the original run. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "journal/journal.h"
#include "core/feedback.h"
#include "core/status.h"

namespace recur::agent {

struct LoggedExperiment {
  int64_t step = 0;
  ExperimentSpec spec;
  Feedback feedback;
  Decision decision = Decision::kNone;
  bool replayed = false;  // taken from the journal, not run
};

class ExperimentLog {
 public:
  using Probe = std::function<Result<Feedback>()>;
  using Decide = std::function<Decision(const Feedback&)>;

  ExperimentLog(Journal& journal, int64_t run_id, int max_attempts = 3);
  // Called with one line before each experiment runs ("[12.3/300 s] step 7 bench.kernel (tier
  // 2): <hypothesis>") and for each replayed one.
  void set_progress(std::function<void(std::string_view)> progress, double budget_s);

  // A probe that returns an error is recorded as a `failed` Feedback naming the error (the loop
  // goes on; the decision function sees it). Errors here are the journal's own.
  Result<LoggedExperiment> run(const ExperimentSpec& spec, const Probe& probe, const Decide& decide);

  // After `limit` experiments run (not replayed) by this log, run() refuses with kFailedPrecondition
  // and paused() turns true: the caller stops without ending the run.
  void set_new_experiment_limit(int limit) { new_limit_ = limit; }
  // A run's hard experiment count (the episode's max_experiments): run() at step `limit` refuses
  // with kFailedPrecondition before planning anything, and limited() turns true; the caller ends
  // the run there.
  void set_step_limit(int64_t limit) { step_limit_ = limit; }
  // The next run() would be refused by the step limit: a change's validation stops here.
  bool at_step_limit() const { return step_limit_ >= 0 && next_step_ >= step_limit_; }
  bool limited() const { return limited_; }
  bool paused() const { return paused_; }
  int new_experiments() const { return new_experiments_; }

  double spent_s() const { return spent_s_; }
  // The Feedback of the latest experiment run or replayed (null before the first).
  const Feedback* last_feedback() const { return has_last_ ? &last_ : nullptr; }  // recorded cost of every experiment so far
  int64_t steps() const { return next_step_; }
  int replayed() const { return replayed_; }
  Journal& journal() { return journal_; }

 private:
  Journal& journal_;
  int64_t run_id_;
  int max_attempts_;
  int64_t next_step_ = 0;
  int replayed_ = 0;
  double spent_s_ = 0;
  std::function<void(std::string_view)> progress_;
  double budget_s_ = 0;
  Feedback last_;
  bool has_last_ = false;
  int new_limit_ = -1;
  int64_t step_limit_ = -1;
  bool limited_ = false;
  int new_experiments_ = 0;
  bool paused_ = false;
};

// The Feedback of a probe that could not run: verdict failed, the error in the notes.
Feedback failed_feedback(const ExperimentSpec& spec, const Error& error, double cost_s);

}  // namespace recur::agent
