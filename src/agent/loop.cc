#include "agent/loop.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "agent/builtin_proposer.h"
#include "agent/candidate_rank.h"
#include "agent/component_knobs.h"
#include "agent/evidence.h"
#include "agent/gate_state.h"
#include "agent/loop_actions.h"
#include "gate/gate.h"
#include "gate/kernel_probe.h"
#include "kernels/registry.h"

namespace recur::agent {

namespace {

namespace fs = std::filesystem;
using KnobMap = std::map<std::string, std::string>;

int gate_tier(const gate::GateSpec& spec) {
  int t = 0;
  for (const gate::MetricRequest& r : spec.requests) t = std::max(t, r.def->tier);
  return t;
}

bool condition_times_kernel(const gate::Condition& c, std::string_view candidate) {
  for (const gate::MetricRequest& r : metric_calls(c.expr)) {
    if (is_kernel_time(r.def->source) && (r.arm == candidate || r.vs == candidate)) return true;
  }
  return false;
}

bool condition_is_speed(const gate::Condition& c, std::string_view candidate) {
  for (const gate::MetricRequest& r : metric_calls(c.expr))
    if ((r.arm == candidate || r.vs == candidate) &&
        (r.def->source == gate::MetricSource::kEngineThroughput || is_kernel_time(r.def->source)))
      return true;
  return false;
}

bool condition_is_numeric(const gate::Condition& c) {
  for (const gate::MetricRequest& r : metric_calls(c.expr))
    if (r.def->source == gate::MetricSource::kEnginePair || r.def->source == gate::MetricSource::kKernelCheck) return true;
  return false;
}

Result<Config> to_config(const KnobMap& m) {
  Config c;
  for (const auto& [k, v] : m) RECUR_RETURN_IF_ERROR(c.set(k, v));
  return c;
}

// The honest ending when the attribution points where no knob acts.
std::string code_change_finding(const Evidence& ev) {
  const std::vector<std::string> knobless = knobless_components(ev);
  if (knobless.empty()) return "";
  std::string list;
  for (const std::string& c : knobless) list += (list.empty() ? "" : ", ") + c;
  return fmt::format("; no knob acts on {}: a code change is needed there", list);
}

std::string metric_text(const Feedback& f, std::string_view name) {
  const Metric* m = f.find_metric(name);
  if (m == nullptr) return "";
  if (m->ci95) return fmt::format("{:.3g} [{:.3g}, {:.3g}]", m->value, m->ci95->first, m->ci95->second);
  return fmt::format("{:.3g}", m->value);
}

class Loop {
 public:
  Loop(const Episode& ep, const LoopOptions& o, Journal& journal, RunRecord run, Proposer& proposer)
      : ep_(ep), o_(o), run_(std::move(run)), proposer_(proposer), log_(journal, run_.id),
        budget_s_(o.budget_s.value_or(ep.budget_s)) {
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
    RECUR_ASSIGN_OR_RETURN(LoggedExperiment g, gate(config, "the starting configuration passes the gate", {}, nullptr));
    GateState state = gate_state_from_feedback(gate_with_candidate(ep_, config), g.feedback);
    note_state(state);
    int inconclusive_reruns = 0, iteration = 0;
    std::string stop;
    while (true) {
      if (state.passed()) break;
      if (state.verdict.outcome == gate::Outcome::kInconclusive && inconclusive_reruns < 2) {
        ++inconclusive_reruns;
        RECUR_ASSIGN_OR_RETURN(g, gate(config, "a second measurement decides the inconclusive gate", {}, nullptr));
        state = gate_state_from_feedback(gate_with_candidate(ep_, config), g.feedback);
        note_state(state);
        continue;
      }
      if (!(stop = out_of_budget()).empty()) break;
      // Instruction-count dumps go beside the run's report, as the gate's traces do.
      const std::string callgrind_dir = (fs::path(o_.journal).parent_path() / run_.name / "callgrind").string();
      RECUR_ASSIGN_OR_RETURN(Evidence ev, attribute_gap(ep_, config, state, log_,
                                                        {.instruction_counts = o_.instruction_counts &&
                                                                               instruction_counts_affordable(),
                                                         .callgrind_dir = callgrind_dir,
                                                         .trace_dir = (fs::path(o_.journal).parent_path() /
                                                                       run_.name / "traces")
                                                                          .string()}));
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
          break;
        }
        as.rejected.clear();
        as.tried.insert(p->change.key());
        RECUR_ASSIGN_OR_RETURN(std::optional<Finding> f, ladder(*p, config, state, ev, g));
        if (!f) continue;
        kept = true;
        config = apply_change(config, p->change);
        visited.insert(config);
        state = gate_state_from_feedback(gate_with_candidate(ep_, config), g.feedback);
        note_state(state);
        inconclusive_reruns = 0;
        findings_.push_back(*f);
        out.findings.push_back(std::move(*f));
      }
      if (!kept) break;
    }
    if (state.passed()) RECUR_RETURN_IF_ERROR(ablate(config, state, g, out));
    out.passed = state.passed();
    out.final_config = config;
    out.final_gate = state.verdict.reason;
    out.spent_s = log_.spent_s();
    out.replayed = log_.replayed();
    out.outcome = out.passed ? fmt::format("gate pass after {} experiments, {} change(s) kept, {:.1f} s of probes",
                                           log_.steps(), out.findings.size(), log_.spent_s())
                             : fmt::format("gate {} after {} experiments: {}; stopped: {}",
                                           gate::outcome_name(state.verdict.outcome), log_.steps(),
                                           state.verdict.reason, stop);
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
        std::optional<Proposal> p = decode_proposal(e.feedback);
        if (p->kind == ActionKind::kSet) return p;
        // A patch or probe: run it, show the proposer its record, ask again.
        RECUR_RETURN_IF_ERROR(run_action(*p, as));
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
    if (x.kind != ActionKind::kSet) {
      // Everything a replay needs to run the same experiment again.
      f.notes = {x.kind == ActionKind::kPatch ? "action: patch" : "action: probe"};
      if (x.kind == ActionKind::kProbe) f.notes.push_back("probe: " + x.probe);
      for (const auto& [k, v] : x.args) f.notes.push_back(fmt::format("arg: {}={}", k, v));
      if (x.kind == ActionKind::kPatch) f.artifacts["patch"] = x.patch;
      return f;
    }
    f.notes = {"change: " + x.change.knob + "=" + x.change.value, "from: " + x.change.from,
               "component: " + x.change.component, "why: " + x.change.why};
    f.add_metric("open_changes", double(open_changes(as).value_or(std::vector<Candidate>{}).size()));
    return f;
  }

  static std::optional<Proposal> decode_proposal(const Feedback& f) {
    Proposal p;
    p.hypothesis = f.hypothesis;
    for (const std::string& n : f.notes) {
      auto field = [&](std::string_view prefix) -> std::optional<std::string> {
        if (!n.starts_with(prefix)) return std::nullopt;
        return n.substr(prefix.size());
      };
      if (auto v = field("change: ")) {
        const size_t eq = v->find('=');
        p.change.knob = v->substr(0, eq);
        p.change.value = eq == std::string::npos ? "" : v->substr(eq + 1);
      }
      if (auto v = field("from: ")) p.change.from = *v;
      if (auto v = field("component: ")) p.change.component = *v;
      if (auto v = field("why: ")) p.change.why = *v;
      if (auto v = field("action: ")) p.kind = *v == "patch" ? ActionKind::kPatch : ActionKind::kProbe;
      if (auto v = field("probe: ")) p.probe = *v;
      if (auto v = field("arg: ")) {
        const size_t eq = v->find('=');
        p.args[v->substr(0, eq)] = eq == std::string::npos ? "" : v->substr(eq + 1);
      }
    }
    if (auto it = f.artifacts.find("patch"); it != f.artifacts.end()) p.patch = it->second;
    return p;
  }

  // One proposer-requested experiment (a journal experiment, so a resume replays its record).
  Status run_action(const Proposal& p, const AgentState& as) {
    const bool patch = p.kind == ActionKind::kPatch;
    const std::string patch_path =
        (fs::path(o_.journal).parent_path() / run_.name / "patches" / fmt::format("step-{}.patch", log_.steps())).string();
    RECUR_ASSIGN_OR_RETURN(
        LoggedExperiment e,
        log_.run({.hypothesis = p.hypothesis, .probe = patch ? "candidate.build" : p.probe + ".kernel",
                  .tier = patch || p.probe == "bench" ? 2 : 1, .config_diff = {}},
                 [&]() -> Result<Feedback> {
                   return patch ? run_patch_action(p, o_.candidate, patch_path) : run_probe_action(p, as.config);
                 },
                 [](const Feedback&) { return Decision::kNone; }));
    (void)e;
    return ok_status();
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

  // `annotate` adds notes to the gate's record before it is journaled (a prediction's check).
  Result<LoggedExperiment> gate(const KnobMap& config, std::string hypothesis, KnobDiff diff,
                                const std::function<Decision(const Feedback&)>& decide,
                                const std::function<void(Feedback&)>& annotate = {}) {
    const gate::GateSpec spec = gate_with_candidate(ep_, config);
    return log_.run({.hypothesis = std::move(hypothesis), .probe = "gate", .tier = gate_tier(spec), .config_diff = diff},
                    [&]() -> Result<Feedback> {
                      gate::GateRunOptions go;
                      // Traces a gate records (zone_time_us) go beside the run's report.
                      go.artifact_dir = (fs::path(o_.journal).parent_path() / run_.name / "traces").string();
                      go.progress = [this](std::string_view line) {
                        if (o_.progress) o_.progress(fmt::format("    {}", line));
                      };
                      go.track_reads_of = ep_.candidate;
                      RECUR_ASSIGN_OR_RETURN(gate::GateResult r, gate::run_gate(spec, go));
                      if (r.knobs_read) r.feedback.notes.push_back(knobs_read_note(*r.knobs_read));
                      if (annotate) annotate(r.feedback);
                      return std::move(r.feedback);
                    },
                    decide ? decide : [](const Feedback&) { return Decision::kNone; });
  }

  // The experiment limit is a hard one: a change whose validation would run past it is not
  // started or is abandoned between its probes (the budget in seconds may be overrun by the
  // probe that spends it; a count is exact).
  bool at_experiment_limit() const { return log_.steps() >= o_.max_experiments.value_or(ep_.max_experiments); }

  // Validates one change cheapest first; returns the finding when it is kept (and leaves the
  // new gate experiment in `g`).
  Result<std::optional<Finding>> ladder(const Proposal& p, const KnobMap& config, const GateState& state,
                                        const Evidence& ev, LoggedExperiment& g) {
    const KnobDiff diff = {{p.change.knob, p.change.value}};
    const KnobMap next = apply_change(config, p.change);
    RECUR_ASSIGN_OR_RETURN(Config next_cfg, to_config(next));
    RECUR_ASSIGN_OR_RETURN(Config cur_cfg, to_config(config));
    const gate::GateSpec spec = gate_with_candidate(ep_, config);
    std::string gain;

    // Tier 1: the variant the change selects must pass check against float64, and when the gate
    // fails on numerics it must also be clearly more accurate than the variant it replaces.
    const gate::Condition* deciding = state.deciding(spec);
    if (at_experiment_limit()) return std::optional<Finding>();
    if (auto kv = kernel_variant_of(p.change)) {
      RECUR_ASSIGN_OR_RETURN(LoggedExperiment c, check_variant(spec, kv->first, kv->second, diff));
      if (c.decision == Decision::kRevert) return std::optional<Finding>();
      if (deciding && condition_is_numeric(*deciding) && !p.change.from.empty()) {
        RECUR_ASSIGN_OR_RETURN(LoggedExperiment was, check_variant(spec, kv->first, p.change.from, {}));
        const Metric* now = c.feedback.find_metric("max_rel");
        const Metric* before = was.feedback.find_metric("max_rel");
        if (now && before && !(now->value < 0.5 * before->value)) {
          RECUR_ASSIGN_OR_RETURN(
              LoggedExperiment r,
              log_.run({.hypothesis = fmt::format("{} {} is more accurate than {} (max_rel {:.3g} vs {:.3g})", kv->first,
                                                  kv->second, p.change.from, now->value, before->value),
                        .probe = "analyze.compare", .tier = 0, .config_diff = diff},
                       [&]() -> Result<Feedback> {
                         Feedback f;
                         f.probe = "analyze.compare";
                         f.subject = fmt::format("check.kernel {} {} vs {}", kv->first, kv->second, p.change.from);
                         f.verdict = Verdict::kRefuted;
                         f.add_metric("max_rel_ratio", before->value > 0 ? now->value / before->value : 1.0);
                         f.notes.push_back("not at least 2x more accurate than the current variant: it cannot close a "
                                           "numerics gap");
                         return f;
                       },
                       [](const Feedback&) { return Decision::kRevert; }));
          (void)r;
          return std::optional<Finding>();
        }
        gain = fmt::format("check: max_rel {:.3g} -> {:.3g}", before ? before->value : 0.0, now ? now->value : 0.0);
      }
    }

    // Tier 2: when the gate times the candidate's kernel, the new variant must be faster.
    if (at_experiment_limit()) return std::optional<Finding>();
    bool paired = false;  // a paired timing of the change against the current configuration decided
    const gate::KernelWorkload w = kernel_workload_for(spec, ep_.candidate);
    if (deciding && condition_times_kernel(*deciding, ep_.candidate) && spec.kernel &&
        p.change.knob == fmt::format("kernel.{}.variant", w.kernel)) {
      RECUR_ASSIGN_OR_RETURN(
          LoggedExperiment b,
          log_.run({.hypothesis = fmt::format("{} {} is faster than {} ({})", w.kernel, p.change.value, p.change.from,
                                              p.change.why),
                    .probe = "bench.kernel", .tier = 2, .config_diff = diff},
                   [&]() -> Result<Feedback> {
                     RECUR_ASSIGN_OR_RETURN(gate::KernelMeasurement m, gate::measure_kernel_ratio(w, next_cfg, cur_cfg, {}));
                     return std::move(m.feedback);
                   },
                   // Only a significant gain goes on: an undecided ratio is no measurable effect.
                   [](const Feedback& f) { return f.verdict == Verdict::kConfirmed ? Decision::kNone : Decision::kRevert; }));
      gain += fmt::format("{}bench: time ratio {} ({})", gain.empty() ? "" : "; ", metric_text(b.feedback, "ratio"),
                          verdict_name(b.feedback.verdict));
      if (b.decision == Decision::kRevert) return std::optional<Finding>();
      paired = true;
    }

    // A speed condition decides: keep only a significant gain in a paired, interleaved A/B of the
    // current configuration against the change on the gate's own workload.
    if (at_experiment_limit()) return std::optional<Finding>();
    if (!paired && deciding && condition_is_speed(*deciding, ep_.candidate)) {
      RECUR_ASSIGN_OR_RETURN(std::optional<LoggedExperiment> ab, paired_ab(spec, config, next, *deciding, p, diff));
      if (ab) {
        gain += fmt::format("{}paired A/B: {}", gain.empty() ? "" : "; ", ab->feedback.notes.empty() ? "" : ab->feedback.notes.front());
        if (ab->decision == Decision::kRevert) return std::optional<Finding>();
      }
    }

    // The gate decides: keep only what brings it strictly closer to passing.
    if (at_experiment_limit()) return std::optional<Finding>();
    const GateScore before = gate_score(state.verdict);
    const gate::GateSpec next_spec = gate_with_candidate(ep_, next);
    // The hypothesis's prediction, checked against what this gate run measures.
    const ChangeOutlook outlook =
        outlook_of(p.change, {.spec = &spec, .gate = &state, .evidence = &ev, .candidate_arm = ep_.candidate});
    RECUR_ASSIGN_OR_RETURN(
        LoggedExperiment ng,
        gate(
            next, p.hypothesis, diff,
            [&](const Feedback& f) {
              const GateScore after = gate_score(gate_state_from_feedback(next_spec, f).verdict);
              return closer_to_pass(after, before) ? Decision::kKeep : Decision::kRevert;
            },
            [&](Feedback& f) {
              if (std::string n = prediction_note(outlook, gate_state_from_feedback(next_spec, f)); !n.empty())
                f.notes.push_back(std::move(n));
            }));
    if (ng.decision != Decision::kKeep) return std::optional<Finding>();
    const GateScore after = gate_score(gate_state_from_feedback(next_spec, ng.feedback).verdict);
    g = ng;
    Finding f{.step = ng.step, .hypothesis = p.hypothesis, .knob = p.change.knob, .from = p.change.from,
              .to = p.change.value, .component = p.change.component, .evidence = ev.findings, .gain = gain};
    f.gain += fmt::format("{}gate: {} -> {}", f.gain.empty() ? "" : "; ", before.to_string(), after.to_string());
    return std::optional<Finding>(std::move(f));
  }

  // The paired A/B of the current configuration (arm `cur`) against the change (arm `new`) on the
  // gate's workload, by the deciding condition's speed metric: a ratio whose CI clears 1 in the
  // change's favour passes (kept so far), one that does not is no measurable effect (reverted),
  // one against it is a slowdown (reverted). nullopt when the metric has no paired form.
  Result<std::optional<LoggedExperiment>> paired_ab(const gate::GateSpec& spec, const KnobMap& config, const KnobMap& next,
                                                    const gate::Condition& deciding, const Proposal& p,
                                                    const KnobDiff& diff) {
    std::string condition;
    for (const gate::MetricRequest& r : metric_calls(deciding.expr)) {
      if (r.arm != ep_.candidate && r.vs != ep_.candidate) continue;
      if (r.def->source == gate::MetricSource::kEngineThroughput)
        condition = r.def->name.starts_with("prefill") ? "prefill_ratio(new vs cur) > 1" : "decode_ratio(new vs cur) > 1";
      else if (is_kernel_time(r.def->source))
        condition = "time_ratio(new vs cur) < 1";
      if (!condition.empty()) break;
    }
    if (condition.empty()) return std::optional<LoggedExperiment>();
    const gate::Arm* cand = spec.find_arm(ep_.candidate);
    gate::Arm cur = cand ? *cand : gate::Arm{}, nw = cur;
    cur.name = "cur";
    cur.knobs.assign(config.begin(), config.end());
    nw.name = "new";
    nw.knobs.assign(next.begin(), next.end());
    RECUR_ASSIGN_OR_RETURN(gate::GateSpec ab, gate::respec(spec, {cur, nw}, {condition}));
    RECUR_ASSIGN_OR_RETURN(
        LoggedExperiment e,
        log_.run({.hypothesis = fmt::format("{}={} is measurably faster than {} on the gate's workload (paired: `{}`)",
                                            p.change.knob, p.change.value, p.change.from, condition),
                  .probe = "bench.ab", .tier = gate_tier(ab), .config_diff = diff},
                 [&]() -> Result<Feedback> {
                   gate::GateRunOptions go;
                   go.progress = [this](std::string_view line) {
                     if (o_.progress) o_.progress(fmt::format("    {}", line));
                   };
                   RECUR_ASSIGN_OR_RETURN(gate::GateResult r, gate::run_gate(ab, go));
                   Feedback f = std::move(r.feedback);
                   f.probe = "bench.ab";
                   const char* what = r.verdict.outcome == gate::Outcome::kPass   ? "a significant gain"
                                      : r.verdict.outcome == gate::Outcome::kFail ? "slower"
                                                                                  : "no measurable effect";
                   f.notes.insert(f.notes.begin(), fmt::format("{}: {}", what, r.verdict.reason));
                   return f;
                 },
                 [](const Feedback& f) { return f.verdict == Verdict::kConfirmed ? Decision::kNone : Decision::kRevert; }));
    return std::optional<LoggedExperiment>(std::move(e));
  }

  // After a pass with two or more knobs changed: each changed knob is put back to its start
  // value in turn, and when the gate still passes without it the change is dropped (kept
  // experiment: its diff is the start value). The root cause lists only changes whose removal
  // hurts. Stops early when the budget is spent.
  Status ablate(KnobMap& config, GateState& state, LoggedExperiment& g, LoopResult& out) {
    std::vector<std::string> changed;
    for (const auto& [k, v] : config)
      if (auto it = ep_.start.find(k); it == ep_.start.end() || it->second != v) changed.push_back(k);
    if (changed.size() < 2) return ok_status();
    for (const std::string& k : changed) {
      if (!out_of_budget().empty()) break;
      KnobMap without = config;
      std::string back;
      if (auto it = ep_.start.find(k); it != ep_.start.end()) back = it->second;
      else if (const KnobSpec* spec = KnobRegistry::global().find(k)) back = spec->default_value;
      without[k] = back;
      const gate::GateSpec spec = gate_with_candidate(ep_, without);
      RECUR_ASSIGN_OR_RETURN(
          LoggedExperiment a,
          gate(without, fmt::format("ablation: without {}={} (back to {}) the gate still passes, so the change no longer "
                                    "matters",
                                    k, config.at(k), back),
               {{k, back}}, [&](const Feedback& f) {
                 return gate_state_from_feedback(spec, f).passed() ? Decision::kKeep : Decision::kRevert;
               }));
      if (a.decision != Decision::kKeep) continue;
      config = without;
      state = gate_state_from_feedback(spec, a.feedback);
      note_state(state);
      g = a;
      std::erase_if(out.findings, [&](const Finding& f) { return f.knob == k; });
      std::erase_if(findings_, [&](const Finding& f) { return f.knob == k; });
    }
    return ok_status();
  }

  // check.kernel of one variant (on the gate's kernel workload when it is that kernel's); each
  // (kernel, variant) runs once per run and is reused, which a replay reproduces.
  Result<LoggedExperiment> check_variant(const gate::GateSpec& spec, const std::string& kernel,
                                         const std::string& variant, const KnobDiff& diff) {
    const std::string key = kernel + "/" + variant;
    if (auto it = checks_.find(key); it != checks_.end()) return it->second;
    gate::KernelWorkload w = kernel_workload_for(spec, ep_.candidate);
    if (w.kernel != kernel) w = gate::KernelWorkload{.kernel = kernel, .budget_s = 1, .seeds = {1}};
    RECUR_ASSIGN_OR_RETURN(
        LoggedExperiment c,
        log_.run({.hypothesis = fmt::format("{} variant {} is correct (check against float64)", kernel, variant),
                  .probe = "check.kernel", .tier = 1, .config_diff = diff},
                 [&]() -> Result<Feedback> {
                   Config cfg;
                   RECUR_RETURN_IF_ERROR(cfg.set(fmt::format("kernel.{}.variant", kernel), variant));
                   RECUR_ASSIGN_OR_RETURN(gate::KernelCheckMeasurement m, gate::measure_kernel_check(w, cfg, nullptr, {}));
                   return std::move(m.feedback);
                 },
                 [&diff](const Feedback& f) {
                   // Checking the variant in use (no diff) measures a baseline; it reverts nothing.
                   return f.verdict == Verdict::kConfirmed || diff.empty() ? Decision::kNone : Decision::kRevert;
                 }));
    checks_[key] = c;
    return c;
  }

  const Episode& ep_;
  const LoopOptions& o_;
  std::map<std::string, LoggedExperiment> checks_;
  RunRecord run_;
  Proposer& proposer_;
  std::string proposer_stopped_;  // why the proposer stopped, when it gave a reason
  ExperimentLog log_;
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
