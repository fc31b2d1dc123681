// The episode's gate run on one configuration of the candidate arm, as one journal experiment
// (probe "gate"): the loop's first and last word on every change, and the ablation's. Its record
// says which knobs the workload read under the candidate arm (gate_state.h), and a caller may
// add notes before it is journaled (the prediction a change made, candidate_rank.h).
// Not thread-safe (it times things).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "loop/episode.h"
#include "loop/experiment_log.h"
#include "loop/run_paths.h"
#include "gate/spec.h"

namespace recur::agent {

using KnobMap = std::map<std::string, std::string>;
using Progress = std::function<void(std::string_view)>;

// The highest tier among the gate's metrics (the gate experiment's tier).
int gate_tier(const gate::GateSpec& spec);

// A run's progress lines, indented under the experiment that prints them.
Progress indented(const Progress& progress);

class GateStep {
 public:
  using Decide = std::function<Decision(const Feedback&)>;
  using Annotate = std::function<void(Feedback&)>;

  GateStep(const Episode& episode, ExperimentLog& log, RunPaths paths, Progress progress)
      : ep_(episode), log_(log), paths_(std::move(paths)), progress_(std::move(progress)) {}

  // `decide` null: decision none.
  Result<LoggedExperiment> run(const KnobMap& config, std::string hypothesis, KnobDiff diff, const Decide& decide,
                               const Annotate& annotate = {});

 private:
  const Episode& ep_;
  ExperimentLog& log_;
  RunPaths paths_;
  Progress progress_;
};

}  // namespace recur::agent
