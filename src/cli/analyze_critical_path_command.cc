// `recur analyze critical-path TRACE`: the chain of zones and dependencies (flows, lock
// hand-offs, joins) that decided when the trace's last event ended (analyze/critical_path.h).
#include <memory>
#include <string>

#include "analyze/critical_path.h"
#include "analyze/load_trace.h"
#include "cli/analyze.h"
#include "cli/analyze_output.h"

namespace recur::cli {
namespace {

struct CriticalPathFlags {
  std::string trace, join, end, ignore = "cat=Trace";
  size_t top = 15, segments = 40;
  bool json = false;
  trace::ReadLimits limits;
};

int run_critical_path(const CriticalPathFlags& fl) {
  AnalysisClock clock;
  analyze::CriticalPathOptions o;
  if (!fl.join.empty()) {
    auto join = parse_selector_flag("--join", fl.join);
    if (!join) return report_failure(join.error());
    o.join = std::move(*join);
  }
  if (!fl.end.empty()) {
    auto end = parse_selector_flag("--end", fl.end);
    if (!end) return report_failure(end.error());
    o.end = std::move(*end);
  }
  if (fl.ignore == "none") {
    o.ignore.reset();
  } else {
    auto ignore = parse_selector_flag("--ignore", fl.ignore);
    if (!ignore) return report_failure(ignore.error());
    o.ignore = std::move(*ignore);
  }
  o.top = fl.top;
  o.max_segments = fl.segments;
  auto t = analyze::load_trace(fl.trace, fl.limits);
  if (!t) return report_failure(t.error());
  auto r = analyze::analyze_critical_path(*t->tree, o);
  if (!r) return report_failure(r.error());
  return print_analysis(fl.json, analyze::critical_path_feedback(*t->tree, o, *r, fl.trace), clock,
                        analyze::critical_path_details(*t->tree, *r), analyze::render_critical_path(*t->tree, o, *r), t->notes);
}

void register_critical_path(CLI::App& analyze, Invocation& inv) {
  auto fl = std::make_shared<CriticalPathFlags>();
  auto* cmd = analyze.add_subcommand(
      "critical-path",
      "The critical path to the trace's last event over every thread: program order, flows, lock release -> acquire "
      "and joins; which zones are on it and how much of its length each explains");
  add_trace_argument(cmd, fl->trace);
  cmd->add_option("--join", fl->join,
                  "selector of zones that wait for another thread to finish (default: "
                  "'name~[Jj]oin|[Ss]ynchronize|[Bb]arrier|(^|[._:/ -])[Ww]ait($|[._:/ -])')");
  cmd->add_option("--end", fl->end,
                  "selector of the zones the path may end at: it ends at the latest end of one, e.g. "
                  "'name~^ProfilerStep' (default: the trace's last event)");
  cmd->add_option("--ignore", fl->ignore,
                  "selector of zones to leave out of the graph, or none (default: Kineto's whole-recording span)")
      ->capture_default_str();
  cmd->add_option("--top", fl->top, "components to show")->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("--segments", fl->segments, "path segments to list (the longest, in time order)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  add_max_trace_bytes_option(cmd, fl->limits);
  add_json_flag(cmd, fl->json, "the path");
  cmd->callback([&inv, fl] { inv.run = [fl] { return run_critical_path(*fl); }; });
}

}  // namespace

RECUR_ANALYZE_VERB(critical_path, register_critical_path);

}  // namespace recur::cli
