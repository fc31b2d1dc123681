// `recur analyze hta PATH [--json] [--jobs N]`: HTA-compatible figures for PyTorch profiler
// (Kineto) traces, one file or a folder with one trace per rank (analyze/hta.h). Prints HTA's
// tables, or with --json the Feedback record with every table under "details"
// (docs/analyses.md, "## hta").
#include <memory>
#include <string>

#include "analyze/hta.h"
#include "analyze/hta_report.h"
#include "cli/analyze.h"
#include "cli/analyze_output.h"

namespace recur::cli {
namespace {

struct HtaFlags {
  std::string path;
  bool json = false;
  unsigned jobs = 1;
  trace::ReadLimits limits;
};

int run_hta(const HtaFlags& f) {
  AnalysisClock clock;
  analyze::HtaOptions options;
  options.jobs = f.jobs;
  options.limits = f.limits;
  options.reserve_heap = true;  // a short process: huge pages for the reader's buffers
  auto report = analyze::analyze_hta(f.path, options);
  if (!report) return report_failure(report.error());
  return print_analysis(f.json, analyze::hta_feedback(*report), clock, analyze::hta_report_json(*report),
                        analyze::hta_report_text(*report), {});
}

void register_hta(CLI::App& analyze, Invocation& inv) {
  auto f = std::make_shared<HtaFlags>();
  auto* cmd = analyze.add_subcommand(
      "hta",
      "HTA-compatible figures for PyTorch profiler (Kineto) traces: comm/compute overlap, temporal breakdown "
      "(idle, compute, non-compute), kernel-type mix, idle time per stream (host/kernel wait), launch "
      "statistics and queue length, with Holistic Trace Analysis' semantics. Exit 0 on success, 1 when a "
      "trace cannot be read, 2 on bad usage.");
  cmd->add_option("PATH", f->path,
                  "a trace (.json, .json.gz) or a folder of them, one per rank (rank from distributedInfo.rank; "
                  "absent: rank 0)")
      ->required();
  add_max_trace_bytes_option(cmd, f->limits);
  cmd->add_flag("--json", f->json, "Print the Feedback record (JSON) with every table under \"details\"");
  cmd->add_option("-j,--jobs", f->jobs, "ranks read at once (memory grows with each)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->callback([&inv, f] { inv.run = [f] { return run_hta(*f); }; });
}

}  // namespace

RECUR_ANALYZE_VERB(hta, register_hta);

}  // namespace recur::cli
