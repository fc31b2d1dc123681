#include "gate/zone_probe.h"

#include <chrono>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "analyze/interval_set.h"
#include "analyze/selector.h"
#include "analyze/zone_tree.h"
#include "engine/engine_bench.h"
#include "probe/stats.h"
#include "trace/trace.h"
#include "trace/trace_io.h"

namespace recur::gate {

namespace {

Result<analyze::Selector> zone_selector(std::string_view text) {
  auto s = analyze::Selector::parse(text);
  if (s) return s;
  // A bare zone name ("attention") is the exact-name selector.
  if (text.find_first_of("=~*,") == std::string_view::npos) return analyze::Selector::parse(fmt::format("name={}", text));
  return unexpected(s.error());
}

// Union of the matching zones per track, summed over tracks, in ns; and how many matched.
std::pair<int64_t, size_t> zone_time_ns(const trace::EventTable& table, const analyze::Selector& selector) {
  analyze::ZoneTree tree(table);
  analyze::ZoneMatcher matcher(selector, tree);
  std::map<uint32_t, analyze::IntervalSet> by_track;
  const std::vector<uint32_t> zones = matcher.select();
  for (uint32_t z : zones) {
    const analyze::Zone& zone = tree.zone(z);
    by_track[zone.track].add({zone.begin, zone.end});
  }
  int64_t total = 0;
  for (const auto& [track, set] : by_track) total += set.length();
  return {total, zones.size()};
}

}  // namespace

Result<trace::EventTable> traced_engine_run(const Model& model, ThreadPool& pool, const EngineBenchOptions& o,
                                            const Config& config) {
  trace::reset();
  trace::set_enabled(true);
  auto r = bench_engine(model, pool, o, config);
  trace::set_enabled(false);
  trace::EventTable table = trace::capture();
  if (!r) return unexpected(r.error());
  return table;
}

void attach_trace(const trace::EventTable& table, const std::string& path, Feedback& f) {
  if (path.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (Status s = trace::write_trace(table, path); s) f.artifacts["trace"] = path;
  else f.notes.push_back(fmt::format("trace not written: {}", s.error().message()));
}

Result<ZoneTimeMeasurement> measure_zone_time(const Model& model, ThreadPool& pool, const EngineWorkload& w,
                                              const NamedConfig& arm, std::string_view selector_text,
                                              const std::string& trace_out) {
  RECUR_ASSIGN_OR_RETURN(analyze::Selector selector, zone_selector(selector_text));
  const auto t0 = std::chrono::steady_clock::now();
  EngineBenchOptions o{.prefill_tokens = w.prefill_tokens, .decode_tokens = w.decode_tokens, .runs = 1, .warmup_runs = 0};
  for (int i = 0; i < w.warmup_runs; ++i) RECUR_RETURN_IF_ERROR(bench_engine(model, pool, o, arm.config));
  std::vector<double> us;
  size_t matched = 0;
  trace::EventTable last;
  for (int i = 0; i < w.runs; ++i) {
    RECUR_ASSIGN_OR_RETURN(trace::EventTable table, traced_engine_run(model, pool, o, arm.config));
    auto [ns, n] = zone_time_ns(table, selector);
    us.push_back(double(ns) * 1e-3);
    matched = n;
    if (i + 1 == w.runs) last = std::move(table);
  }
  ZoneTimeMeasurement m;
  const double median = probe::median(us);
  const auto [lo, hi] = probe::bootstrap_median_ci(us);
  m.value = MetricValue{.value = {median, std::min(lo, median), std::max(hi, median)}, .boolean = false, .unit = "us"};
  Feedback& f = m.feedback;
  f.probe = "analyze.zone_time";
  f.tier = 3;
  f.subject = fmt::format("engine arm {} zones `{}` ({} prefill + {} decode tokens per run)", arm.name, selector.text(),
                          w.prefill_tokens, w.decode_tokens);
  f.hypothesis = fmt::format("time in zones `{}`", selector.text());
  f.verdict = matched > 0 ? Verdict::kConfirmed : Verdict::kRefuted;
  Metric& mm = f.add_metric("zone_time_us", median, "us");
  mm.ci95 = std::pair(m.value.value.lo, m.value.value.hi);
  f.add_metric("zones_matched_per_run", double(matched));
  f.add_metric("runs", double(us.size()));
  if (matched == 0) f.notes.push_back(fmt::format("no zone matched `{}`: the metric is 0", selector.text()));
  attach_trace(last, trace_out, f);
  f.cost_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

}  // namespace recur::gate
