// `recur analyze breakdown TRACE`: count, total, self time, mean, p50/p99 and share per name,
// zone path, category or thread, and busy/idle/waiting time per thread (analyze/breakdown.h).
#include <memory>
#include <string>

#include "analyze/breakdown.h"
#include "analyze/load_trace.h"
#include "cli/analyze.h"
#include "cli/analyze_output.h"

namespace recur::cli {
namespace {

struct BreakdownFlags {
  std::string trace, select = "*", by = "name";
  size_t top = 20;
  bool json = false;
  trace::ReadLimits limits;
};

int run_breakdown(const BreakdownFlags& fl) {
  AnalysisClock clock;
  analyze::BreakdownOptions o;
  auto sel = parse_selector_flag("--select", fl.select);
  if (!sel) return report_failure(sel.error());
  auto by = analyze::parse_breakdown_by(fl.by);
  if (!by) return report_failure(by.error());
  o.select = std::move(*sel);
  o.by = *by;
  o.top = fl.top;
  auto t = analyze::load_trace(fl.trace, fl.limits);
  if (!t) return report_failure(t.error());
  analyze::BreakdownResult r = analyze::analyze_breakdown(*t->tree, o);
  return print_analysis(fl.json, analyze::breakdown_feedback(o, r, fl.trace), clock, analyze::breakdown_details(o, r),
                        analyze::render_breakdown(*t->tree, o, r), t->notes);
}

void register_breakdown(CLI::App& analyze, Invocation& inv) {
  auto fl = std::make_shared<BreakdownFlags>();
  auto* cmd = analyze.add_subcommand(
      "breakdown",
      "Where the time goes: per name, zone path, category or thread: count, total, self time (minus children), mean, "
      "p50/p99, share; per thread: busy, idle and lock-waiting time");
  add_trace_argument(cmd, fl->trace);
  cmd->add_option("--by", fl->by, "rows per: name, path, cat, thread")->capture_default_str();
  cmd->add_option("--select", fl->select, "selector of the zones to count, e.g. 'thread=prefill' (default: all)")
      ->capture_default_str();
  cmd->add_option("--top", fl->top, "rows to show")->check(CLI::Range(1, 100000))->capture_default_str();
  add_max_trace_bytes_option(cmd, fl->limits);
  add_json_flag(cmd, fl->json, "every row");
  cmd->callback([&inv, fl] { inv.run = [fl] { return run_breakdown(*fl); }; });
}

}  // namespace

RECUR_ANALYZE_VERB(breakdown, register_breakdown);

}  // namespace recur::cli
