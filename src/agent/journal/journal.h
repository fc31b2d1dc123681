// The journal: every run of the agent and every experiment it makes, in one SQLite file in WAL
// mode, so a run survives kill -9 and resumes with no experiment lost or duplicated
// (docs/agent.md, "Journal").
//
// An experiment is identified by (run, step), its idempotency key, and moves through
//   planned --start()--> running --finish()--> done
// each transition one transaction (synchronous=FULL: a transition that returned is on disk).
// A process killed mid-experiment leaves it `running` without a result; resume_plan() lists it
// under `rerun`, and the loop start()s it again (attempts + 1) and finishes it: re-run exactly
// once per crash, while every `done` experiment stays as it was. An experiment that has crashed
// the process max_attempts times is listed under `abandoned`; abandon() finishes it with a
// `failed` Feedback so a crashing probe cannot stall a run.
//
//   auto j = Journal::open("runs/journal.db");
//   auto run = (*j)->begin_run("kda-1", "episodes/kda-replayssm.toml", base_knobs);
//   (*j)->plan(run->id, 0, {.hypothesis = "...", .probe = "check.kernel", .tier = 1, .config_diff = {...}});
//   (*j)->start(run->id, 0);  ... run the probe ...  (*j)->finish(run->id, 0, feedback, Decision::kKeep);
//
// Not thread-safe: one Journal per thread. Several processes may open the same file (readers do
// not block the writer; writers wait up to busy_timeout_ms for each other).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/feedback.h"
#include "core/status.h"

namespace recur::agent {

class SqliteDb;

enum class ExperimentState { kPlanned, kRunning, kDone };
std::string_view experiment_state_name(ExperimentState s);

// keep: the change stays in the configuration; revert: it is undone; none: the experiment
// changed nothing (a measurement, an attribution, a gate evaluation).
enum class Decision { kKeep, kRevert, kNone };
std::string_view decision_name(Decision d);
std::optional<Decision> parse_decision(std::string_view name);

using KnobDiff = std::map<std::string, std::string>;  // knob -> value

struct JournalOptions {
  bool create = true;            // false: the file must already exist (`recur journal show`)
  bool synchronous_full = true;  // false: synchronous=NORMAL (survives kill -9, not power loss)
  int busy_timeout_ms = 10000;
  // Readers (`recur journal show`): opened read-only; the file is never written, not even
  // switched to WAL (a journal that never ran an experiment stays as it was).
  bool read_only = false;
};

struct RunRecord {
  int64_t id = 0;
  std::string name;
  std::string episode;
  KnobDiff base_config;
  std::string state;    // "running", "done", "failed"
  std::string outcome;  // one line when ended: "gate pass after 7 experiments"
  double created_at = 0;
  std::optional<double> ended_at;
};

struct ExperimentSpec {
  std::string hypothesis;
  std::string probe;  // "check.kernel", "bench.kernel", "bench.engine", "gate", ...
  int tier = 0;
  KnobDiff config_diff;  // knobs this experiment changes against the run's current configuration
};

struct ExperimentRecord {
  int64_t run_id = 0;
  int64_t step = 0;
  ExperimentState state = ExperimentState::kPlanned;
  int attempts = 0;  // times start() was called: 1 normally, +1 per crash and re-run
  ExperimentSpec spec;
  std::optional<Feedback> feedback;  // done only
  std::optional<Verdict> verdict;    // done only (the Feedback's)
  std::optional<Decision> decision;  // done only
  double cost_s = 0;                 // the Feedback's cost_s
  double planned_at = 0;             // unix seconds
  std::optional<double> started_at, ended_at;
};

struct ResumePlan {
  int64_t run_id = 0;
  std::vector<int64_t> done;       // finished: never run again
  std::vector<int64_t> rerun;      // running when the process died: start() and finish() once more
  std::vector<int64_t> pending;    // planned, never started
  std::vector<int64_t> abandoned;  // running, but already started max_attempts times: abandon() them
  int64_t next_step = 0;           // one past the highest step recorded
  KnobDiff config;                 // base config, then the diffs of kept experiments in step order
};

class Journal {
 public:
  static Result<std::unique_ptr<Journal>> open(const std::string& path, const JournalOptions& options = {});
  ~Journal();
  const std::string& path() const;

  // Creates the run, or returns the existing run of that name (resuming); an existing run with a
  // different episode is an error.
  Result<RunRecord> begin_run(std::string_view name, std::string_view episode, const KnobDiff& base_config);
  // By name, or by id ("3").
  Result<RunRecord> find_run(std::string_view name_or_id) const;
  Result<std::vector<RunRecord>> runs() const;
  Status end_run(int64_t run, std::string_view state, std::string_view outcome);

  // Records a planned experiment. Idempotent: planning (run, step) again with the same spec
  // returns the recorded experiment; a different spec for a recorded step is an error.
  Result<ExperimentRecord> plan(int64_t run, int64_t step, const ExperimentSpec& spec);
  // planned or running -> running, attempts + 1. Fails for a done or unknown step.
  Result<ExperimentRecord> start(int64_t run, int64_t step);
  // running -> done with the Feedback (validated), its verdict and cost, and the decision.
  // Fails for a step that is not running (a done step is never overwritten).
  Result<ExperimentRecord> finish(int64_t run, int64_t step, const Feedback& feedback, Decision decision);
  // A running step that crashed too often: done with a `failed` Feedback saying why, decision none.
  Result<ExperimentRecord> abandon(int64_t run, int64_t step, std::string_view why);

  Result<ExperimentRecord> experiment(int64_t run, int64_t step) const;
  Result<std::vector<ExperimentRecord>> experiments(int64_t run) const;  // by step
  // What a resumed run must do (read-only; see the header comment).
  Result<ResumePlan> resume_plan(int64_t run, int max_attempts = 3) const;

  // SQLite's integrity_check plus the journal's invariants: every done experiment has a Feedback
  // that parses and validates, a verdict, a decision and an end time; running ones have a start
  // time; attempts match the state. Errors list the violations.
  Status check_integrity() const;

 private:
  explicit Journal(std::unique_ptr<SqliteDb> db);
  std::unique_ptr<SqliteDb> db_;
};

}  // namespace recur::agent
