// `recur agent run --episode FILE [--budget-s N] [--proposer builtin|cmd:PROG|openai:URL]
// [--proposer-max-calls N] [--proposer-max-tokens N] [--proposer-max-s S] [--proposer-model M]
// [--proposer-log FILE] [--allow-patches [--candidate-repo DIR] [--candidate-build-cmd CMD]
// [--candidate-runner PROG] [--candidate-scratch DIR] [--candidate-budget-s N]] [--run NAME]
// [--journal PATH] [--json]` and `recur agent resume RUN [--journal PATH] [--json]`: the agent
// loop (agent/loop.h) on an episode, with progress on stderr (step, probe, tier, hypothesis,
// probe seconds spent of the budget), then the summary (gate verdict, experiments, root cause,
// config diff) and the run's HTML report (agent/report.h) on stdout.
// Exit codes: 0 the gate passes, 1 it does not (or a probe or the journal failed), 2 bad usage
// (a malformed episode, an unknown proposer), 3 paused by --steps before the gate was decided.
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "loop/loop.h"
#include "loop/proposer_factory.h"
#include "report/report.h"
#include "journal/run_name.h"
#include "loop/summary.h"
#include "cli/agent.h"

namespace recur::cli {
namespace {

struct RunFlags {
  std::string episode;
  std::string run;
  std::string journal = std::string(agent::kDefaultJournal);
  std::string proposer = "builtin";
  agent::ProposerOptions proposer_options;
  bool allow_patches = false;
  agent::CandidateOptions candidate;  // how "patch" actions are built (docs/candidates.md)
  double budget_s = 0;
  int steps = 0;
  bool json = false;
  bool quiet = false;
};

int finish(const Result<agent::LoopResult>& r, const RunFlags& f) {
  if (!r) return report_failure(r.error());
  std::string report;
  if (auto j = agent::Journal::open(f.journal, {.create = false})) {
    if (auto w = agent::write_run_report(**j, r->run.name)) report = w->path;
    else std::fprintf(stderr, "recur: report: %s\n", w.error().to_string().c_str());
  }
  if (f.json) print_json(agent::summary_json(*r, report));
  else fmt::print("{}", agent::render_summary(*r, report));
  if (r->paused) return 3;
  return r->passed ? kExitOk : kExitFailure;
}

agent::LoopOptions loop_options(const RunFlags& f, agent::Proposer* proposer) {
  agent::LoopOptions o;
  o.journal = f.journal;
  o.run_name = f.run;
  if (f.budget_s > 0) o.budget_s = f.budget_s;
  if (f.steps > 0) o.max_new_experiments = f.steps;
  o.proposer = proposer;
  o.allow_patches = f.allow_patches;
  o.candidate = f.candidate;
  if (!f.quiet) o.progress = [](std::string_view line) { std::fprintf(stderr, "agent: %.*s\n", int(line.size()), line.data()); };
  return o;
}

int run_agent(const RunFlags& f) {
  auto episode = agent::load_episode(f.episode);
  if (!episode) {
    // A malformed or missing episode (or its gate) is the user's to fix: usage, not a failed gate.
    std::fprintf(stderr, "recur: %s\n", episode.error().to_string().c_str());
    return kExitUsage;
  }
  auto proposer = agent::make_proposer(f.proposer, f.proposer_options);
  if (!proposer) return report_failure(proposer.error());
  return finish(agent::run_episode(*episode, loop_options(f, proposer->get())), f);
}

int resume_agent(const RunFlags& f) {
  auto proposer = agent::make_proposer(f.proposer, f.proposer_options);
  if (!proposer) return report_failure(proposer.error());
  return finish(agent::resume_run(f.run, loop_options(f, proposer->get())), f);
}

void common_flags(CLI::App* cmd, RunFlags& f) {
  cmd->add_option("--journal", f.journal, "journal file (SQLite, created if missing)")->capture_default_str();
  cmd->add_option("--proposer", f.proposer, "builtin, cmd:PROGRAM (JSON state on stdin, a change on stdout), or "
                                            "openai:URL (an OpenAI-compatible chat endpoint; key from "
                                            "RECUR_PROPOSER_API_KEY or OPENAI_API_KEY); docs/agent.md")
      ->capture_default_str();
  agent::ProposerOptions& po = f.proposer_options;
  cmd->add_option("--proposer-max-calls", po.limits.max_calls, "openai: stop the run after N requests")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--proposer-max-tokens", po.limits.max_tokens,
                  "openai: stop the run after N tokens (prompt + completion, from usage or estimated)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--proposer-max-s", po.limits.max_s, "openai: stop the run after S seconds waiting for answers")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--proposer-model", po.model, "openai: the model id (default: the endpoint's first /models entry)");
  cmd->add_option("--proposer-log", po.log_path, "openai: append each request and answer to FILE as a JSON line");
  cmd->add_option("--steps", f.steps, "run at most N new experiments, then pause (the run stays open; resume "
                                      "continues it)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--allow-patches", f.allow_patches,
                "let the proposer submit code changes ({\"action\": \"patch\"}): each is built in a git worktree and "
                "judged by `recur candidate build` (docs/candidates.md); refused with a reason otherwise");
  agent::CandidateOptions& c = f.candidate;
  cmd->add_option("--candidate-repo", c.repo, "patches: the tree they apply to")->capture_default_str();
  cmd->add_option("--candidate-build-cmd", c.build_command, "patches: build command (sh -c in the worktree)");
  cmd->add_option("--candidate-runner", c.runner, "patches: the built kernel runner, relative to the worktree");
  cmd->add_option("--candidate-scratch", c.scratch, "patches: folder for worktrees (default $TMPDIR/recur-candidates)");
  cmd->add_option("--candidate-budget-s", c.bench_budget_s, "patches: bench seconds per candidate")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 600.0));
  cmd->add_flag("--json", f.json, "Print the summary as JSON");
  cmd->add_flag("--quiet", f.quiet, "No progress lines on stderr");
}

void register_run(CLI::App& agent, Invocation& inv) {
  auto f = std::make_shared<RunFlags>();
  auto* cmd = agent.add_subcommand(
      "run", "Run the agent on an episode: evaluate its gate, attribute a failure to components, try changes to "
             "the knobs tagged with them cheapest probe first, keep or revert, until the gate passes or the "
             "budget is spent. Every experiment goes to the journal; prints the summary and writes the report.");
  cmd->add_option("--episode", f->episode, "episode file (TOML; episodes/*.toml)")->required();
  cmd->add_option("--budget-s", f->budget_s, "probe seconds to spend (default: the episode's budget_s)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--run", f->run, "run name (default: <episode>-<n>, the next free n); an existing name resumes it")
      ->check(CLI::Validator(
          [](const std::string& name) {
            Status s = agent::check_run_name(name, "--run");
            return s ? std::string() : s.error().message();
          },
          "NAME"));
  common_flags(cmd, *f);
  cmd->callback([&inv, f] { inv.run = [f] { return run_agent(*f); }; });
}

void register_resume(CLI::App& agent, Invocation& inv) {
  auto f = std::make_shared<RunFlags>();
  auto* cmd = agent.add_subcommand(
      "resume", "Continue a run (after kill -9, a crash or a spent budget): experiments the journal holds as done "
                "are replayed, not re-run; one that was running when the process died runs again once.");
  cmd->add_option("RUN", f->run, "run name or id")->required();
  cmd->add_option("--budget-s", f->budget_s, "probe seconds in total, replayed ones included (default: the episode's)")
      ->check(CLI::PositiveNumber);
  common_flags(cmd, *f);
  cmd->callback([&inv, f] { inv.run = [f] { return resume_agent(*f); }; });
}

}  // namespace

RECUR_AGENT_VERB(run, register_run);
RECUR_AGENT_VERB(resume, register_resume);

}  // namespace recur::cli
