// `recur gate SPEC.toml [--json] [--set k=v ...] [--check]`: evaluate an acceptance gate
// (docs/agent.md). Exit codes: 0 pass, 1 fail or an error while running, 2 bad usage or a bad
// spec (nothing ran), 3 inconclusive (the CIs straddle a bound: rerun with more runs).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/cli.h"
#include "core/feedback.h"
#include "gate/gate.h"
#include "probe/probe_cli.h"

namespace recur::cli {
namespace {

constexpr int kExitInconclusive = 3;

struct GateFlags {
  std::string spec;
  std::vector<std::string> set;
  bool json = false;
  bool check_only = false;
  bool quiet = false;
};

int run_gate_command(const GateFlags& f) {
  auto spec = gate::load_gate_spec(f.spec);
  if (!spec) {
    std::fprintf(stderr, "recur: %s\n", spec.error().to_string().c_str());
    return spec.error().code() == ErrorCode::kIo ? kExitFailure : kExitUsage;
  }
  gate::GateRunOptions o;
  o.base = global_config();
  for (const std::string& a : f.set) {
    if (auto s = o.base.set_assignment(a); !s) {
      std::fprintf(stderr, "recur: --set %s: %s\n", a.c_str(), s.error().message().c_str());
      return kExitUsage;
    }
  }
  for (const gate::Arm& arm : spec->arms) {
    if (auto c = gate::arm_config(*spec, arm, o.base); !c) {
      std::fprintf(stderr, "recur: %s\n", c.error().to_string().c_str());
      return kExitUsage;
    }
  }
  if (f.check_only) {
    std::vector<std::string> keys;
    for (const gate::MetricRequest& r : spec->requests) keys.push_back(r.key());
    if (f.json) {
      print_json({{"spec", f.spec}, {"name", spec->name}, {"conditions", spec->conditions.size()},
                  {"metrics", keys}});
    } else {
      fmt::print("{}: gate {} is valid: {} condition(s), {} arm(s), metrics {}\n", f.spec, spec->name,
                 spec->conditions.size(), spec->arms.size(), fmt::join(keys, ", "));
    }
    return kExitOk;
  }
  if (!f.quiet) o.progress = [](std::string_view line) { fmt::print(stderr, "{}\n", line); };
  auto result = gate::run_gate(*spec, o);
  if (!result) return report_failure(result.error());
  probe::print_feedback(result->feedback, f.json);
  switch (result->verdict.outcome) {
    case gate::Outcome::kPass: return kExitOk;
    case gate::Outcome::kFail: return kExitFailure;
    case gate::Outcome::kInconclusive: return kExitInconclusive;
  }
  return kExitFailure;
}

void register_gate(CLI::App& app, Invocation& inv) {
  auto f = std::make_shared<GateFlags>();
  auto* cmd = app.add_subcommand(
      "gate",
      "Evaluate an acceptance gate: a TOML spec of a workload, arms (knob configurations) and conditions such as "
      "'prefill_tok_s(candidate) >= 0.95 * prefill_tok_s(baseline)'. The spec is checked completely before anything "
      "runs; probes run cheapest first; verdicts use the CIs (pass at the pessimistic ends, fail at the optimistic "
      "ends). Exit 0 pass, 1 fail or a run error, 2 bad usage or spec, 3 inconclusive. Progress goes to stderr.");
  cmd->add_option("SPEC", f->spec, "gate spec (.toml; docs/agent.md describes the format)")->required();
  cmd->add_option("--set", f->set, "knob for every arm, name=value (repeatable); an arm's own assignment wins")
      ->type_name("NAME=VALUE");
  cmd->add_flag("--json", f->json, "Print the gate's Feedback record as JSON");
  cmd->add_flag("--check", f->check_only, "Only validate the spec (metrics, arms, knobs, kernels) and list its metrics");
  cmd->add_flag("-q,--quiet", f->quiet, "No progress lines on stderr");
  cmd->callback([&inv, f] { inv.run = [f] { return run_gate_command(*f); }; });
}

}  // namespace

RECUR_CLI_COMMAND(gate, register_gate);

}  // namespace recur::cli
