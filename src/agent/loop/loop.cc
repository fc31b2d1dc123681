#include "loop/loop.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "loop/ablation.h"
#include "loop/builtin_proposer.h"
#include "loop/component_knobs.h"
#include "loop/evidence.h"
#include "loop/gate_state.h"
#include "loop/gate_step.h"
#include "loop/loop_actions.h"
#include "loop/probe_ladder.h"
#include "loop/run_paths.h"

namespace recur::agent {

namespace {

namespace fs = std::filesystem;

// The lookahead's license, as its journal record says it.
std::string lookahead_hypothesis(const Lookahead& la) {
  return fmt::format("{}={} made its own component better ({}) but the gate got no closer ({}): another component "
                     "may now dominate; one step further from it, a pair is kept only when the gate is strictly "
                     "closer than {}",
                     la.knob, la.value, la.licensed_by, la.alone, la.must_beat);
}

Feedback lookahead_feedback(const Lookahead& la, const LoggedExperiment& reverted) {
  Feedback f;
  f.probe = "analyze.lookahead";
  f.tier = 0;
  f.subject = fmt::format("{}={} (from {})", la.knob, la.value, la.from);
  f.hypothesis = lookahead_hypothesis(la);
  f.verdict = Verdict::kConfirmed;
  f.notes.push_back(fmt::format("licensed by: {}", la.licensed_by));
  f.notes.push_back(fmt::format("alone: gate step {} went {} and reverted it", reverted.step, la.alone));
  return f;
}

// The honest ending when the attribution points where no knob acts.
std::string code_change_finding(const Evidence& ev) {
  const std::vector<std::string> knobless = knobless_components(ev);
  if (knobless.empty()) return "";
  std::string list;
  for (const std::string& c : knobless) list += (list.empty() ? "" : ", ") + c;
  return fmt::format("; no knob acts on {}: a code change is needed there", list);
}

class Loop {
 public:
  Loop(const Episode& ep, const LoopOptions& o, Journal& journal, RunRecord run, Proposer& proposer)
      : ep_(ep), o_(o), run_(std::move(run)), proposer_(proposer), log_(journal, run_.id),
        paths_(RunPaths::of(o.journal, run_.name)), gate_(ep, log_, paths_, o.progress),
        ladder_(ep, log_, gate_, o.progress), budget_s_(o.budget_s.value_or(ep.budget_s)) {
    log_.set_progress(o.progress, budget_s_);
    if (o.max_new_experiments) log_.set_new_experiment_limit(*o.max_new_experiments);
    log_.set_step_limit(o.max_experiments.value_or(ep.max_experiments));
  }

  // A run that reached max_new_experiments stays `running` in the journal: resume continues it.
  Result<LoopResult> run() {
    Result<LoopResult> r = run_steps();
    if (!r && log_.limited() && !log_.paused()) return end_at_limit();
    if (r || !log_.paused()) return r;
    LoopResult out;
    out.run = run_;
    out.episode = ep_.path;
    out.start = ep_.start;
    out.paused = true;
    out.spent_s = log_.spent_s();
    out.replayed = log_.replayed();
    out.outcome = fmt::format("paused after {} experiments ({} new); `recur agent resume {}` continues", log_.steps(),
                              log_.new_experiments(), run_.name);
    RECUR_ASSIGN_OR_RETURN(out.experiments, load_experiments());
    RECUR_ASSIGN_OR_RETURN(auto plan, log_.journal().resume_plan(run_.id));
    out.final_config = KnobMap(plan.config.begin(), plan.config.end());
    return out;
  }

 private:
  Result<LoopResult> run_steps() {
    LoopResult out;
    out.run = run_;
    out.episode = ep_.path;
    out.start = ep_.start;
    KnobMap config = ep_.start;
    std::set<KnobMap> visited = {config};
    RECUR_ASSIGN_OR_RETURN(LoggedExperiment g,
                           gate_.run(config, "the starting configuration passes the gate", {}, nullptr));
    GateState state = gate_state_from_feedback(gate_with_candidate(ep_, config), g.feedback);
    note_state(state);
    int inconclusive_reruns = 0, iteration = 0;
    std::string stop;
    bool changes_exhausted = false;  // the proposer had nothing left (not the budget, not refusals)
    while (true) {
      if (state.passed()) break;
      if (state.verdict.outcome == gate::Outcome::kInconclusive && inconclusive_reruns < 2) {
        ++inconclusive_reruns;
        RECUR_ASSIGN_OR_RETURN(g, gate_.run(config, "a second measurement decides the inconclusive gate", {}, nullptr));
        state = gate_state_from_feedback(gate_with_candidate(ep_, config), g.feedback);
        note_state(state);
        continue;
      }
      if (!(stop = out_of_budget()).empty()) break;
      RECUR_ASSIGN_OR_RETURN(Evidence ev, attribute(config, state));
      AgentState as{.episode = &ep_, .config = config, .gate = state, .evidence = ev, .tried = {},
                    .visited = visited, .iteration = ++iteration, .allow_patches = o_.allow_patches};
      bool kept = false;
      while (!kept) {
        if (!(stop = out_of_budget()).empty()) break;
        as.last_feedback = log_.last_feedback();
        RECUR_ASSIGN_OR_RETURN(std::optional<Proposal> p, propose(as));
        if (!p) {
          if (!(stop = out_of_budget()).empty()) break;  // spent on the proposer's own experiments
          stop = as.rejected.size() >= kMaxRejections
                     ? fmt::format("the {} proposer gave {} refused answers in a row", proposer_.name(), as.rejected.size())
                 : !proposer_stopped_.empty()
                     ? fmt::format("the {} proposer stopped: {}", proposer_.name(), proposer_stopped_)
                     : fmt::format("the {} proposer has no untried change left for `{}`{}", proposer_.name(),
                                   ev.condition, code_change_finding(ev));
          changes_exhausted = as.rejected.size() < kMaxRejections && proposer_stopped_.empty();
          break;
        }
        as.rejected.clear();
        as.tried.insert(p->change.key());
        RECUR_ASSIGN_OR_RETURN(Validation v, ladder_.validate(*p, config, state, ev, g));
        std::vector<Finding> keep;
        if (v.kept) keep.push_back(std::move(*v.kept));
        else if (!v.local_confirmation.empty()) {
          // Confirmed on its own component, reverted by the gate: look one step further from it.
          RECUR_ASSIGN_OR_RETURN(keep, look_ahead(*p, v, config, state, ev, visited, iteration, g));
        }
        if (keep.empty()) continue;
        kept = true;
        for (const Finding& f : keep) config[f.knob] = f.to;
        visited.insert(config);
        state = gate_state_from_feedback(gate_with_candidate(ep_, config), g.feedback);
        note_state(state);
        inconclusive_reruns = 0;
        for (Finding& f : keep) {
          findings_.push_back(f);
          out.findings.push_back(std::move(f));
        }
      }
      if (!kept) break;
    }
    if (state.passed()) {
      RECUR_ASSIGN_OR_RETURN(AblationResult a, ablate_kept_changes(ep_, gate_, [this] { return out_of_budget().empty(); },
                                                                  config, state, g));
      note_state(state);
      for (const std::string& k : a.dropped) {
        std::erase_if(out.findings, [&](const Finding& f) { return f.knob == k; });
        std::erase_if(findings_, [&](const Finding& f) { return f.knob == k; });
      }
    }
    out.passed = state.passed();
    out.final_config = config;
    out.final_gate = state.verdict.reason;
    out.spent_s = log_.spent_s();
    out.replayed = log_.replayed();
    out.outcome = out.passed ? fmt::format("gate pass after {} experiments, {} change(s) kept, {:.1f} s of probes",
                                           log_.steps(), out.findings.size(), log_.spent_s())
                             : fmt::format("gate {} after {} experiments: {}; stopped: {}{}",
                                           gate::outcome_name(state.verdict.outcome), log_.steps(),
                                           state.verdict.reason, stop,
                                           honest_ending(config, state, changes_exhausted));
    RECUR_ASSIGN_OR_RETURN(out.experiments, load_experiments());
    RECUR_RETURN_IF_ERROR(log_.journal().end_run(run_.id, "done", out.outcome));
    RECUR_ASSIGN_OR_RETURN(out.run, log_.journal().find_run(std::to_string(run_.id)));
    return out;
  }

  // The experiment limit stopped the run between probes: the configuration is the journal's
  // (base + kept diffs), the findings those kept so far.
  Result<LoopResult> end_at_limit() {
    LoopResult out;
    out.run = run_;
    out.episode = ep_.path;
    out.start = ep_.start;
    out.passed = passed_;
    out.findings = findings_;
    out.spent_s = log_.spent_s();
    out.replayed = log_.replayed();
    out.final_gate = final_gate_;
    out.outcome = passed_ ? fmt::format("gate pass after {} experiments; the ablation stopped at the limit of {}",
                                        log_.steps(), log_.steps())
                          : fmt::format("gate {} after {} experiments: {}; stopped: {} experiments (the limit)",
                                        final_outcome_, log_.steps(), final_gate_, log_.steps());
    RECUR_ASSIGN_OR_RETURN(out.experiments, load_experiments());
    RECUR_ASSIGN_OR_RETURN(auto plan, log_.journal().resume_plan(run_.id));
    out.final_config = KnobMap(plan.config.begin(), plan.config.end());
    RECUR_RETURN_IF_ERROR(log_.journal().end_run(run_.id, "done", out.outcome));
    RECUR_ASSIGN_OR_RETURN(out.run, log_.journal().find_run(std::to_string(run_.id)));
    return out;
  }

  // What the run reached and what the gate needs, and whether knobs ran out ("infeasible with these
  // knobs") or budget did; nothing for a pass.
  std::string honest_ending(const KnobMap& config, const GateState& state, bool changes_exhausted) const {
    const std::string distance = distance_to_pass(gate_with_candidate(ep_, config), state);
    if (distance.empty()) return "";
    return fmt::format(". {}: {}", changes_exhausted ? "Infeasible with these knobs" : "Not reached", distance);
  }

  // The bounded lookahead from a change the gate reverted although a lower rung confirmed it on
  // its own component (`v`): the change made what it targeted better, so the end metric got
  // worse through another component (an error that now dominates, a route that flips). One step
  // further: a journaled record of the license (analyze.lookahead), the attribution of the
  // tentative configuration (its reverted gate's record), and up to kLookaheadTries changes
  // proposed from there, each validated by the ladder as the second of a pair: kept, both, only
  // when the gate is strictly closer than before both. Returns both findings, or none.
  Result<std::vector<Finding>> look_ahead(const Proposal& first, const Validation& v, const KnobMap& config,
                                          const GateState& state, const Evidence& ev, const std::set<KnobMap>& visited,
                                          int iteration, LoggedExperiment& g) {
    const KnobMap tentative = apply_change(config, first.change);
    const GateState alone = gate_state_from_feedback(gate_with_candidate(ep_, tentative), v.reverted_gate->feedback);
    const Lookahead la{.knob = first.change.knob, .from = first.change.from, .value = first.change.value,
                       .licensed_by = v.local_confirmation,
                       .alone = fmt::format("{} -> {}", gate_score(state.verdict).to_string(),
                                            gate_score(alone.verdict).to_string()),
                       .must_beat = gate_score(state.verdict).to_string()};
    if (!out_of_budget().empty() || log_.at_step_limit()) return std::vector<Finding>{};
    RECUR_RETURN_IF_ERROR(log_.run({.hypothesis = lookahead_hypothesis(la), .probe = "analyze.lookahead", .tier = 0,
                                    .config_diff = {{la.knob, la.value}}},
                                   [&]() -> Result<Feedback> { return lookahead_feedback(la, *v.reverted_gate); },
                                   [](const Feedback&) { return Decision::kNone; }));
    if (!out_of_budget().empty()) return std::vector<Finding>{};
    RECUR_ASSIGN_OR_RETURN(Evidence there, attribute(tentative, alone));
    AgentState as{.episode = &ep_, .config = tentative, .gate = alone, .evidence = there, .tried = {},
                  .visited = visited, .iteration = iteration, .allow_patches = o_.allow_patches, .lookahead = la};
    as.visited.insert(tentative);
    const PairContext pair{.first = first.change, .before = &state, .licensed_by = la.licensed_by};
    const std::string stopped_before = proposer_stopped_;
    std::vector<Finding> out;
    for (int i = 0; i < kLookaheadTries && out_of_budget().empty(); ++i) {
      as.last_feedback = log_.last_feedback();
      RECUR_ASSIGN_OR_RETURN(std::optional<Proposal> second, propose(as));
      if (!second) break;
      as.rejected.clear();
      as.tried.insert(second->change.key());
      RECUR_ASSIGN_OR_RETURN(Validation v2, ladder_.validate(*second, tentative, alone, there, g, &pair));
      if (!v2.kept) continue;
      const std::string with = fmt::format("{}={}", v2.kept->knob, v2.kept->to);
      // The pair's gate, as the ladder measured it; each finding then names its partner.
      const std::string pair_gain = v2.kept->gain;
      v2.kept->gain = fmt::format("{}; as a pair with {}={}", pair_gain, first.change.knob, first.change.value);
      Finding f{.step = v2.kept->step, .hypothesis = first.hypothesis, .knob = first.change.knob,
                .from = first.change.from, .to = first.change.value, .component = first.change.component,
                .evidence = ev.findings,
                .gain = fmt::format("alone the gate went {} (reverted) although {}; as a pair with {}: {}", la.alone,
                                    la.licensed_by, with, pair_gain)};
      out.push_back(std::move(f));
      out.push_back(std::move(*v2.kept));
      break;
    }
    proposer_stopped_ = stopped_before;  // a proposer's stop inside the lookahead ends only the lookahead
    return out;
  }
  static constexpr int kLookaheadTries = 3;

  // What end_at_limit reports: kept up to date as the run goes.
  void note_state(const GateState& s) {
    passed_ = s.passed();
    final_gate_ = s.verdict.reason;
    final_outcome_ = std::string(gate::outcome_name(s.verdict.outcome));
  }
  bool passed_ = false;
  std::string final_gate_, final_outcome_ = "not evaluated";
  std::vector<Finding> findings_;

  static constexpr size_t kMaxRejections = 3;
  static constexpr std::string_view kStoppedPrefix = "stopped: ";

  // Asks the proposer for the next change as a journal experiment (probe "propose", tier 0), so a
  // resumed run replays the recorded proposal instead of asking again (an external proposer need
  // not answer the same twice). A refused answer is recorded `failed` with the reason, which the
  // proposer sees in `rejected` on the next call; kMaxRejections in a row end the run.
  Result<std::optional<Proposal>> propose(AgentState& as) {
    while (as.rejected.size() < kMaxRejections) {
      RECUR_ASSIGN_OR_RETURN(
          LoggedExperiment e,
          log_.run({.hypothesis = "the proposer names the next change (the recorded answer is replayed on resume)",
                    .probe = "propose", .tier = 0, .config_diff = {}},
                   [&]() -> Result<Feedback> { return proposal_feedback(as); },
                   [](const Feedback&) { return Decision::kNone; }));
      if (e.feedback.verdict == Verdict::kConfirmed) {
        RECUR_ASSIGN_OR_RETURN(Proposal p, recorded_proposal(e));
        if (p.kind == ActionKind::kSet) return std::optional<Proposal>(std::move(p));
        // A patch or probe: run it, show the proposer its record, ask again.
        RECUR_RETURN_IF_ERROR(run_action(p, as));
        as.last_feedback = log_.last_feedback();
        if (!out_of_budget().empty()) return std::optional<Proposal>();
        continue;
      }
      if (e.feedback.verdict == Verdict::kRefuted) {
        // A proposer that stopped for a reason (a spent limit) says so; recorded, so a replay agrees.
        if (!e.feedback.notes.empty() && e.feedback.notes.front().starts_with(kStoppedPrefix))
          proposer_stopped_ = e.feedback.notes.front().substr(kStoppedPrefix.size());
        return std::optional<Proposal>();
      }
      as.rejected.push_back(e.feedback.notes.empty() ? "refused" : e.feedback.notes.front());
      as.last_feedback = log_.last_feedback();
    }
    return std::optional<Proposal>();
  }

  Feedback proposal_feedback(const AgentState& as) {
    Feedback f;
    f.probe = "propose";
    f.tier = 0;
    f.subject = "proposer " + proposer_.name();
    auto p = proposer_.propose(as);
    if (!p) {
      f.verdict = Verdict::kFailed;
      f.hypothesis = "a valid change";
      f.notes.push_back("refused: " + p.error().message());
      return f;
    }
    if (!*p) {
      f.verdict = Verdict::kRefuted;
      f.hypothesis = "a change is left to try";
      const std::string why = proposer_.stop_reason();
      f.notes.push_back(why.empty() ? "no change proposed" : std::string(kStoppedPrefix) + why);
      return f;
    }
    const Proposal& x = **p;
    f.verdict = Verdict::kConfirmed;
    f.hypothesis = x.hypothesis;
    // Everything a replay needs to run the same experiment again, typed, in its own field.
    f.action = proposal_to_json(x).dump();
    if (x.kind == ActionKind::kSet)
      f.add_metric("open_changes", double(open_changes(as).value_or(std::vector<Candidate>{}).size()));
    return f;
  }

  // The proposal a propose experiment recorded (its action field); a record without one is a
  // journal this version cannot replay, said as such.
  Result<Proposal> recorded_proposal(const LoggedExperiment& e) const {
    if (e.feedback.action.empty())
      return make_error(ErrorCode::kFailedPrecondition,
                        "run {}: step {} recorded a proposal without its action (a journal from an older recur); start "
                        "a new run",
                        run_.name, e.step);
    auto j = nlohmann::json::parse(e.feedback.action, nullptr, /*allow_exceptions=*/false);
    auto p = proposal_from_json(j);
    if (!p) return make_error(ErrorCode::kParse, "run {}: step {}: {}", run_.name, e.step, p.error().message());
    return p;
  }

  // One proposer-requested experiment (a journal experiment, so a resume replays its record).
  Status run_action(const Proposal& p, const AgentState& as) {
    const bool patch = p.kind == ActionKind::kPatch;
    const std::string patch_path = paths_.patch_file(log_.steps());
    RECUR_ASSIGN_OR_RETURN(
        LoggedExperiment e,
        log_.run({.hypothesis = p.hypothesis,
                  .probe = patch ? "candidate.build" : fmt::format("{}.kernel", probe_kind_name(p.probe)),
                  .tier = patch || p.probe == ProbeKind::kBench ? 2 : 1, .config_diff = {}},
                 [&]() -> Result<Feedback> {
                   return patch ? run_patch_action(p, o_.candidate, patch_path) : run_probe_action(p, as.config);
                 },
                 [](const Feedback&) { return Decision::kNone; }));
    (void)e;
    return ok_status();
  }

  // Attribution of the gate's gap under `config`; instruction-count dumps and traces go beside
  // the run's report.
  Result<Evidence> attribute(const KnobMap& config, const GateState& state) {
    return attribute_gap(ep_, config, state, log_,
                         {.instruction_counts = o_.instruction_counts && instruction_counts_affordable(),
                          .callgrind_dir = paths_.callgrind_dir(),
                          .trace_dir = paths_.trace_dir()});
  }

  // Instruction counts are the costliest attribution probe (valgrind at the gate's shape; 13 s
  // where the kernel runs in 2 ms). Once one has run, another is affordable only while its
  // recorded cost is at most a quarter of the budget left: a cheap probe must stay cheap.
  bool instruction_counts_affordable() {
    auto recs = log_.journal().experiments(run_.id);
    if (!recs) return true;
    double last = 0;
    for (const ExperimentRecord& r : *recs)
      if (r.spec.probe == "bench.callgrind" && r.state == ExperimentState::kDone) last = r.cost_s;
    return last <= 0.25 * (budget_s_ - log_.spent_s());
  }

  std::string out_of_budget() const {
    if (log_.spent_s() >= budget_s_) return fmt::format("budget of {:.0f} s spent ({:.1f} s)", budget_s_, log_.spent_s());
    const int limit = o_.max_experiments.value_or(ep_.max_experiments);
    if (log_.steps() >= limit) return fmt::format("{} experiments (the limit)", log_.steps());
    return "";
  }

  Result<std::vector<LoggedExperiment>> load_experiments() {
    RECUR_ASSIGN_OR_RETURN(auto recs, log_.journal().experiments(run_.id));
    std::vector<LoggedExperiment> out;
    for (ExperimentRecord& r : recs) {
      if (r.state != ExperimentState::kDone) continue;
      out.push_back({r.step, r.spec, *r.feedback, *r.decision, false});
    }
    return out;
  }

  const Episode& ep_;
  const LoopOptions& o_;
  RunRecord run_;
  Proposer& proposer_;
  std::string proposer_stopped_;  // why the proposer stopped, when it gave a reason
  ExperimentLog log_;
  RunPaths paths_;
  GateStep gate_;
  ProbeLadder ladder_;
  double budget_s_;
};

Result<std::string> next_run_name(Journal& j, const std::string& episode) {
  RECUR_ASSIGN_OR_RETURN(auto runs, j.runs());
  int n = 1;
  for (const RunRecord& r : runs) {
    if (!r.name.starts_with(episode + "-")) continue;
    n = std::max(n, std::atoi(r.name.c_str() + episode.size() + 1) + 1);
  }
  return fmt::format("{}-{}", episode, n);
}

Result<std::unique_ptr<Journal>> open_journal(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec) return io_error("journal {}: cannot create {}: {}", path, dir.string(), ec.message());
  return Journal::open(path);
}

}  // namespace

Result<LoopResult> run_episode(const Episode& episode, const LoopOptions& options) {
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<Journal> journal, open_journal(options.journal));
  std::string name = options.run_name;
  if (name.empty()) {
    RECUR_ASSIGN_OR_RETURN(name, next_run_name(*journal, episode.name));
  }
  RECUR_ASSIGN_OR_RETURN(RunRecord run, journal->begin_run(name, episode.path, episode.start));
  BuiltinProposer builtin;
  Proposer& proposer = options.proposer ? *options.proposer : builtin;
  Loop loop(episode, options, *journal, std::move(run), proposer);
  return loop.run();
}

Result<LoopResult> resume_run(std::string_view run, const LoopOptions& options) {
  RunRecord rec;
  {
    JournalOptions jo;
    jo.create = false;
    RECUR_ASSIGN_OR_RETURN(std::unique_ptr<Journal> journal, Journal::open(options.journal, jo));
    RECUR_ASSIGN_OR_RETURN(rec, journal->find_run(run));
  }
  RECUR_ASSIGN_OR_RETURN(Episode episode, load_episode(rec.episode));
  if (episode.start != KnobMap(rec.base_config.begin(), rec.base_config.end()))
    return make_error(ErrorCode::kFailedPrecondition,
                      "run {}: episode {} now starts from another configuration than the run did; resume needs the "
                      "same episode",
                      rec.name, rec.episode);
  LoopOptions o = options;
  o.run_name = rec.name;
  return run_episode(episode, o);
}

}  // namespace recur::agent
