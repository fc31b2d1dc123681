// Text, Feedback and JSON forms of a BreakdownResult.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyze/breakdown.h"
#include "analyze/report_util.h"
#include "analyze/text_table.h"
#include "analyze/trace_labels.h"

namespace recur::analyze {

using nlohmann::json;

std::string render_breakdown(const ZoneTree& tree, const BreakdownOptions& options, const BreakdownResult& r) {
  std::string out = fmt::format("breakdown by {} of '{}': {} zones, self time {}, trace span {}\n",
                                breakdown_by_name(options.by), options.select.text(), r.zones,
                                format_ns(r.self_total_ns), format_ns(r.span_ns));
  TextTable rows({std::string(breakdown_by_name(options.by)), ">count", ">total", ">self", ">share", ">mean", ">p50",
                  ">p99", ">max"});
  for (size_t k = 0; k < r.rows.size() && k < options.top; ++k) {
    const BreakdownRow& row = r.rows[k];
    rows.add_row({row.key, std::to_string(row.count), format_ns(row.total_ns), format_ns(row.self_ns),
                  percent(row.share), format_ns(row.mean_ns), format_ns(row.p50_ns), format_ns(row.p99_ns),
                  format_ns(row.max_ns)});
  }
  out += rows.render();
  if (r.rows.size() > options.top) out += fmt::format("  ... {} more (--top)\n", r.rows.size() - options.top);
  out += "threads (idle = trace span - busy; waiting = lock_wait zones):\n";
  TextTable threads({"thread", ">zones", ">busy", ">busy %", ">idle", ">waiting", ">first", ">last"});
  for (const ThreadTime& th : r.threads) {
    threads.add_row({th.label, std::to_string(th.zones), format_ns(th.busy_ns),
                     percent(r.span_ns > 0 ? double(th.busy_ns) / double(r.span_ns) : 0.0), format_ns(th.idle_ns),
                     format_ns(th.wait_ns), format_offset_ns(th.first_ns - tree.first_begin()),
                     format_offset_ns(th.last_ns - tree.first_begin())});
  }
  out += threads.render();
  return out;
}

Feedback breakdown_feedback(const BreakdownOptions& options, const BreakdownResult& r, std::string_view trace_name) {
  Feedback f = analysis_feedback("breakdown", fmt::format("trace {}: self time of '{}' by {}", trace_name,
                                                          options.select.text(), breakdown_by_name(options.by)));
  f.add_metric("span_us", ns_to_us(r.span_ns), "us");
  f.add_metric("zones", double(r.zones));
  f.add_metric("self_total_us", ns_to_us(r.self_total_ns), "us");
  int64_t wait = 0;
  for (const ThreadTime& th : r.threads) wait += th.wait_ns;
  f.add_metric("threads", double(r.threads.size()));
  f.add_metric("lock_wait_us", ns_to_us(wait), "us");
  if (r.self_total_ns > 0) {
    std::vector<Attribution> parts;
    for (const BreakdownRow& row : r.rows) {
      parts.push_back({row.key, row.share,
                       fmt::format("self {} in {} zones (total {}, p50 {}, p99 {})", format_ns(row.self_ns), row.count,
                                   format_ns(row.total_ns), format_ns(row.p50_ns), format_ns(row.p99_ns))});
    }
    set_decomposition(f, parts, options.top, fmt::format("{}s", breakdown_by_name(options.by)), 0.0,
                      "self times partition the selected zones' time");
  } else {
    f.notes.push_back(fmt::format("'{}' selected no zone with self time", options.select.text()));
  }
  if (r.keys_left_out > 0) {
    f.notes.push_back(fmt::format("{} rows past the top {} have no key in details: their paths' texts total more than {} "
                                  "MiB (nesting this deep); --top names more",
                                  r.keys_left_out, options.top, kPathTextBudget >> 20));
  }
  for (const ThreadTime& th : r.threads) {
    if (th.wait_ns > 0) f.notes.push_back(fmt::format("{} waited on locks for {}", th.label, format_ns(th.wait_ns)));
  }
  if (wait > 0) f.next.push_back("recur analyze locks TRACE (who held the locks)");
  return f;
}

json breakdown_details(const BreakdownOptions& options, const BreakdownResult& r) {
  json rows = json::array();
  for (const BreakdownRow& row : r.rows) {
    rows.push_back({{"key", row.key.empty() && r.keys_left_out > 0 ? json(nullptr) : json(row.key)},
                    {"count", row.count},
                    {"total_us", ns_to_us(row.total_ns)},
                    {"self_us", ns_to_us(row.self_ns)},
                    {"share", row.share},
                    {"mean_us", ns_to_us(row.mean_ns)},
                    {"p50_us", ns_to_us(row.p50_ns)},
                    {"p99_us", ns_to_us(row.p99_ns)},
                    {"max_us", ns_to_us(row.max_ns)}});
  }
  json threads = json::array();
  for (const ThreadTime& th : r.threads) {
    threads.push_back({{"thread", th.label},
                       {"zones", th.zones},
                       {"busy_us", ns_to_us(th.busy_ns)},
                       {"idle_us", ns_to_us(th.idle_ns)},
                       {"wait_us", ns_to_us(th.wait_ns)},
                       {"first_ts_us", ns_to_us(th.first_ns)},
                       {"last_end_us", ns_to_us(th.last_ns)}});
  }
  return {{"by", breakdown_by_name(options.by)}, {"select", options.select.text()},
          {"span_us", ns_to_us(r.span_ns)},      {"self_total_us", ns_to_us(r.self_total_ns)},
          {"zones", r.zones},                    {"rows", std::move(rows)},
          {"threads", std::move(threads)}};
}

}  // namespace recur::analyze
