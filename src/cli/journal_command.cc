// `recur journal show RUN | --list [--db PATH] [--json]`: inspect the agent's journal (runs,
// experiments, what a resume would redo). Read-only; safe while the agent is writing (WAL).
// Exit codes: 0 shown, 1 the journal cannot be read (missing file, corrupt, no such run),
// 2 bad usage.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "journal/journal.h"
#include "cli/cli.h"

namespace recur::cli {
namespace {

using nlohmann::json;

struct JournalFlags {
  std::string db = "runs/journal.db";
  std::string run;
  bool list = false;
  bool json = false;
  bool feedback = false;
};

std::string time_text(double unix_s) {
  std::time_t t = std::time_t(unix_s);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

json run_json(const agent::RunRecord& r) {
  return {{"id", r.id},       {"name", r.name},       {"episode", r.episode},       {"base_config", r.base_config},
          {"state", r.state}, {"outcome", r.outcome}, {"created_at", r.created_at}, {"ended_at", r.ended_at ? json(*r.ended_at) : json(nullptr)}};
}

json experiment_json(const agent::ExperimentRecord& e) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"step", e.step},
          {"state", agent::experiment_state_name(e.state)},
          {"attempts", e.attempts},
          {"hypothesis", e.spec.hypothesis},
          {"probe", e.spec.probe},
          {"tier", e.spec.tier},
          {"config_diff", e.spec.config_diff},
          {"verdict", e.verdict ? json(verdict_name(*e.verdict)) : json(nullptr)},
          {"decision", e.decision ? json(agent::decision_name(*e.decision)) : json(nullptr)},
          {"cost_s", e.cost_s},
          {"planned_at", e.planned_at},
          {"started_at", opt(e.started_at)},
          {"ended_at", opt(e.ended_at)},
          {"feedback", e.feedback ? feedback_to_json(*e.feedback) : json(nullptr)}};
}

json plan_json(const agent::ResumePlan& p) {
  return {{"done", p.done},           {"rerun", p.rerun},         {"pending", p.pending},
          {"abandoned", p.abandoned}, {"next_step", p.next_step}, {"config", p.config}};
}

std::string diff_text(const agent::KnobDiff& d) {
  std::vector<std::string> kv;
  for (const auto& [k, v] : d) kv.push_back(k + "=" + v);
  return kv.empty() ? "-" : fmt::format("{}", fmt::join(kv, " "));
}

int list_runs(agent::Journal& j, bool as_json) {
  auto runs = j.runs();
  if (!runs) return report_failure(runs.error());
  if (as_json) {
    json out = json::array();
    for (const auto& r : *runs) out.push_back(run_json(r));
    print_json(out);
    return kExitOk;
  }
  if (runs->empty()) fmt::print("{}: no runs\n", j.path());
  for (const auto& r : *runs) {
    auto exps = j.experiments(r.id);
    if (!exps) return report_failure(exps.error());
    fmt::print("{:>4}  {:<24} {:<8} {:>4} experiments  {}  {}{}\n", r.id, r.name, r.state, exps->size(),
               time_text(r.created_at), r.episode.empty() ? "" : r.episode, r.outcome.empty() ? "" : "  " + r.outcome);
  }
  return kExitOk;
}

int show_run(agent::Journal& j, const JournalFlags& f) {
  auto run = j.find_run(f.run);
  if (!run) return report_failure(run.error());
  auto exps = j.experiments(run->id);
  if (!exps) return report_failure(exps.error());
  auto plan = j.resume_plan(run->id);
  if (!plan) return report_failure(plan.error());
  if (f.json) {
    json e = json::array();
    for (const auto& x : *exps) e.push_back(experiment_json(x));
    print_json({{"journal", j.path()}, {"run", run_json(*run)}, {"experiments", e}, {"resume", plan_json(*plan)}});
    return kExitOk;
  }
  fmt::print("run {} '{}' ({}), episode {}, started {}{}\n", run->id, run->name, run->state,
             run->episode.empty() ? "-" : run->episode, time_text(run->created_at),
             run->outcome.empty() ? "" : ": " + run->outcome);
  fmt::print("base config: {}\n", diff_text(run->base_config));
  fmt::print("{:>5}  {:<8} {:>3}  {:<4} {:<14} {:<12} {:<7} {:>8}  {}\n", "step", "state", "try", "tier", "probe",
             "verdict", "decision", "cost", "hypothesis -> config diff");
  for (const auto& e : *exps) {
    fmt::print("{:>5}  {:<8} {:>3}  {:<4} {:<14} {:<12} {:<7} {:>7.2f}s  {} -> {}\n", e.step,
               agent::experiment_state_name(e.state), e.attempts, e.spec.tier, e.spec.probe,
               e.verdict ? verdict_name(*e.verdict) : "-", e.decision ? agent::decision_name(*e.decision) : "-",
               e.cost_s, e.spec.hypothesis, diff_text(e.spec.config_diff));
    if (f.feedback && e.feedback) {
      std::string text = render_feedback(*e.feedback);
      std::string indented;
      for (size_t pos = 0; pos < text.size();) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        indented += "         " + text.substr(pos, end - pos) + "\n";
        pos = end + 1;
      }
      fmt::print("{}", indented);
    }
  }
  auto steps = [](const std::vector<int64_t>& v) {
    return v.empty() ? std::string() : fmt::format(" (step {})", fmt::join(v, ", "));
  };
  fmt::print("resume: {} done, {} to re-run{}, {} pending{}, {} abandoned{}; next step {}; config {}\n",
             plan->done.size(), plan->rerun.size(), steps(plan->rerun), plan->pending.size(), steps(plan->pending),
             plan->abandoned.size(), steps(plan->abandoned), plan->next_step, diff_text(plan->config));
  return kExitOk;
}

int run_journal_show(const JournalFlags& f) {
  if (f.run.empty() == !f.list) {
    std::fprintf(stderr, "recur: journal show: give a RUN (name or id) or --list, not %s\n",
                 f.list ? "both" : "neither");
    return kExitUsage;
  }
  auto j = agent::Journal::open(f.db, {.create = false, .read_only = true});
  if (!j) return report_failure(j.error());
  return f.list ? list_runs(**j, f.json) : show_run(**j, f);
}

void register_journal(CLI::App& app, Invocation& inv) {
  auto* cmd = app.add_subcommand("journal", "The agent's journal (SQLite, WAL): runs and their experiments");
  cmd->require_subcommand(1);
  auto f = std::make_shared<JournalFlags>();
  auto* show = cmd->add_subcommand("show", "Show one run's experiments (state, attempts, probe, verdict, decision, "
                                           "cost, hypothesis, config diff) and what a resume would redo, or --list "
                                           "the runs. Read-only; safe while an agent writes.");
  show->add_option("RUN", f->run, "run name or id");
  show->add_flag("--list", f->list, "List the runs");
  show->add_option("--db", f->db, "journal file")->capture_default_str();
  show->add_flag("--json", f->json, "Print JSON (experiments with their Feedback records)");
  show->add_flag("--feedback", f->feedback, "Print each finished experiment's Feedback record");
  show->callback([&inv, f] { inv.run = [f] { return run_journal_show(*f); }; });
}

}  // namespace

RECUR_CLI_COMMAND(journal, register_journal);

}  // namespace recur::cli
