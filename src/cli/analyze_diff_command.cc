// `recur analyze diff BASE CAND`: the end-to-end change between two traces, attributed to zone
// paths by self time, with an explicit unattributed rest (analyze/diff.h).
#include <memory>
#include <string>
#include <vector>

#include "analyze/diff.h"
#include "analyze/load_trace.h"
#include "cli/analyze.h"
#include "cli/analyze_output.h"

namespace recur::cli {
namespace {

struct DiffFlags {
  std::string base, cand, root;
  size_t top = 15;
  bool json = false;
  trace::ReadLimits limits;
};

int run_diff(const DiffFlags& fl) {
  AnalysisClock clock;
  analyze::DiffOptions o;
  if (!fl.root.empty()) {
    auto root = parse_selector_flag("--root", fl.root);
    if (!root) return report_failure(root.error());
    o.root = std::move(*root);
  }
  o.top = fl.top;
  // One trace in memory at a time: each is summarized, then freed before the next loads.
  analyze::DiffBuilder builder(o);
  std::vector<std::string> notes[2];
  for (int side = 0; side < 2; ++side) {
    auto t = analyze::load_trace(side == 0 ? fl.base : fl.cand, fl.limits);
    if (!t) return report_failure(t.error());
    if (auto st = builder.add(*t->tree); !st) return report_failure(st.error());
    notes[side] = std::move(t->notes);
  }
  analyze::DiffResult r = builder.finish();
  return print_analysis(fl.json, analyze::diff_feedback(o, r, fl.base, fl.cand), clock, analyze::diff_details(o, r),
                        analyze::render_diff(o, r), joined_notes(notes[0], notes[1]));
}

void register_diff(CLI::App& analyze, Invocation& inv) {
  auto fl = std::make_shared<DiffFlags>();
  auto* cmd = analyze.add_subcommand(
      "diff",
      "Attribute the end-to-end change from BASE to CAND (trace span, or the root zones' total) to zone paths by self "
      "time, k-th occurrence matched to k-th; shares sum to the whole with an explicit unattributed rest");
  add_trace_argument(cmd, fl->base, "BASE", "the baseline trace (file or folder of rank traces)");
  add_trace_argument(cmd, fl->cand, "CAND", "the candidate trace");
  cmd->add_option("--root", fl->root, "selector of the root zones whose total duration is the end-to-end time, "
                                      "e.g. 'name=step' (default: the trace span)");
  cmd->add_option("--top", fl->top, "components to show")->check(CLI::Range(1, 100000))->capture_default_str();
  add_max_trace_bytes_option(cmd, fl->limits);
  add_json_flag(cmd, fl->json, "every path");
  cmd->callback([&inv, fl] { inv.run = [fl] { return run_diff(*fl); }; });
}

}  // namespace

RECUR_ANALYZE_VERB(diff, register_diff);

}  // namespace recur::cli
