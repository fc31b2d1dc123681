// `recur analyze locks TRACE`: per mutex, who waited, how long, while which thread held it and
// inside which zones (analyze/locks.h).
#include <memory>
#include <string>

#include "analyze/load_trace.h"
#include "analyze/locks.h"
#include "cli/analyze.h"
#include "cli/analyze_output.h"

namespace recur::cli {
namespace {

struct LocksFlags {
  std::string trace, select = "*";
  size_t top = 10;
  bool json = false;
  trace::ReadLimits limits;
};

int run_locks(const LocksFlags& fl) {
  AnalysisClock clock;
  analyze::LocksOptions o;
  auto sel = parse_selector_flag("--select", fl.select);
  if (!sel) return report_failure(sel.error());
  o.select = std::move(*sel);
  o.top = fl.top;
  auto t = analyze::load_trace(fl.trace, fl.limits);
  if (!t) return report_failure(t.error());
  analyze::LocksResult r = analyze::analyze_locks(*t->tree, o);
  return print_analysis(fl.json, analyze::locks_feedback(o, r, fl.trace), clock, analyze::locks_details(*t->tree, r),
                        analyze::render_locks(o, r), t->notes);
}

void register_locks(CLI::App& analyze, Invocation& inv) {
  auto fl = std::make_shared<LocksFlags>();
  auto* cmd = analyze.add_subcommand(
      "locks",
      "Lock contention from TracedMutex events: per mutex, who waited (total, max, count), while which thread held it, "
      "the holder's zone at the time and the zone the waiter waited in");
  add_trace_argument(cmd, fl->trace);
  cmd->add_option("--select", fl->select, "selector of the lock_wait zones to count, e.g. 'arg:mutex=kv_pool' (default: all)")
      ->capture_default_str();
  cmd->add_option("--top", fl->top, "waiter/holder rows per mutex")->check(CLI::Range(1, 100000))->capture_default_str();
  add_max_trace_bytes_option(cmd, fl->limits);
  add_json_flag(cmd, fl->json, "every wait");
  cmd->callback([&inv, fl] { inv.run = [fl] { return run_locks(*fl); }; });
}

}  // namespace

RECUR_ANALYZE_VERB(locks, register_locks);

}  // namespace recur::cli
