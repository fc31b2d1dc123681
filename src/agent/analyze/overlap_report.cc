// Text, Feedback and JSON forms of an OverlapResult.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyze/overlap.h"
#include "analyze/report_util.h"
#include "analyze/text_table.h"
#include "analyze/trace_labels.h"

namespace recur::analyze {
namespace {

using nlohmann::json;

// "nccl:all_reduce ended 1.200 us before" / "none before".
std::string neighbour_text(const ZoneTree& tree, uint32_t b, int64_t gap_ns, const char* where) {
  if (b == kNoZone) return fmt::format("no B {}", where);
  return fmt::format("{} {} {}", fit(tree.table().name(tree.zone(b).event), 80), format_ns(gap_ns), where);
}

std::string never_text(const ZoneTree& tree, const NeverOverlapped& n) {
  const Zone& a = tree.zone(n.zone);
  std::string before = neighbour_text(tree, n.prev_b, n.prev_b == kNoZone ? 0 : a.begin - tree.zone(n.prev_b).end, "before");
  std::string after = neighbour_text(tree, n.next_b, n.next_b == kNoZone ? 0 : tree.zone(n.next_b).begin - a.end, "after");
  return fmt::format("{}; B: {}, {}", zone_text(tree, n.zone), before, after);
}

json group_json(const OverlapGroup& g) {
  return {{"group", g.label},        {"a_busy_us", ns_to_us(g.a_busy_ns)}, {"b_busy_us", ns_to_us(g.b_busy_ns)},
          {"overlap_us", ns_to_us(g.overlap_ns)}, {"overlap_share", g.share()}, {"a_zones", g.a_zones},
          {"full_zones", g.full_zones}, {"partial_zones", g.partial_zones}, {"never_zones", g.never_zones},
          {"never_us", ns_to_us(g.never_ns)}};
}

}  // namespace

std::string render_overlap(const ZoneTree& tree, const OverlapOptions& options, const OverlapResult& r) {
  std::string out = fmt::format("overlap of A '{}' ({} zones) by B '{}' ({} zones), by {}\n", options.a.text(),
                                r.a_selected, options.b.text(), r.b_selected, group_by_name(options.by));
  TextTable table({"group", ">A busy", ">B busy", ">overlap", ">share", ">A zones", ">full", ">partly", ">never"});
  auto row = [&](const OverlapGroup& g) {
    table.add_row({g.label, format_ns(g.a_busy_ns), format_ns(g.b_busy_ns), format_ns(g.overlap_ns), percent(g.share()),
                   std::to_string(g.a_zones), std::to_string(g.full_zones), std::to_string(g.partial_zones),
                   std::to_string(g.never_zones)});
  };
  for (const OverlapGroup& g : r.groups) row(g);
  if (r.groups.size() > 1) row(r.total);
  out += table.render();
  if (r.total.never_zones > 0) {
    out += fmt::format("A zones B never overlapped: {} ({} of A's busy time); longest {}:\n", r.total.never_zones,
                       format_ns(r.total.never_ns), r.never.size());
    for (const NeverOverlapped& n : r.never) out += "  " + never_text(tree, n) + "\n";
  }
  return out;
}

Feedback overlap_feedback(const ZoneTree& tree, const OverlapOptions& options, const OverlapResult& r,
                          std::string_view trace_name) {
  Feedback f = analysis_feedback("overlap", fmt::format("trace {}: A '{}' overlapped by B '{}', by {}", trace_name,
                                                        options.a.text(), options.b.text(), group_by_name(options.by)));
  const OverlapGroup& t = r.total;
  f.add_metric("a_busy_us", ns_to_us(t.a_busy_ns), "us");
  f.add_metric("b_busy_us", ns_to_us(t.b_busy_ns), "us");
  f.add_metric("overlap_us", ns_to_us(t.overlap_ns), "us");
  f.add_metric("overlap_share", t.share());
  f.add_metric("never_overlapped_zones", double(t.never_zones));
  f.add_metric("never_overlapped_us", ns_to_us(t.never_ns), "us");
  if (t.a_busy_ns > 0) {
    double a = double(t.a_busy_ns);
    int64_t alone = t.a_busy_ns - t.overlap_ns;
    f.attribution_is_decomposition = true;
    f.attribution.push_back({"overlapped by B", double(t.overlap_ns) / a, "|union(A) ∩ union(B)| / |union(A)|"});
    f.attribution.push_back({"A alone: never-overlapped zones", double(t.never_ns) / a,
                             fmt::format("{} A zones B never touched", t.never_zones)});
    f.attribution.push_back({"A alone: partly overlapped zones", double(alone - t.never_ns) / a,
                             fmt::format("uncovered parts of {} partly overlapped A zones", t.partial_zones)});
    f.attribution.push_back({std::string(kUnattributed), 0.0, "the three parts above cover A's busy time"});
  } else {
    f.notes.push_back(fmt::format("A '{}' selected no zone of non-zero length", options.a.text()));
  }
  if (r.b_selected == 0) f.notes.push_back(fmt::format("B '{}' selected no zone", options.b.text()));
  for (size_t k = 0; k < r.never.size() && k < 3; ++k) f.notes.push_back("never overlapped: " + never_text(tree, r.never[k]));
  if (t.never_zones > 0)
    f.next.push_back(fmt::format("recur analyze critical-path {} (is the never-overlapped time on the critical path?)", trace_name));
  return f;
}

json overlap_details(const ZoneTree& tree, const OverlapOptions& options, const OverlapResult& r) {
  json groups = json::array();
  for (const OverlapGroup& g : r.groups) groups.push_back(group_json(g));
  json never = json::array();
  for (const NeverOverlapped& n : r.never) {
    const Zone& a = tree.zone(n.zone);
    json j = {{"zone", zone_json(tree, n.zone)},
              {"group", group_label(tree.table(), options.by, n.group)},
              {"b_before", zone_json(tree, n.prev_b)},
              {"b_after", zone_json(tree, n.next_b)}};
    if (n.prev_b != kNoZone) j["gap_before_us"] = ns_to_us(a.begin - tree.zone(n.prev_b).end);
    if (n.next_b != kNoZone) j["gap_after_us"] = ns_to_us(tree.zone(n.next_b).begin - a.end);
    never.push_back(std::move(j));
  }
  return {{"a", options.a.text()},          {"b", options.b.text()},        {"by", group_by_name(options.by)},
          {"a_selected", r.a_selected},     {"b_selected", r.b_selected},   {"total", group_json(r.total)},
          {"groups", std::move(groups)},    {"never_overlapped", std::move(never)}};
}

}  // namespace recur::analyze
