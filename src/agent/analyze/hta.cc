#include "analyze/hta.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "analyze/hta_filter.h"
#include "analyze/hta_heap.h"
#include "analyze/hta_rows.h"
#include "analyze/hta_stats.h"
#include "trace/trace_io.h"
#include "trace/trace_tools.h"

namespace recur::analyze {
namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

HtaRankFigures measure(const HtaRows& rows, const HtaOptions& options) {
  HtaRankFigures f;
  f.events = rows.rows.size();
  f.gpu = hta_gpu_time(rows);
  f.idle = hta_idle_time(rows, options.kernel_wait_threshold_ns);
  f.launch = hta_launch_stats(rows);
  f.queue = hta_queue_length(rows);
  return f;
}

// One rank, measured before the exclusion of the last step is decided over all ranks.
struct RankPartial {
  HtaRankReport report;                 // figures: with the last step excluded
  std::optional<HtaRankFigures> whole;  // without exclusion, when this rank alone cannot decide
  std::vector<std::string> steps;
  std::vector<std::string> notes;       // the reader's recoveries, "FILE: recovered: ..."
};

RankPartial analyze_rank(const HtaRows& rows, const trace::TraceInfo& info, std::string name,
                         const HtaOptions& options) {
  RankPartial p;
  p.report.file = std::move(name);
  p.report.rank = info.rank.value_or(0);
  p.report.rank_assumed = !info.rank.has_value();
  p.report.rounded = rows.rounded;
  p.steps = rows.profiler_steps;
  for (const std::string& note : trace::recovery_notes(info)) p.notes.push_back(p.report.file + ": " + note);
  if (!hta_filters_last_step(p.steps)) p.whole = measure(rows, options);
  p.report.figures = measure(exclude_last_profiler_step(rows), options);
  return p;
}

Result<HtaReport> assemble(std::vector<RankPartial> partials, std::string path) {
  HtaReport out;
  out.path = std::move(path);
  std::set<std::string> steps;
  for (const RankPartial& p : partials) steps.insert(p.steps.begin(), p.steps.end());
  out.last_step_excluded = hta_filters_last_step({steps.begin(), steps.end()});
  std::map<int64_t, std::string> owner;
  for (RankPartial& p : partials) {
    auto [it, added] = owner.emplace(p.report.rank, p.report.file);
    if (!added) {
      return make_error(ErrorCode::kFailedPrecondition, "{}: rank {} appears twice ({} and {}); a trace without distributedInfo.rank counts as "
                              "rank 0, so give each trace its own rank",
                              out.path, p.report.rank, it->second, p.report.file);
    }
    if (!out.last_step_excluded && p.whole) p.report.figures = std::move(*p.whole);
    out.notes.insert(out.notes.end(), p.notes.begin(), p.notes.end());
    if (p.report.rank_assumed) {
      out.notes.push_back(fmt::format("{}: no distributedInfo.rank: rank 0 assumed", p.report.file));
    }
    if (p.report.figures.gpu.kernels == 0) {
      out.notes.push_back(fmt::format("rank {}: no GPU kernels (no event has args.stream): GPU figures undefined",
                                      p.report.rank));
    } else if (p.report.figures.gpu.communication_ns == 0) {
      out.notes.push_back(fmt::format("rank {}: no communication kernels: comm/compute overlap undefined",
                                      p.report.rank));
    }
    out.ranks.push_back(std::move(p.report));
  }
  std::sort(out.ranks.begin(), out.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  out.notes.push_back(out.last_step_excluded
                          ? fmt::format("{} ProfilerStep names over all ranks: the last step is excluded (CPU "
                                        "events from its start on, and the kernels they launched), as HTA does",
                                        steps.size())
                          : fmt::format("{} ProfilerStep name(s): no step excluded (HTA excludes the last step only "
                                        "when there are two or more)",
                                        steps.size()));
  out.kernel_types = hta_kernel_type_table(out.ranks);
  return out;
}

// Runs fn(0..n-1) on up to `jobs` threads.
void parallel_for(size_t n, unsigned jobs, const std::function<void(size_t)>& fn) {
  unsigned threads = std::max(1u, std::min<unsigned>(jobs, unsigned(n)));
  if (threads == 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
    });
  }
  for (std::thread& th : pool) th.join();
}

// A file, or the *.json / *.gz files of a folder (HTA's choice), sorted by name.
Result<std::vector<std::string>> trace_files(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return not_found("{}: no such file or folder", path);
  if (!fs::is_directory(st)) return std::vector<std::string>{path};
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
    std::string name = e.path().filename().string();
    if (e.is_regular_file() && (name.ends_with(".json") || name.ends_with(".gz"))) files.push_back(e.path().string());
  }
  if (ec) return io_error("{}: cannot list the folder ({})", path, ec.message());
  if (files.empty()) return not_found("{}: no trace files (*.json, *.json.gz) in the folder", path);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

double hta_percent(double part, double whole, int decimals) {
  if (whole == 0) return kNaN;
  return numpy_round(100 * (part / whole), decimals);
}

double HtaRankReport::comm_comp_overlap_pct() const {
  return hta_percent(double(figures.gpu.comm_comp_overlap_ns), double(figures.gpu.communication_ns), 2);
}
double HtaRankReport::idle_pct() const {
  return hta_percent(double(figures.gpu.idle_ns()), double(figures.gpu.span_ns), 2);
}
double HtaRankReport::compute_pct() const {
  return hta_percent(double(figures.gpu.compute_ns), double(figures.gpu.span_ns), 2);
}
double HtaRankReport::non_compute_pct() const {
  return hta_percent(double(figures.gpu.non_compute_ns()), double(figures.gpu.span_ns), 2);
}

std::vector<HtaKernelTypeRow> hta_kernel_type_table(const std::vector<HtaRankReport>& ranks) {
  std::map<std::string, int64_t> sums;  // by label, as HTA's groupby orders them
  for (const HtaRankReport& r : ranks) {
    const HtaGpuTime& g = r.figures.gpu;
    for (unsigned mask = 1; mask < 8; ++mask) {
      if (g.type_mix_seen & (1u << mask)) sums[hta_type_mix_label(mask)] += g.type_mix_us[mask];
    }
  }
  int64_t total = 0;
  std::vector<HtaKernelTypeRow> rows;
  for (const auto& [label, sum] : sums) {
    rows.push_back({label, sum, 0});
    total += sum;
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.sum_us > b.sum_us; });
  for (HtaKernelTypeRow& row : rows) row.percentage = hta_percent(double(row.sum_us), double(total), 1);
  return rows;
}

Result<HtaReport> analyze_hta_tables(const std::vector<HtaInput>& inputs, const HtaOptions& options) {
  std::vector<RankPartial> partials(inputs.size());
  parallel_for(inputs.size(), options.jobs,
               [&](size_t i) {
                 const trace::EventTable& t = *inputs[i].table;
                 partials[i] = analyze_rank(hta_rows(t), t.info(), inputs[i].name, options);
               });
  return assemble(std::move(partials), inputs.size() == 1 ? inputs[0].name : "traces");
}

Result<HtaReport> analyze_hta(const std::string& path, const HtaOptions& options) {
  auto files = trace_files(path);
  if (!files) return unexpected(files.error());
  if (options.reserve_heap) {
    // The reader holds the JSON text and the table at once: about 3x the JSON at the peak.
    std::vector<size_t> sizes;
    for (const std::string& f : *files) sizes.push_back(trace_json_bytes(f));
    std::sort(sizes.rbegin(), sizes.rend());
    size_t need = 0;
    for (size_t i = 0; i < sizes.size() && i < std::max(1u, options.jobs); ++i) need += 3 * sizes[i];
    reserve_heap(need);
  }
  std::vector<std::optional<RankPartial>> partials(files->size());
  std::vector<std::optional<Error>> errors(files->size());
  parallel_for(files->size(), options.jobs, [&](size_t i) {
    const std::string& file = (*files)[i];
    auto table = trace::read_trace(file, options.limits);
    if (!table) {
      errors[i] = table.error();
      return;
    }
    HtaRows rows = hta_rows(*table);
    trace::TraceInfo info = table->info();
    *table = trace::EventTable();  // the rows are all that is measured: free the table first
    partials[i] = analyze_rank(rows, info, fs::path(file).filename().string(), options);
  });
  std::vector<RankPartial> ok;
  for (size_t i = 0; i < files->size(); ++i) {
    if (errors[i]) return unexpected(*errors[i]);
    ok.push_back(std::move(*partials[i]));
  }
  return assemble(std::move(ok), path);
}

}  // namespace recur::analyze
