#include "loop/experiment_log.h"

#include <chrono>

#include <fmt/format.h>

namespace recur::agent {

ExperimentLog::ExperimentLog(Journal& journal, int64_t run_id, int max_attempts)
    : journal_(journal), run_id_(run_id), max_attempts_(max_attempts) {}

void ExperimentLog::set_progress(std::function<void(std::string_view)> progress, double budget_s) {
  progress_ = std::move(progress);
  budget_s_ = budget_s;
}

Feedback failed_feedback(const ExperimentSpec& spec, const Error& error, double cost_s) {
  Feedback f;
  f.probe = spec.probe;
  f.tier = spec.tier;
  f.cost_s = cost_s;
  f.subject = spec.hypothesis;
  f.hypothesis = spec.hypothesis;
  f.verdict = Verdict::kFailed;
  f.notes.push_back(fmt::format("the probe could not run: {}", error.to_string()));
  return f;
}

Result<LoggedExperiment> ExperimentLog::run(const ExperimentSpec& spec, const Probe& probe, const Decide& decide) {
  if (step_limit_ >= 0 && next_step_ >= step_limit_) {
    limited_ = true;
    return make_error(ErrorCode::kFailedPrecondition, "{} experiments (the limit)", next_step_);
  }
  const int64_t step = next_step_++;
  RECUR_ASSIGN_OR_RETURN(ExperimentRecord rec, journal_.plan(run_id_, step, spec));
  LoggedExperiment out{.step = step, .spec = spec};
  if (progress_) {
    std::string h = spec.hypothesis.size() > 160 ? spec.hypothesis.substr(0, 157) + "..." : spec.hypothesis;
    progress_(fmt::format("[{:.1f}/{:.0f} s] step {} {} (tier {}){}: {}", spent_s_, budget_s_, step, spec.probe,
                          spec.tier, rec.state == ExperimentState::kDone ? " replayed" : "", h));
  }
  if (rec.state == ExperimentState::kDone) {
    out.feedback = *rec.feedback;
    out.decision = *rec.decision;
    out.replayed = true;
    ++replayed_;
    spent_s_ += rec.cost_s;
    last_ = out.feedback;
    has_last_ = true;
    return out;
  }
  if (rec.state == ExperimentState::kRunning && rec.attempts >= max_attempts_) {
    RECUR_ASSIGN_OR_RETURN(rec, journal_.abandon(run_id_, step,
                                                 fmt::format("crashed the agent {} times; abandoned", rec.attempts)));
    out.feedback = *rec.feedback;
    out.decision = *rec.decision;
    return out;
  }
  if (new_limit_ >= 0 && new_experiments_ >= new_limit_) {
    paused_ = true;
    return make_error(ErrorCode::kFailedPrecondition, "paused: {} new experiments run (the limit)", new_experiments_);
  }
  ++new_experiments_;
  RECUR_RETURN_IF_ERROR(journal_.start(run_id_, step));
  const auto t0 = std::chrono::steady_clock::now();
  Result<Feedback> f = probe();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.feedback = f ? std::move(*f) : failed_feedback(spec, f.error(), wall);
  if (out.feedback.cost_s <= 0) out.feedback.cost_s = wall;
  if (out.feedback.hypothesis.empty()) out.feedback.hypothesis = spec.hypothesis;
  out.decision = decide(out.feedback);
  RECUR_ASSIGN_OR_RETURN(rec, journal_.finish(run_id_, step, out.feedback, out.decision));
  spent_s_ += rec.cost_s;
  last_ = out.feedback;
  has_last_ = true;
  return out;
}

}  // namespace recur::agent
