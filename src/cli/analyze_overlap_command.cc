// `recur analyze overlap TRACE A B`: how much of A's busy time B overlaps, and the A zones B
// never overlapped (analyze/overlap.h).
#include <memory>
#include <string>

#include "analyze/load_trace.h"
#include "analyze/overlap.h"
#include "cli/analyze.h"
#include "cli/analyze_output.h"

namespace recur::cli {
namespace {

struct OverlapFlags {
  std::string trace, a, b, by = "all";
  size_t top = 10;
  bool json = false;
  trace::ReadLimits limits;
};

int run_overlap(const OverlapFlags& fl) {
  AnalysisClock clock;
  analyze::OverlapOptions o;
  auto a = parse_selector_flag("A", fl.a);
  if (!a) return report_failure(a.error());
  auto b = parse_selector_flag("B", fl.b);
  if (!b) return report_failure(b.error());
  auto by = analyze::parse_group_by(fl.by);
  if (!by) return report_failure(by.error());
  o.a = std::move(*a);
  o.b = std::move(*b);
  o.by = *by;
  o.max_listed = fl.top;
  auto t = analyze::load_trace(fl.trace, fl.limits);
  if (!t) return report_failure(t.error());
  analyze::OverlapResult r = analyze::analyze_overlap(*t->tree, o);
  return print_analysis(fl.json, analyze::overlap_feedback(*t->tree, o, r, fl.trace), clock,
                        analyze::overlap_details(*t->tree, o, r), analyze::render_overlap(*t->tree, o, r), t->notes);
}

void register_overlap(CLI::App& analyze, Invocation& inv) {
  auto fl = std::make_shared<OverlapFlags>();
  auto* cmd = analyze.add_subcommand(
      "overlap",
      "How much of A's busy time B overlaps (share of A's union time and absolute), and the A zones B never "
      "overlapped with the B zones just before and after. A and B are selectors, e.g. 'name~^nccl' 'cat=kernel,name!~^nccl' "
      "(docs/analyses.md)");
  add_trace_argument(cmd, fl->trace);
  cmd->add_option("A", fl->a, "selector of the zones whose busy time is measured")->required();
  cmd->add_option("B", fl->b, "selector of the zones that should overlap them")->required();
  cmd->add_option("--by", fl->by, "compare within groups: all, track (thread), process, stream, rank")
      ->capture_default_str();
  cmd->add_option("--top", fl->top, "never-overlapped A zones to list")->check(CLI::Range(0, 100000))->capture_default_str();
  add_max_trace_bytes_option(cmd, fl->limits);
  add_json_flag(cmd, fl->json, "every figure");
  cmd->callback([&inv, fl] { inv.run = [fl] { return run_overlap(*fl); }; });
}

}  // namespace

RECUR_ANALYZE_VERB(overlap, register_overlap);

}  // namespace recur::cli
