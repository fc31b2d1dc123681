// The agent loop (`recur agent run`, docs/agent.md "The loop"):
//   1. evaluate the episode's gate on the candidate configuration;
//   2. if it fails, attribute the gap to components with the cheapest probe that can
//      (evidence.h);
//   3-4. ask the proposer for a hypothesis and a change to a knob tagged with the top
//      component (and read by the gate's workload), and validate it cheapest first (the probe
//      ladder): check.kernel (tier 1) when the knob selects a kernel variant, bench.kernel
//      against the current variant (tier 2) when the gate times that kernel, which must show a
//      significant gain, else under a speed condition a paired A/B of the current configuration
//      against the change on the gate's workload (bench.ab), then the gate; keep the change
//      only when the gate is strictly closer to passing (gate_state.h), else revert it; a change
//      the gate reverts although a lower rung confirmed it on its own component (the kernel
//      check: 2x more accurate; its kernel bench: faster) opens a bounded lookahead: up to 3
//      changes proposed from it, each kept with it as a pair only when the gate is strictly
//      closer than before both (docs/agent.md, "Lookahead from a locally confirmed change");
//   A proposer may also ask for an experiment that changes no knob (a "patch" built as a
//   candidate, a read-only "probe"); its record comes back as the next state's last_feedback.
//   5. repeat until the gate passes, the proposer has nothing left, or the budget (probe
//      seconds) or experiment limit (exact) is spent; after a pass with two or more knobs
//      changed, an ablation drops each change the gate passes without.
// Every probe is a journal experiment, and the loop is a deterministic function of their
// Feedback, so `recur agent resume` replays a killed run and continues where it stopped.
// Where each part lives: the iteration and the run's endings here (loop.cc); attribution in
// evidence.h; the order of changes in candidate_rank.h; a proposal as a typed value, journaled
// as JSON, in proposal.h; one change's validation in probe_ladder.h; the gate experiment in
// gate_step.h; the final ablation in ablation.h; the run's artifact folders in run_paths.h.
// Not thread-safe (one run at a time: probes time things).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "candidate/candidate.h"
#include "loop/episode.h"
#include "loop/experiment_log.h"
#include "journal/journal.h"
#include "loop/probe_ladder.h"
#include "loop/proposer.h"

namespace recur::agent {

inline constexpr std::string_view kDefaultJournal = "runs/journal.db";

struct LoopOptions {
  std::string journal = std::string(kDefaultJournal);
  std::string run_name;             // "" = "<episode>-<n>", the next free n
  std::optional<double> budget_s;   // overrides the episode's
  std::optional<int> max_experiments;      // overrides the episode's (a resumed run counts old steps)
  std::optional<int> max_new_experiments;  // pause after running this many (replayed ones do not
                                           // count): the run stays open, `resume` continues it
  Proposer* proposer = nullptr;     // null = builtin
  std::function<void(std::string_view)> progress;  // stderr lines
  bool instruction_counts = true;  // attribution may count instructions (valgrind, re-running `recur`)
  // Proposers may submit code changes ("patch" actions, docs/candidates.md); off by default.
  bool allow_patches = false;
  // How a patch is built and judged: tree, build command, runner, budgets (its patch, kernel,
  // variant, shape and hypothesis come from the action).
  CandidateOptions candidate;
};

struct LoopResult {
  RunRecord run;
  std::string episode;
  bool passed = false;
  bool paused = false;  // stopped by max_new_experiments; the journal's run is still running
  std::string outcome;  // one line
  std::map<std::string, std::string> start, final_config;
  std::vector<LoggedExperiment> experiments;  // every step, replayed ones included
  std::vector<Finding> findings;
  std::string final_gate;  // the last gate's reason
  double spent_s = 0;
  int replayed = 0;
};

Result<LoopResult> run_episode(const Episode& episode, const LoopOptions& options);

// Continues a run recorded in the journal (the episode path is taken from the run).
Result<LoopResult> resume_run(std::string_view run, const LoopOptions& options);

}  // namespace recur::agent
