// The experiments a proposer may ask for besides a knob change (proposer.h, ActionKind): a code
// change built and judged as a candidate (candidate.h) and one read-only kernel probe (check or
// bench). Their records go back to the proposer as last_feedback; they never change the run's
// configuration. Not thread-safe (they time things).
#pragma once

#include <map>
#include <string>

#include "candidate/candidate.h"
#include "loop/proposer.h"
#include "core/feedback.h"
#include "core/status.h"

namespace recur::agent {

// `recur candidate build` of the proposal's patch, written to `patch_path` first; `base` gives
// the tree, build command, runner and budgets (its patch, kernel, variant, shape and hypothesis
// are the proposal's).
Result<Feedback> run_patch_action(const Proposal& p, const CandidateOptions& base, const std::string& patch_path);

// check.kernel or bench.kernel of the proposal's kernel under `config` (the variant defaults to
// the configuration's kernel.<name>.variant; bench compares against `vs` when given).
Result<Feedback> run_probe_action(const Proposal& p, const std::map<std::string, std::string>& config);

}  // namespace recur::agent
