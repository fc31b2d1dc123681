// `recur agent eval DIR_OR_FILES... [--proposer P]... [--repeat N] [--budget-scale X]
// [--journal PATH] [--html FILE] [--json] [--fail-unmet] [--verify [--tries N]]`: scores
// proposers on a suite of episodes against each episode's [expect] (agent/eval.h), or, with
// --verify, checks that the suite itself holds: each start fails and each expected root cause
// passes its gate (agent/suite_check.h).
// Exit codes: 0 done (with --fail-unmet / --verify: every run met its expected outcome, every
// episode behaved as [expect] says), 1 otherwise or a run could not be recorded, 2 bad usage (a
// malformed episode, an unknown proposer, a folder without episodes).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "eval/eval.h"
#include "eval/suite_check.h"
#include "cli/agent.h"

namespace recur::cli {
namespace eval_cmd {

struct EvalFlags {
  agent::EvalOptions options;
  bool json = false, quiet = false, verbose = false, fail_unmet = false, verify = false;
  int tries = 3;
};

void progress_line(std::string_view line) { std::fprintf(stderr, "eval: %.*s\n", int(line.size()), line.data()); }

int verify_suite(const EvalFlags& f) {
  auto files = agent::find_episode_files(f.options.inputs);
  if (!files) return report_failure(files.error());
  std::vector<agent::Episode> episodes;
  for (const std::string& path : *files) {
    auto e = agent::load_episode(path);
    if (!e) {
      std::fprintf(stderr, "recur: %s\n", e.error().to_string().c_str());
      return kExitUsage;
    }
    episodes.push_back(std::move(*e));
  }
  agent::SuiteCheckOptions o{.tries = f.tries};
  if (!f.quiet) o.progress = progress_line;
  const auto checks = agent::check_suite(episodes, o);
  if (f.json) print_json(agent::suite_check_json(checks));
  else fmt::print("{}", agent::render_suite_check(checks));
  for (const auto& c : checks)
    if (!c.ok()) return kExitFailure;
  return kExitOk;
}

int run(const EvalFlags& f) {
  if (f.verify) return verify_suite(f);
  agent::EvalOptions o = f.options;
  if (!f.quiet) o.progress = progress_line;
  if (f.verbose) o.loop_progress = [](std::string_view line) { std::fprintf(stderr, "agent:   %.*s\n", int(line.size()), line.data()); };
  auto r = agent::run_eval(o);
  if (!r) {
    // A malformed episode is the user's to fix, like a bad flag.
    if (r.error().code() == ErrorCode::kParse || r.error().code() == ErrorCode::kNotFound) {
      std::fprintf(stderr, "recur: %s\n", r.error().to_string().c_str());
      return kExitUsage;
    }
    return report_failure(r.error());
  }
  if (f.json) print_json(agent::eval_json(*r));
  else fmt::print("{}", agent::render_eval_text(*r));
  for (const agent::EvalRun& run : r->runs) {
    if (run.error) return kExitFailure;
    if (f.fail_unmet && !run.outcome_met) return kExitFailure;
  }
  return kExitOk;
}

void register_eval(CLI::App& agent, Invocation& inv) {
  auto f = std::make_shared<EvalFlags>();
  f->options.proposers.clear();
  auto* cmd = agent.add_subcommand(
      "eval", "Score proposers on a suite of episodes: run each episode with each proposer N times into one journal, "
              "and compare each run with the episode's [expect] table (expected outcome, root cause, decoys). Prints "
              "a table per proposer and a summary (outcome rate, root-cause accuracy, median probe seconds to pass, "
              "wasted probe seconds, the ratio against the random proposer) and writes an HTML page linking every "
              "run's report. --verify instead checks the suite: each start fails its gate and each expected root "
              "cause passes it.");
  cmd->add_option("EPISODES", f->options.inputs, "episode files, or folders searched for *.toml outside gates/")
      ->required();
  cmd->add_option("--proposer", f->options.proposers,
                  "builtin, random[:SEED] (uniform single-knob changes under the same budget; repeat k uses SEED+k-1), "
                  "cmd:PROGRAM or openai:URL; repeat the flag to compare several (default: builtin)");
  cmd->add_option("--repeat", f->options.repeat, "runs of each proposer on each episode")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--budget-scale", f->options.budget_scale, "multiply every episode's budget_s by X")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1000.0));
  cmd->add_option("--journal", f->options.journal, "journal file for every run (created if missing)")->capture_default_str();
  cmd->add_option("--html", f->options.html, "the eval page (default: eval.html beside the journal)");
  agent::ProposerOptions& po = f->options.proposer_options;
  cmd->add_option("--proposer-max-calls", po.limits.max_calls, "openai: per run, stop after N requests")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--proposer-max-tokens", po.limits.max_tokens, "openai: per run, stop after N tokens")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--proposer-model", po.model, "openai: the model id (default: the endpoint's first /models entry)");
  cmd->add_option("--proposer-log", po.log_path, "openai: append each request and answer to FILE as a JSON line");
  cmd->add_flag("--fail-unmet", f->fail_unmet, "exit 1 unless every run met its episode's expected outcome");
  cmd->add_flag("--verify", f->verify,
                "check the suite instead of scoring: every start fails its gate (passes, for an episode whose answer "
                "is no change) and every [expect.verify] configuration passes");
  cmd->add_option("--tries", f->tries, "--verify: measurements of an inconclusive gate before giving up")
      ->capture_default_str()
      ->check(CLI::Range(1, 20));
  cmd->add_flag("--json", f->json, "print the result as JSON");
  cmd->add_flag("--quiet", f->quiet, "no progress lines on stderr");
  cmd->add_flag("--verbose", f->verbose, "also the agent loop's progress lines");
  cmd->callback([&inv, f] {
    if (f->options.proposers.empty()) f->options.proposers = {"builtin"};
    inv.run = [f] { return run(*f); };
  });
}

}  // namespace eval_cmd

RECUR_AGENT_VERB(eval, eval_cmd::register_eval);

}  // namespace recur::cli
