// `recur agent report RUN [--journal PATH] [--out FILE] [--json]`: writes the run's
// self-contained HTML report (agent/report.h) and prints its path, or with --json the path and
// what the page counts. Read-only on the journal; safe while the agent writes.
// Exit codes: 0 written, 1 the journal cannot be read (missing, corrupt, no such run) or the
// file cannot be written, 2 bad usage.
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "journal/journal.h"
#include "report/report.h"
#include "cli/agent.h"

namespace recur::cli {
namespace {

struct ReportFlags {
  std::string run;
  std::string journal = "runs/journal.db";
  std::string out;
  bool json = false;
};

int run_agent_report(const ReportFlags& f) {
  auto j = agent::Journal::open(f.journal, {.create = false});
  if (!j) return report_failure(j.error());
  auto r = agent::write_run_report(**j, f.run, {.out = f.out});
  if (!r) return report_failure(r.error());
  if (!f.json) {
    fmt::print("{}\n", r->path);
    return kExitOk;
  }
  const agent::ReportCounts& c = r->counts;
  print_json({{"report", r->path},
              {"bytes", r->bytes},
              {"journal", f.journal},
              {"run", {{"id", r->run.id}, {"name", r->run.name}, {"state", r->run.state}, {"outcome", r->run.outcome}}},
              {"experiments", c.experiments},
              {"done", c.done},
              {"decisions", {{"keep", c.keep}, {"revert", c.revert}, {"none", c.none}}},
              {"gate_evaluations", c.gate_evaluations},
              {"gate_metrics", c.gate_metrics},
              {"artifacts", c.artifacts},
              {"probe_cost_s", c.probe_cost_s}});
  return kExitOk;
}

void register_report(CLI::App& agent, Invocation& inv) {
  auto f = std::make_shared<ReportFlags>();
  auto* cmd = agent.add_subcommand(
      "report", "Write a run's report: one self-contained HTML page (works offline, no scripts) with the "
                "experiment timeline, gate metrics with CIs, every decision with its Feedback, the final config "
                "diff and links to the traces. Prints the page's path.");
  cmd->add_option("RUN", f->run, "run name or id")->required();
  cmd->add_option("--journal", f->journal, "journal file")->capture_default_str();
  cmd->add_option("--out", f->out, "HTML file to write (default: <journal folder>/<run name>/report.html)");
  cmd->add_flag("--json", f->json, "Print JSON: the page's path and its counts");
  cmd->callback([&inv, f] { inv.run = [f] { return run_agent_report(*f); }; });
}

}  // namespace

RECUR_AGENT_VERB(report, register_report);

}  // namespace recur::cli
