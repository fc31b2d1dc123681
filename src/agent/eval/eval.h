// `recur agent eval` (docs/agent.md, "Evaluating a proposer"): runs a suite of episodes with
// each proposer named, N times each, into one journal, and scores every run against the
// episode's [expect] table (expect.h): was the expected outcome met (a pass, an honest stop
// where nothing can pass, no change where the start already passes), was the root cause named
// (every expected change kept, no decoy kept), what it cost in probe seconds and how much of
// that went to changes that were reverted or kept without effect (decoys). A summary per
// proposer compares its median probe-seconds-to-pass with the random proposer's, the
// matched-budget baseline (random_proposer.h).
//
// The scorer reads [expect]; the loop and the proposers never do. Not thread-safe (one eval at
// a time: probes time things).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "loop/episode.h"
#include "loop/loop.h"
#include "loop/proposer.h"

namespace recur::agent {

inline constexpr std::string_view kDefaultEvalJournal = "runs/eval/journal.db";

struct EvalOptions {
  std::vector<std::string> inputs;  // episode files, or folders searched for them
  std::vector<std::string> proposers = {"builtin"};
  int repeat = 1;
  double budget_scale = 1;  // multiplies each episode's budget_s
  std::string journal = std::string(kDefaultEvalJournal);
  std::string html;  // the eval page; "" = <journal's folder>/eval.html
  ProposerOptions proposer_options;
  bool instruction_counts = true;
  std::function<void(std::string_view)> progress;       // one line per run started and ended
  std::function<void(std::string_view)> loop_progress;  // the loop's own lines (verbose)
};

// One run of one proposer on one episode, scored.
struct EvalRun {
  std::string episode, episode_path, proposer, run_name, report;
  int repeat = 0;  // 1-based
  bool has_expect = false;
  bool expect_passes = true;    // [expect] passes (true without [expect])
  bool expect_no_change = false;  // passes with an empty root cause: the right answer is to change nothing
  bool passed = false;
  bool outcome_met = false;
  std::optional<bool> root_cause_named;  // feasible episodes with [expect] only
  std::vector<std::string> changes;      // knob=value, the final configuration against the start
  std::vector<std::string> decoys_kept, missing;
  int experiments = 0;
  double probe_s = 0, wasted_s = 0;
  // Changes probed to a knob the gate's workload did not read under the configuration they were
  // tried from (the latest gate's "knobs read" note): a probe that could not have mattered.
  std::vector<std::string> dead_probes;
  std::optional<double> s_to_pass;  // probe seconds when the gate passed
  std::string outcome;              // the loop's line, or the error
  bool error = false;
};

// Scores a finished loop against the episode's [expect].
EvalRun score_run(const Episode& episode, const LoopResult& result);

struct ProposerScore {
  std::string proposer;
  int runs = 0, outcome_met = 0, errors = 0;
  int feasible_runs = 0, root_cause_named = 0;  // over runs of episodes expected to pass
  int passed = 0;
  double outcome_rate = 0, root_cause_accuracy = 0;
  // Over every run of episodes expected to pass, a run that did not pass counting as never:
  // absent when half or more did not pass.
  std::optional<double> median_s_to_pass;
  double probe_s = 0, wasted_s = 0;
  int dead_probes = 0;  // over every run (EvalRun::dead_probes)
  // The random proposer's median probe-seconds-to-pass over this one's (higher: this one
  // passes sooner); absent without a random proposer in the eval or when either median is
  // absent (the text says which).
  std::optional<double> speedup_vs_random;
  std::optional<double> outcome_rate_vs_random;  // this outcome rate / random's
  bool random_median_not_reached = false;        // this one has a median, the random proposer none
};

std::vector<ProposerScore> summarize(const std::vector<EvalRun>& runs);

// The median (0 for none); infinite values (runs that never passed) stay infinite.
double median_of(std::vector<double> v);

struct EvalResult {
  std::vector<EvalRun> runs;
  std::vector<ProposerScore> scores;
  std::string journal, html;
  double wall_s = 0;
  int episodes = 0;
};

// The episode files among `inputs`: files as given, folders searched recursively for *.toml
// outside folders named `gates` (gate specs), sorted. Errors name an input that does not exist
// or a folder without episodes.
Result<std::vector<std::string>> find_episode_files(const std::vector<std::string>& inputs);

// Loads every episode first (a malformed one is an error before anything runs), then runs
// episode x proposer x repeat, writes each run's report and the eval page.
Result<EvalResult> run_eval(const EvalOptions& options);

std::string render_eval_text(const EvalResult& r);
nlohmann::json eval_json(const EvalResult& r);
std::string render_eval_html(const EvalResult& r);

}  // namespace recur::agent
