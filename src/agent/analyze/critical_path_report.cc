// Text, Feedback and JSON forms of a CriticalPathResult.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyze/critical_path.h"
#include "analyze/report_util.h"
#include "analyze/text_table.h"
#include "analyze/trace_labels.h"

namespace recur::analyze {
namespace {

using nlohmann::json;

std::string segment_what(const ZoneTree& tree, const CriticalPathResult& r, const PathSegment& s) {
  const trace::EventTable& t = tree.table();
  switch (s.kind) {
    case SegmentKind::kWork:
    case SegmentKind::kWait: return std::string(tree.zone_path(s.zone));
    case SegmentKind::kIdle: return "(no zone)";
    default: return fmt::format("{} {} -> {}", r.via(s), thread_label(t, s.from_track), thread_label(t, s.track));
  }
}

double share_of(int64_t ns, int64_t len) { return len > 0 ? double(ns) / double(len) : 0.0; }

// Indices of every segment, or of the n longest, in time order.
std::vector<size_t> longest_in_time_order(const std::vector<PathSegment>& segments, size_t n) {
  std::vector<size_t> idx(segments.size());
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
  if (idx.size() <= n) return idx;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return segments[a].dur() > segments[b].dur(); });
  idx.resize(n);
  std::sort(idx.begin(), idx.end());
  return idx;
}

}  // namespace

std::string render_critical_path(const ZoneTree& tree, const CriticalPathOptions& options, const CriticalPathResult& r) {
  const trace::EventTable& t = tree.table();
  if (r.segments.empty()) return "critical path: the trace has no zones\n";
  int64_t len = r.length_ns();
  std::string out = fmt::format(
      "critical path: {} from +{} to +{} (the last event ends on {}), {} segments on {} threads\n", format_ns(len),
      format_ns(r.begin - tree.first_begin()), format_ns(r.end - tree.first_begin()), thread_label(t, r.end_track),
      r.segments.size(), r.threads.size());
  out += fmt::format("  work {} ({}), waiting {} ({}), idle {} ({}), dependency latency {} ({})\n", format_ns(r.work_ns),
                     percent(share_of(r.work_ns, len)), format_ns(r.wait_ns), percent(share_of(r.wait_ns, len)),
                     format_ns(r.idle_ns), percent(share_of(r.idle_ns, len)), format_ns(r.latency_ns),
                     percent(share_of(r.latency_ns, len)));
  out += fmt::format("  dependencies in the graph: {} flow, {} lock, {} join; on the path: {} flow, {} lock, {} join\n",
                     r.flow_edges, r.lock_edges, r.join_edges, r.flow_used, r.lock_used, r.join_used);
  TextTable comps({"on the path", ">time", ">share", ">segments"});
  for (size_t k = 0; k < r.components.size() && k < options.top; ++k) {
    const PathComponent& c = r.components[k];
    comps.add_row({c.component, format_ns(c.ns), percent(c.share), std::to_string(c.segments)});
  }
  out += comps.render();
  if (r.components.size() > options.top) out += fmt::format("  ... {} more (--top)\n", r.components.size() - options.top);
  TextTable threads({"thread", ">time on path", ">share"});
  for (auto [tr, ns] : r.threads) threads.add_row({thread_label(t, tr), format_ns(ns), percent(share_of(ns, len))});
  out += threads.render();
  // The path in time order: all segments, or the longest max_segments of them.
  std::vector<size_t> shown = longest_in_time_order(r.segments, options.max_segments);
  if (shown.size() < r.segments.size()) {
    out += fmt::format("path ({} longest of {} segments, in time order):\n", shown.size(), r.segments.size());
  } else {
    out += "path:\n";
  }
  TextTable path({">at", ">time", "kind", "thread", "zone / dependency"});
  for (size_t k : shown) {
    const PathSegment& s = r.segments[k];
    path.add_row({format_offset_ns(s.begin - tree.first_begin()), format_ns(s.dur()), std::string(segment_kind_name(s.kind)),
                  is_dependency(s.kind) ? "" : thread_label(t, s.track), segment_what(tree, r, s)});
  }
  out += path.render();
  return out;
}

Feedback critical_path_feedback(const ZoneTree& tree, const CriticalPathOptions& options, const CriticalPathResult& r,
                                std::string_view trace_name) {
  Feedback f = analysis_feedback("critical-path", fmt::format("trace {}: critical path to the last event", trace_name));
  int64_t len = r.length_ns();
  f.add_metric("path_us", ns_to_us(len), "us");
  f.add_metric("span_us", ns_to_us(tree.span_ns()), "us");
  f.add_metric("work_us", ns_to_us(r.work_ns), "us");
  f.add_metric("wait_us", ns_to_us(r.wait_ns), "us");
  f.add_metric("idle_us", ns_to_us(r.idle_ns), "us");
  f.add_metric("dependency_latency_us", ns_to_us(r.latency_ns), "us");
  f.add_metric("threads_on_path", double(r.threads.size()));
  f.add_metric("dependencies_on_path", double(r.flow_used + r.lock_used + r.join_used));
  if (len > 0) {
    std::vector<Attribution> parts;
    for (const PathComponent& c : r.components) {
      if (c.component == "(idle)") continue;  // reported as `unattributed`
      parts.push_back({c.component, c.share, fmt::format("{} on the critical path in {} segments", format_ns(c.ns), c.segments)});
    }
    set_decomposition(f, parts, options.top, "components", share_of(r.idle_ns, len),
                      "idle: threads on the path outside every zone, with no known dependency");
  } else {
    f.notes.push_back("the path has no length (no zones, or only zero-length ones)");
  }
  f.notes.push_back(fmt::format("dependencies on the path: {} flow, {} lock, {} join (graph: {} flow, {} lock, {} join)",
                                r.flow_used, r.lock_used, r.join_used, r.flow_edges, r.lock_edges, r.join_edges));
  if (r.wait_ns > 0)
    f.notes.push_back(fmt::format("{} of the path is waiting whose cause is not in the trace (no flow, lock or join found)",
                                  format_ns(r.wait_ns)));
  if (r.components_unnamed > 0)
    f.notes.push_back(fmt::format("{} components past the top {} have no name in details: their paths' texts total "
                                  "more than {} MiB (nesting this deep)",
                                  r.components_unnamed, options.top, kPathTextBudget >> 20));
  if (!r.components.empty() && !r.components.front().component.empty() && r.components.front().component.front() != '(')
    f.next.push_back(fmt::format("recur analyze breakdown {} --by path --select 'path={}'", trace_name,
                                 r.components.front().component));
  return f;
}

json critical_path_details(const ZoneTree& tree, const CriticalPathResult& r) {
  const trace::EventTable& t = tree.table();
  json components = json::array();
  for (const PathComponent& c : r.components)
    components.push_back({{"component", c.component.empty() ? json(nullptr) : json(c.component)}, {"us", ns_to_us(c.ns)}, {"share", c.share}, {"segments", c.segments}});
  json threads = json::array();
  for (auto [tr, ns] : r.threads) threads.push_back({{"thread", thread_label(t, tr)}, {"us", ns_to_us(ns)}});
  // Every segment, or for long paths the longest kMaxListed of them (in time order).
  std::vector<size_t> listed = longest_in_time_order(r.segments, 2000);
  json segments = json::array();
  for (size_t k : listed) {
    const PathSegment& s = r.segments[k];
    json j = {{"kind", segment_kind_name(s.kind)},
              {"thread", thread_label(t, s.track)},
              {"ts_us", ns_to_us(s.begin)},
              {"offset_us", ns_to_us(s.begin - tree.first_begin())},
              {"dur_us", ns_to_us(s.dur())}};
    if (s.zone != kNoZone) j["zone"] = zone_json(tree, s.zone);
    if (is_dependency(s.kind)) {
      j["from_thread"] = thread_label(t, s.from_track);
      j["via"] = r.via(s);
    }
    segments.push_back(std::move(j));
  }
  return {{"begin_ts_us", ns_to_us(r.begin)},
          {"end_ts_us", ns_to_us(r.end)},
          {"path_us", ns_to_us(r.length_ns())},
          {"end_thread", r.segments.empty() ? json(nullptr) : json(thread_label(t, r.end_track))},
          {"work_us", ns_to_us(r.work_ns)},
          {"wait_us", ns_to_us(r.wait_ns)},
          {"idle_us", ns_to_us(r.idle_ns)},
          {"dependency_latency_us", ns_to_us(r.latency_ns)},
          {"edges", {{"flow", r.flow_edges}, {"lock", r.lock_edges}, {"join", r.join_edges}}},
          {"edges_on_path", {{"flow", r.flow_used}, {"lock", r.lock_used}, {"join", r.join_used}}},
          {"components", std::move(components)},
          {"threads", std::move(threads)},
          {"segment_count", r.segments.size()},
          {"segments", std::move(segments)}};
}

}  // namespace recur::analyze
