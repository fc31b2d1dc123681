#include "analyze/hta_report.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyze/hta_stats.h"
#include "analyze/report_util.h"
#include "analyze/text_table.h"

namespace recur::analyze {
namespace {

using nlohmann::json;

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
double us(int64_t ns) { return ns_to_us(ns); }

// µs as HTA prints them: at least one decimal ("8780.0"), at most three.
std::string us_text(int64_t ns) {
  std::string s = fmt::format("{:.3f}", us(ns));
  while (s.ends_with('0') && s[s.size() - 2] != '.') s.pop_back();
  return s;
}
std::string fixed(double v, int decimals) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, decimals) : std::string("NaN");
}

std::vector<HtaKernelTypeRow> rank_kernel_types(const HtaRankReport& r) { return hta_kernel_type_table({r}); }

json kernel_types_json(const std::vector<HtaKernelTypeRow>& rows) {
  json out = json::array();
  for (const HtaKernelTypeRow& k : rows) {
    out.push_back({{"kernel_type", k.kernel_type}, {"sum_us", k.sum_us}, {"percentage", num(k.percentage)}});
  }
  return out;
}

json rank_json(const HtaRankReport& r) {
  const HtaRankFigures& f = r.figures;
  const HtaGpuTime& g = f.gpu;
  json idle = json::array();
  for (const HtaIdleRow& row : f.idle) {
    idle.push_back({{"stream", row.stream},
                    {"idle_category", hta_idle_category_name(row.category)},
                    {"idle_time_us", us(row.idle_ns)},
                    {"idle_time_ratio", num(numpy_round(row.ratio, 2))}});
  }
  json queue = json::array();
  for (const HtaQueueRow& q : f.queue) {
    const Describe& d = q.length;
    queue.push_back({{"stream", q.stream}, {"count", d.count}, {"mean", num(d.mean)}, {"std", num(d.std)},
                     {"min", num(d.min)}, {"p25", num(d.p25)}, {"p50", num(d.p50)}, {"p75", num(d.p75)},
                     {"max", num(d.max)}});
  }
  const HtaLaunchStats& l = f.launch;
  bool has_gpu = g.kernels > 0;
  return {{"rank", r.rank},
          {"file", r.file},
          {"rank_from", r.rank_assumed ? "assumed" : "distributedInfo"},
          {"timestamps_rounded", r.rounded},
          {"events", f.events},
          {"gpu_kernels", g.kernels},
          {"comm_comp_overlap_pct", num(r.comm_comp_overlap_pct())},
          {"temporal",
           {{"idle_us", has_gpu ? json(us(g.idle_ns())) : json(nullptr)},
            {"compute_us", has_gpu ? json(us(g.compute_ns)) : json(nullptr)},
            {"non_compute_us", has_gpu ? json(us(g.non_compute_ns())) : json(nullptr)},
            {"kernel_span_us", has_gpu ? json(us(g.span_ns)) : json(nullptr)},
            {"idle_pct", num(r.idle_pct())},
            {"compute_pct", num(r.compute_pct())},
            {"non_compute_pct", num(r.non_compute_pct())}}},
          {"kernel_types", kernel_types_json(rank_kernel_types(r))},
          {"idle_time", idle},
          {"launch_stats",
           {{"n", l.n},
            {"cpu_dur_sum_us", us(l.cpu_dur_sum_ns)},
            {"gpu_dur_sum_us", us(l.gpu_dur_sum_ns)},
            {"launch_delay_mean_us", num(l.launch_delay_mean_us())},
            {"launch_delay_max_us", l.n > 0 ? json(us(l.launch_delay_max_ns)) : json(nullptr)}}},
          {"queue_length", queue}};
}

}  // namespace

json hta_report_json(const HtaReport& report) {
  json ranks = json::array();
  for (const HtaRankReport& r : report.ranks) ranks.push_back(rank_json(r));
  return {{"path", report.path},
          {"last_profiler_step_excluded", report.last_step_excluded},
          {"ranks", ranks},
          {"kernel_types", kernel_types_json(report.kernel_types)},
          {"notes", report.notes}};
}

std::string hta_report_text(const HtaReport& report) {
  std::string out = fmt::format("recur analyze hta: {}\n", report.path);
  std::string ranks, events;
  for (const HtaRankReport& r : report.ranks) {
    ranks += fmt::format("{}{}", ranks.empty() ? "" : ", ", r.rank);
    events += fmt::format("{}{}: {}", events.empty() ? "" : ", ", r.rank, r.figures.events);
  }
  out += fmt::format("ranks: [{}]  events/rank: {{{}}}\n", ranks, events);
  for (const std::string& n : report.notes) out += fmt::format("note: {}\n", n);

  TextTable overlap({">rank", ">comp_comm_overlap_pctg"});
  TextTable temporal({">rank", ">idle_time(us)", ">compute_time(us)", ">non_compute_time(us)", ">kernel_time(us)",
                      ">idle_time_pctg", ">compute_time_pctg", ">non_compute_time_pctg"});
  TextTable idle({">rank", ">stream", "idle_category", ">idle_time", ">idle_time_ratio"});
  TextTable launch({">rank", ">n", ">cpu_dur_sum", ">gpu_dur_sum", ">launch_delay_mean", ">launch_delay_max"});
  TextTable queue({">rank", ">stream", ">count", ">mean", ">std", ">min", ">25%", ">50%", ">75%", ">max"});
  for (const HtaRankReport& r : report.ranks) {
    const HtaRankFigures& f = r.figures;
    const HtaGpuTime& g = f.gpu;
    std::string rank = fmt::format("{}", r.rank);
    overlap.add_row({rank, fixed(r.comm_comp_overlap_pct(), 2)});
    if (g.kernels > 0) {
      temporal.add_row({rank, us_text(g.idle_ns()), us_text(g.compute_ns), us_text(g.non_compute_ns()),
                        us_text(g.span_ns), fixed(r.idle_pct(), 2), fixed(r.compute_pct(), 2),
                        fixed(r.non_compute_pct(), 2)});
    }
    for (const HtaIdleRow& row : f.idle) {
      idle.add_row({rank, fmt::format("{}", row.stream), std::string(hta_idle_category_name(row.category)),
                    us_text(row.idle_ns), fixed(numpy_round(row.ratio, 2), 2)});
    }
    const HtaLaunchStats& l = f.launch;
    launch.add_row({rank, fmt::format("{}", l.n), us_text(l.cpu_dur_sum_ns), us_text(l.gpu_dur_sum_ns),
                    fixed(numpy_round(l.launch_delay_mean_us(), 3), 3),
                    l.n > 0 ? us_text(l.launch_delay_max_ns) : std::string("NaN")});
    for (const HtaQueueRow& q : f.queue) {
      const Describe& d = q.length;
      queue.add_row({rank, fmt::format("{}", q.stream), fmt::format("{}", d.count), fixed(d.mean, 6),
                     fixed(d.std, 6), fixed(d.min, 1), fixed(d.p25, 2), fixed(d.p50, 1), fixed(d.p75, 2),
                     fixed(d.max, 1)});
    }
  }
  TextTable types({"kernel_type", ">sum", ">percentage"});
  for (const HtaKernelTypeRow& k : report.kernel_types) {
    types.add_row({k.kernel_type, fmt::format("{}", k.sum_us), fixed(k.percentage, 1)});
  }
  auto section = [&out](std::string_view title, const TextTable& t) {
    out += fmt::format("\n=== {} ===\n{}", title, t.rows() > 0 ? t.render() : std::string("  (none)\n"));
  };
  section("comm_comp_overlap", overlap);
  section("temporal_breakdown (us)", temporal);
  section("gpu_kernel_breakdown (us, all ranks)", types);
  section("idle_time_breakdown (us)", idle);
  section("cuda_kernel_launch_stats (us)", launch);
  section("queue_length_summary", queue);
  if (queue.rows() > 0) {
    out += "  (a launch and a kernel start in the same µs: launch first; HTA's order there follows the file)\n";
  }
  return out;
}

Feedback hta_feedback(const HtaReport& report) {
  std::string ranks;
  for (const HtaRankReport& r : report.ranks) ranks += fmt::format("{}{}", ranks.empty() ? "" : ",", r.rank);
  Feedback f = analysis_feedback("hta", fmt::format("trace:{} ranks={}", report.path, ranks));
  for (const HtaRankReport& r : report.ranks) {
    const HtaGpuTime& g = r.figures.gpu;
    auto metric = [&](std::string_view name, double value, std::string unit) {
      if (std::isfinite(value)) f.add_metric(fmt::format("rank{}.{}", r.rank, name), value, std::move(unit));
    };
    metric("comm_comp_overlap_pct", r.comm_comp_overlap_pct(), "%");
    if (g.kernels > 0) {
      metric("idle_us", us(g.idle_ns()), "us");
      metric("compute_us", us(g.compute_ns), "us");
      metric("non_compute_us", us(g.non_compute_ns()), "us");
      metric("kernel_span_us", us(g.span_ns), "us");
    }
    metric("idle_pct", r.idle_pct(), "%");
    metric("compute_pct", r.compute_pct(), "%");
    metric("non_compute_pct", r.non_compute_pct(), "%");
  }
  f.notes = report.notes;
  f.artifacts["trace"] = report.path;
  return f;
}

}  // namespace recur::analyze
