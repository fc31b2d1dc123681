// `recur analyze hta`: every figure HTA printed for the HTA test-data folders (expected.json and
// each folder's hta_output.txt, parsed here, never copied into code), and small synthetic Kineto
// traces with hand-computed answers (touching and zero-length kernels, rounding of fractional
// timestamps, the last-step exclusion over two ranks, missing distributedInfo, idle categories,
// launch statistics, queue length).
#include "analyze/hta.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analyze/analyze_test_util.h"
#include "analyze/hta_filter.h"
#include "analyze/hta_names.h"
#include "analyze/hta_queue.h"
#include "analyze/hta_report.h"
#include "analyze/hta_rows.h"
#include "analyze/hta_stats.h"
#include "trace/trace_io.h"

namespace recur::analyze {
namespace {

using testing::TraceBuilder;
constexpr int64_t kUs = 1000;

// ---------------------------------------------------------------------------------------------
// HTA's own figures on real traces.

std::string data_path(const std::string& rel) { return std::string(RECUR_HTA_TESTDATA) + "/" + rel; }

std::vector<std::string> split_ws(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

double parse_number(const std::string& s) {
  return s == "NaN" ? std::numeric_limits<double>::quiet_NaN() : std::stod(s);
}

// A value as HTA printed it: the number and how precisely it was printed.
struct Printed {
  double value = 0;
  double half_unit = 0;  // half of the last printed digit: |exact - printed| can be this much
};
Printed printed(const std::string& s) {
  size_t dot = s.find('.');
  int decimals = dot == std::string::npos ? 0 : int(s.size() - dot - 1);
  return {parse_number(s), 0.5 * std::pow(10.0, -decimals) + 1e-9};
}

// Expects `ours` to print as HTA's text did (NaN matches NaN).
void expect_printed(double ours, const std::string& theirs, const std::string& what) {
  Printed p = printed(theirs);
  if (std::isnan(p.value)) {
    EXPECT_TRUE(std::isnan(ours)) << what << ": HTA printed NaN, we have " << ours;
    return;
  }
  EXPECT_NEAR(ours, p.value, p.half_unit) << what << " (HTA printed " << theirs << ")";
}

// hta_output.txt: "=== name (time) ===" sections of pandas tables, split into lines.
std::map<std::string, std::vector<std::string>> read_sections(const std::string& path, std::string* header) {
  std::ifstream in(path);
  std::map<std::string, std::vector<std::string>> out;
  std::string line, current;
  while (std::getline(in, line)) {
    if (line.rfind("=== ", 0) == 0) {
      current = split_ws(line)[1];
      out[current];
    } else if (current.empty()) {
      if (!line.empty()) *header = line;
    } else if (!line.empty()) {
      out[current].push_back(line);
    }
  }
  return out;
}

const HtaRankReport* find_rank(const HtaReport& r, int64_t rank) {
  for (const HtaRankReport& x : r.ranks) {
    if (x.rank == rank) return &x;
  }
  return nullptr;
}

const char* const kFolders[] = {"amd_trace", "nccl_parser_config", "ns_resolution_trace", "trace_filter"};

class HtaFolder : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(RECUR_HTA_TESTDATA)) GTEST_SKIP() << "no HTA test data at " << RECUR_HTA_TESTDATA;
    auto r = analyze_hta(data_path(GetParam()));
    ASSERT_TRUE(r) << r.error().to_string();
    report_ = std::move(*r);
    sections_ = read_sections(data_path(std::string(GetParam()) + "/hta_output.txt"), &header_);
  }
  const HtaRankReport& rank(int64_t r) {
    const HtaRankReport* x = find_rank(report_, r);
    EXPECT_NE(x, nullptr) << "rank " << r;
    static const HtaRankReport kEmpty;
    return x ? *x : kEmpty;
  }
  // The rows HTA measured on `rank`, read again.
  HtaRows rows_of(int64_t r) {
    auto t = trace::read_trace(data_path(std::string(GetParam()) + "/" + rank(r).file));
    if (!t) {
      ADD_FAILURE() << t.error().to_string();
      return {};
    }
    HtaRows rows = hta_rows(*t);
    return report_.last_step_excluded ? exclude_last_profiler_step(rows) : rows;
  }
  HtaReport report_;
  std::map<std::string, std::vector<std::string>> sections_;
  std::string header_;
};

TEST_P(HtaFolder, MatchesExpectedJson) {
  std::ifstream in(data_path("expected.json"));
  nlohmann::json expected = nlohmann::json::parse(in);
  const nlohmann::json& ranks = expected["traces"][GetParam()]["ranks"];
  ASSERT_EQ(report_.ranks.size(), ranks.size());
  for (auto item = ranks.begin(); item != ranks.end(); ++item) {  // no structured binding: clang-14 lambdas
    const std::string key = item.key();
    const nlohmann::json& want = item.value();
    const HtaRankReport& r = rank(std::stoll(key));
    const HtaGpuTime& g = r.figures.gpu;
    std::string where = std::string(GetParam()) + " rank " + key + ": ";
    auto us_close = [&](const char* name, int64_t ns) {
      double w = want[name].get<double>(), ours = double(ns) / kUs;
      EXPECT_LE(std::fabs(ours - w), 0.001 * std::fabs(w)) << where << name << ": ours " << ours << ", HTA " << w;
    };
    auto pct_close = [&](const char* name, double ours) {
      if (want[name].is_null()) {
        EXPECT_TRUE(std::isnan(ours)) << where << name << ": HTA has none, ours " << ours;
      } else {
        EXPECT_NEAR(ours, want[name].get<double>(), 0.01 + 1e-9) << where << name;
      }
    };
    pct_close("comm_comp_overlap_pct", r.comm_comp_overlap_pct());
    us_close("idle_us", g.idle_ns());
    us_close("compute_us", g.compute_ns);
    us_close("non_compute_us", g.non_compute_ns());
    us_close("kernel_span_us", g.span_ns);
    pct_close("idle_pct", r.idle_pct());
    pct_close("compute_pct", r.compute_pct());
    pct_close("non_compute_pct", r.non_compute_pct());
  }
}

TEST_P(HtaFolder, MatchesEveryPrintedTable) {
  // "ranks: [0, 1]  events/rank: {0: 2403, 1: 2339}": the rows HTA keeps per rank.
  auto events = header_.substr(header_.find('{') + 1);
  for (char& c : events) c = (c == ':' || c == ',' || c == '}') ? ' ' : c;
  std::vector<std::string> ev = split_ws(events);
  ASSERT_FALSE(ev.empty()) << header_;
  for (size_t i = 0; i + 1 < ev.size(); i += 2) {
    EXPECT_EQ(rank(std::stoll(ev[i])).figures.events, std::stoull(ev[i + 1])) << "events of rank " << ev[i];
  }
  size_t checked = 0;
  for (const std::string& line : sections_["comm_comp_overlap"]) {
    auto w = split_ws(line);
    if (w.size() != 3 || w[1] == "comp_comm_overlap_pctg") continue;
    expect_printed(rank(std::stoll(w[1])).comm_comp_overlap_pct(), w[2], "overlap");
    ++checked;
  }
  for (const std::string& line : sections_["temporal_breakdown"]) {
    auto w = split_ws(line);
    if (w.size() != 9 || w[1] == "idle_time(us)") continue;
    const HtaRankReport& r = rank(std::stoll(w[1]));
    const HtaGpuTime& g = r.figures.gpu;
    expect_printed(double(g.idle_ns()) / kUs, w[2], "idle_time(us)");
    expect_printed(double(g.compute_ns) / kUs, w[3], "compute_time(us)");
    expect_printed(double(g.non_compute_ns()) / kUs, w[4], "non_compute_time(us)");
    expect_printed(double(g.span_ns) / kUs, w[5], "kernel_time(us)");
    expect_printed(r.idle_pct(), w[6], "idle_time_pctg");
    expect_printed(r.compute_pct(), w[7], "compute_time_pctg");
    expect_printed(r.non_compute_pct(), w[8], "non_compute_time_pctg");
    ++checked;
  }
  size_t kernel_types = 0;
  for (const std::string& line : sections_["gpu_kernel_breakdown"]) {
    auto w = split_ws(line);
    if (w.size() < 4 || w[1] == "kernel_type") continue;
    std::string label = w[1];
    for (size_t i = 2; i + 2 < w.size(); ++i) label += " " + w[i];
    const HtaKernelTypeRow* ours = nullptr;
    for (const HtaKernelTypeRow& k : report_.kernel_types) {
      if (k.kernel_type == label) ours = &k;
    }
    ASSERT_NE(ours, nullptr) << "no kernel type '" << label << "'";
    expect_printed(double(ours->sum_us), w[w.size() - 2], label + " sum");
    expect_printed(ours->percentage, w[w.size() - 1], label + " percentage");
    ++kernel_types;
  }
  EXPECT_EQ(kernel_types, report_.kernel_types.size()) << "kernel types HTA did not print";
  std::map<int64_t, size_t> idle_rows;
  for (const std::string& line : sections_["idle_time_breakdown"]) {
    auto w = split_ws(line);
    if (w.size() != 6 || w[1] == "stream") continue;
    const HtaRankReport& r = rank(std::stoll(w[1]));
    const HtaIdleRow* ours = nullptr;
    for (const HtaIdleRow& row : r.figures.idle) {
      if (std::to_string(row.stream) == w[2] && hta_idle_category_name(row.category) == w[3]) ours = &row;
    }
    ASSERT_NE(ours, nullptr) << "rank " << w[1] << " stream " << w[2] << " " << w[3];
    expect_printed(double(ours->idle_ns) / kUs, w[4], "idle_time " + line);
    expect_printed(numpy_round(ours->ratio, 2), w[5], "idle_time_ratio " + line);
    ++idle_rows[r.rank];
  }
  for (const auto& [r, n] : idle_rows) EXPECT_EQ(rank(r).figures.idle.size(), n) << "idle rows of rank " << r;
  // Launch statistics: the column order differs between folders; the row index is the rank.
  const auto& launch = sections_["cuda_kernel_launch_stats"];
  if (!launch.empty()) {
    std::vector<std::string> columns = split_ws(launch[0]);
    for (size_t i = 1; i < launch.size(); ++i) {
      auto w = split_ws(launch[i]);
      ASSERT_EQ(w.size(), columns.size() + 1) << launch[i];
      const HtaLaunchStats& l = rank(std::stoll(w[0])).figures.launch;
      for (size_t c = 0; c < columns.size(); ++c) {
        const std::string& col = columns[c];
        double ours = col == "n"                   ? double(l.n)
                      : col == "cpu_dur_sum"       ? double(l.cpu_dur_sum_ns) / kUs
                      : col == "gpu_dur_sum"       ? double(l.gpu_dur_sum_ns) / kUs
                      : col == "launch_delay_mean" ? numpy_round(l.launch_delay_mean_us(), 3)
                      : col == "launch_delay_max"  ? double(l.launch_delay_max_ns) / kUs
                                                   : std::nan("");
        expect_printed(ours, w[c + 1], "launch " + col);
      }
      ++checked;
    }
  }
  // Queue length: "rank stream count mean std min 25% 50% 75% max", the rank only on its first
  // row. HTA sorts calls and kernel starts with an unstable sort, so where a call and a kernel
  // start in the same µs its order follows the file; count, min and max never depend on it, and
  // every other figure must lie between the two fixed orders (calls first, starts first).
  int64_t current_rank = -1;
  for (const std::string& line : sections_["queue_length_summary"]) {
    auto w = split_ws(line);
    if (w.size() != 9 && w.size() != 10) continue;
    if (w[0] == "count") continue;
    if (w.size() == 10) current_rank = std::stoll(w[0]), w.erase(w.begin());
    const HtaQueueRow* ours = nullptr;
    for (const HtaQueueRow& q : rank(current_rank).figures.queue) {
      if (std::to_string(q.stream) == w[0]) ours = &q;
    }
    ASSERT_NE(ours, nullptr) << "queue rank " << current_rank << " stream " << w[0];
    Describe other;
    for (const HtaQueueRow& q : hta_queue_length(rows_of(current_rank), HtaQueueTies::kStartsFirst)) {
      if (q.stream == ours->stream) other = q.length;
    }
    const Describe& d = ours->length;
    const double a[] = {double(d.count), d.mean, d.std, d.min, d.p25, d.p50, d.p75, d.max};
    const double b[] = {double(other.count), other.mean, other.std, other.min, other.p25, other.p50, other.p75, other.max};
    const char* names[] = {"count", "mean", "std", "min", "25%", "50%", "75%", "max"};
    for (size_t k = 0; k < 8; ++k) {
      std::string what = std::string("queue ") + names[k] + " " + line;
      Printed p = printed(w[k + 1]);
      bool exact = k == 0 || k == 3 || k == 7;
      if (exact) {
        EXPECT_DOUBLE_EQ(a[k], b[k]) << what << ": depends on the order of ties";
      }
      EXPECT_GE(p.value, std::min(a[k], b[k]) - p.half_unit) << what << " (ours " << a[k] << " .. " << b[k] << ")";
      EXPECT_LE(p.value, std::max(a[k], b[k]) + p.half_unit) << what << " (ours " << a[k] << " .. " << b[k] << ")";
    }
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

INSTANTIATE_TEST_SUITE_P(HtaTestData, HtaFolder, ::testing::ValuesIn(kFolders),
                         [](const auto& info) { return std::string(info.param); });

// ---------------------------------------------------------------------------------------------
// Synthetic traces: answers worked out by hand.

// A Kineto-like trace: CPU launches on one thread, kernels on streams (µs times).
class Kineto {
 public:
  explicit Kineto(std::optional<int64_t> rank = std::nullopt) {
    if (rank) b_.table().info().rank = *rank;
  }
  Kineto& cpu(std::string_view name, double ts_us, double dur_us, int64_t correlation = -1,
              std::string_view cat = "cpu_op") {
    b_.zone(cpu_track_, name, ns(ts_us), ns(ts_us + dur_us), cat);
    if (correlation >= 0) b_.arg("correlation", correlation);
    return *this;
  }
  Kineto& launch(double ts_us, double dur_us, int64_t correlation) {
    return cpu("cudaLaunchKernel", ts_us, dur_us, correlation, "cuda_runtime");
  }
  Kineto& kernel(std::string_view name, int64_t stream, double ts_us, double dur_us, int64_t correlation,
                 std::string_view cat = "kernel") {
    b_.zone(b_.thread(0, stream), name, ns(ts_us), ns(ts_us + dur_us), cat);
    b_.arg("stream", stream).arg("correlation", correlation);
    return *this;
  }
  trace::EventTable finish() { return b_.finish(); }

 private:
  static int64_t ns(double us) { return std::llround(us * kUs); }
  TraceBuilder b_;
  uint32_t cpu_track_ = b_.thread(100, 100, "main");
};

HtaReport analyze_one(const trace::EventTable& t, std::string name = "t.json") {
  auto r = analyze_hta_tables({{std::move(name), &t}});
  EXPECT_TRUE(r) << r.error().to_string();
  return r ? *r : HtaReport{};
}

TEST(HtaKernelClass, FollowsHtaPatterns) {
  EXPECT_EQ(hta_kernel_type("ncclKernel_AllReduce_RING_LL_Sum_float"), HtaKernelType::kCommunication);
  EXPECT_EQ(hta_kernel_type("void ncclKernel_x(int)"), HtaKernelType::kCommunication);
  EXPECT_EQ(hta_kernel_type("ncclDevKernel_Generic"), HtaKernelType::kCommunication);
  EXPECT_EQ(hta_kernel_type("hipMemcpyAsync"), HtaKernelType::kCommunication);  // ^hip comes first
  EXPECT_EQ(hta_kernel_type("Memcpy HtoD (Pageable -> Device)"), HtaKernelType::kMemory);
  EXPECT_EQ(hta_kernel_type("Memset (Device)"), HtaKernelType::kMemory);
  EXPECT_EQ(hta_kernel_type("void at::native::vectorized_elementwise_kernel<4>"), HtaKernelType::kComputation);
  EXPECT_EQ(hta_kernel_type("Event Sync"), HtaKernelType::kOther);
  EXPECT_EQ(hta_kernel_type("cudaStreamSynchronize"), HtaKernelType::kOther);
  EXPECT_EQ(hta_kernel_type("cudaLaunchKernel"), HtaKernelType::kOther);
  EXPECT_EQ(hta_kernel_type("my_dmaKernel"), HtaKernelType::kOther);
  // '.' does not cross a newline in HTA's patterns.
  EXPECT_EQ(hta_kernel_type("gemm\nncclKernel"), HtaKernelType::kComputation);
  EXPECT_TRUE(is_hta_profiler_step("ProfilerStep#12"));
  EXPECT_FALSE(is_hta_profiler_step("ProfilerStep#"));
  EXPECT_FALSE(is_hta_profiler_step("ProfilerStep 3"));
}

TEST(HtaSynthetic, OverlapTemporalAndTypeMixWithTouchingAndZeroLengthKernels) {
  // comp [0,10) touches comm [10,20) (no overlap there); comp [15,25) overlaps comm by 5;
  // comp [30,35); a zero-length comp kernel at 40 extends the span but adds no busy time.
  Kineto k(0);
  k.launch(-50, 1, 1).launch(-49, 1, 2).launch(-48, 1, 3).launch(-47, 1, 4).launch(-46, 1, 5);
  k.kernel("gemm_a", 7, 0, 10, 1).kernel("ncclKernel_AllReduce", 8, 10, 10, 2);
  k.kernel("gemm_b", 7, 15, 10, 3).kernel("gemm_c", 7, 30, 5, 4).kernel("gemm_zero", 7, 40, 0, 5);
  auto t = k.finish();
  HtaReport r = analyze_one(t);
  ASSERT_EQ(r.ranks.size(), 1u);
  const HtaRankReport& x = r.ranks[0];
  const HtaGpuTime& g = x.figures.gpu;
  EXPECT_EQ(g.kernels, 5u);
  EXPECT_EQ(g.span_ns, 40 * kUs);
  EXPECT_EQ(g.busy_ns, 30 * kUs);  // [0,25) + [30,35)
  EXPECT_EQ(g.idle_ns(), 10 * kUs);
  EXPECT_EQ(g.compute_ns, 25 * kUs);
  EXPECT_EQ(g.non_compute_ns(), 5 * kUs);  // communication alone, [10,15)
  EXPECT_EQ(g.comm_comp_overlap_ns, 5 * kUs);
  EXPECT_DOUBLE_EQ(x.comm_comp_overlap_pct(), 50.0);
  EXPECT_DOUBLE_EQ(x.idle_pct(), 25.0);
  EXPECT_DOUBLE_EQ(x.compute_pct(), 62.5);
  EXPECT_DOUBLE_EQ(x.non_compute_pct(), 12.5);
  // Type mix: computation alone 10 + 5 + 5 = 20, communication alone 5, both 5 (of 30).
  ASSERT_EQ(r.kernel_types.size(), 3u);
  EXPECT_EQ(r.kernel_types[0].kernel_type, "COMPUTATION");
  EXPECT_EQ(r.kernel_types[0].sum_us, 20);
  EXPECT_DOUBLE_EQ(r.kernel_types[0].percentage, 66.7);
  EXPECT_EQ(r.kernel_types[1].kernel_type, "COMMUNICATION");  // ties keep HTA's label order
  EXPECT_EQ(r.kernel_types[1].sum_us, 5);
  EXPECT_EQ(r.kernel_types[2].kernel_type, "COMPUTATION overlapping COMMUNICATION");
  EXPECT_EQ(r.kernel_types[2].sum_us, 5);
  EXPECT_DOUBLE_EQ(r.kernel_types[2].percentage, 16.7);
}

TEST(HtaSynthetic, NoCommunicationOrNoKernelsIsUndefinedNotZero) {
  Kineto k(0);
  k.launch(0, 1, 1).kernel("gemm", 7, 5, 10, 1);
  auto t = k.finish();
  HtaReport r = analyze_one(t);
  EXPECT_TRUE(std::isnan(r.ranks[0].comm_comp_overlap_pct()));
  EXPECT_DOUBLE_EQ(r.ranks[0].compute_pct(), 100.0);
  Kineto cpu_only(0);
  cpu_only.cpu("aten::add", 0, 5);
  auto t2 = cpu_only.finish();
  HtaReport r2 = analyze_one(t2);
  EXPECT_EQ(r2.ranks[0].figures.gpu.kernels, 0u);
  EXPECT_TRUE(std::isnan(r2.ranks[0].idle_pct()));
  bool noted = false;
  for (const std::string& n : r2.notes) noted |= n.find("no GPU kernels") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(HtaSynthetic, FractionalTimestampsRoundStartUpAndEndDown) {
  // ts 1.2 µs, dur 0.5: start 2, end floor(1.7) = 1, so HTA's duration is -1 µs; it adds no
  // busy time. ts 3.5, dur 2.6: start 4, end floor(6.1) = 6.
  Kineto k(0);
  k.launch(0, 1, 1).launch(0.5, 1, 2);
  k.kernel("gemm_a", 7, 1.2, 0.5, 1).kernel("gemm_b", 7, 3.5, 2.6, 2);
  auto t = k.finish();
  HtaRows rows = hta_rows(t);
  EXPECT_TRUE(rows.rounded);
  std::vector<std::pair<int64_t, int64_t>> kernels;
  for (const HtaRow& row : rows.rows) {
    if (row.on_stream()) kernels.emplace_back(row.ts / kUs, row.dur / kUs);
  }
  EXPECT_EQ(kernels, (std::vector<std::pair<int64_t, int64_t>>{{2, -1}, {4, 2}}));
  const HtaGpuTime& g = analyze_one(t).ranks[0].figures.gpu;
  EXPECT_EQ(g.span_ns, 4 * kUs);  // [2, 6)
  EXPECT_EQ(g.busy_ns, 2 * kUs);
}

TEST(HtaSynthetic, LastProfilerStepExcludedOverAllRanksAndRank0Assumed) {
  // Each rank holds one step name; together they hold two, so HTA drops, on both ranks, the CPU
  // rows from the last step's start on and the kernels they launched.
  Kineto r0(0), r1(1);
  for (Kineto* k : {&r0, &r1}) {
    k->cpu("ProfilerStep#1", 0, 100).launch(10, 2, 1).kernel("gemm", 7, 20, 10, 1);
    k->cpu("ProfilerStep#2", 100, 100).launch(110, 2, 2).kernel("gemm", 7, 120, 30, 2);
  }
  auto t0 = r0.finish(), t1 = r1.finish();
  auto both = analyze_hta_tables({{"r0.json", &t0}, {"r1.json", &t1}});
  ASSERT_TRUE(both) << both.error().to_string();
  EXPECT_TRUE(both->last_step_excluded);
  for (const HtaRankReport& r : both->ranks) {
    EXPECT_EQ(r.figures.events, 3u) << r.rank;  // step 1, its launch, its kernel
    EXPECT_EQ(r.figures.gpu.span_ns, 10 * kUs);
  }
  // One rank alone has two step names: the same exclusion.
  Kineto solo(0);
  solo.cpu("ProfilerStep#1", 0, 100).launch(10, 2, 1).kernel("gemm", 7, 20, 10, 1);
  solo.cpu("ProfilerStep#2", 100, 100).launch(110, 2, 2).kernel("gemm", 7, 120, 30, 2);
  auto ts = solo.finish();
  EXPECT_EQ(analyze_one(ts).ranks[0].figures.events, 3u);
  // A single step name: nothing is excluded. Without distributedInfo the rank is 0, noted.
  Kineto one;
  one.cpu("ProfilerStep#1", 0, 100).launch(10, 2, 1).kernel("gemm", 7, 20, 10, 1);
  one.launch(110, 2, 2).kernel("gemm", 7, 120, 30, 2);
  auto to = one.finish();
  HtaReport r = analyze_one(to, "one.json");
  EXPECT_FALSE(r.last_step_excluded);
  EXPECT_EQ(r.ranks[0].rank, 0);
  EXPECT_TRUE(r.ranks[0].rank_assumed);
  EXPECT_EQ(r.ranks[0].figures.events, 5u);
  EXPECT_EQ(r.ranks[0].figures.gpu.span_ns, 130 * kUs);
  bool noted = false;
  for (const std::string& n : r.notes) noted |= n == "one.json: no distributedInfo.rank: rank 0 assumed";
  EXPECT_TRUE(noted);
  // Two traces without a rank both claim rank 0.
  auto twice = analyze_hta_tables({{"a.json", &to}, {"b.json", &to}});
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message().find("rank 0 appears twice (a.json and b.json)"), std::string::npos)
      << twice.error().message();
}

TEST(HtaSynthetic, IdleCategoriesLaunchStatsAndQueueLength) {
  // Stream 7: k1 [5,10) launched at 0; k2 [12,20) launched at 3 (gap 2 below 30 µs: kernel
  // wait); k3 [30,40) launched at 25, after k2 ended (host wait, 10); k4 [100,110) launched at
  // 26 (gap 60: other). Every launch lasts 2 µs.
  Kineto k(0);
  k.launch(0, 2, 1).launch(3, 2, 2).launch(25, 2, 3).launch(26, 2, 4);
  k.kernel("gemm", 7, 5, 5, 1).kernel("gemm", 7, 12, 8, 2).kernel("gemm", 7, 30, 10, 3).kernel("gemm", 7, 100, 10, 4);
  auto t = k.finish();
  HtaReport r = analyze_one(t);
  const HtaRankFigures& f = r.ranks[0].figures;
  ASSERT_EQ(f.idle.size(), 3u);
  EXPECT_EQ(f.idle[0].category, HtaIdleCategory::kHostWait);
  EXPECT_EQ(f.idle[0].idle_ns, 10 * kUs);
  EXPECT_EQ(f.idle[1].category, HtaIdleCategory::kKernelWait);
  EXPECT_EQ(f.idle[1].idle_ns, 2 * kUs);
  EXPECT_EQ(f.idle[2].category, HtaIdleCategory::kOther);
  EXPECT_EQ(f.idle[2].idle_ns, 60 * kUs);
  EXPECT_DOUBLE_EQ(numpy_round(f.idle[0].ratio, 2), 0.14);  // 10 / 72
  EXPECT_DOUBLE_EQ(numpy_round(f.idle[2].ratio, 2), 0.83);
  // Launch delays: 5-0-2 = 3, 12-3-2 = 7, 30-25-2 = 3, 100-26-2 = 72.
  EXPECT_EQ(f.launch.n, 4u);
  EXPECT_EQ(f.launch.cpu_dur_sum_ns, 8 * kUs);
  EXPECT_EQ(f.launch.gpu_dur_sum_ns, 33 * kUs);
  EXPECT_DOUBLE_EQ(f.launch.launch_delay_mean_us(), 21.25);
  EXPECT_EQ(f.launch.launch_delay_max_ns, 72 * kUs);
  // Queue: +1@0 +1@3 -1@5 -1@12 +1@25 +1@26 -1@30 -1@100 -> 1 2 1 0 1 2 1 0.
  ASSERT_EQ(f.queue.size(), 1u);
  const Describe& d = f.queue[0].length;
  EXPECT_EQ(d.count, 8u);
  EXPECT_DOUBLE_EQ(d.mean, 1.0);
  EXPECT_NEAR(d.std, std::sqrt(4.0 / 7.0), 1e-12);
  EXPECT_DOUBLE_EQ(d.min, 0);
  EXPECT_DOUBLE_EQ(d.p25, 0.75);
  EXPECT_DOUBLE_EQ(d.p50, 1.0);
  EXPECT_DOUBLE_EQ(d.p75, 1.25);
  EXPECT_DOUBLE_EQ(d.max, 2);
}

TEST(HtaSynthetic, NumpyRoundIsHalfToEvenOnTheScaledValue) {
  EXPECT_DOUBLE_EQ(numpy_round(0.125, 2), 0.12);
  EXPECT_DOUBLE_EQ(numpy_round(0.375, 2), 0.38);
  EXPECT_DOUBLE_EQ(numpy_round(14.285714, 2), 14.29);
  EXPECT_TRUE(std::isnan(numpy_round(std::nan(""), 2)));
}

TEST(HtaSynthetic, JsonAndFeedback) {
  Kineto k(3);
  k.launch(0, 1, 1).kernel("gemm", 7, 5, 10, 1).launch(1, 1, 2).kernel("ncclKernel_x", 9, 10, 10, 2);
  auto t = k.finish();
  HtaReport r = analyze_one(t);
  nlohmann::json j = hta_report_json(r);
  EXPECT_EQ(j["ranks"][0]["rank"], 3);
  EXPECT_EQ(j["ranks"][0]["rank_from"], "distributedInfo");
  EXPECT_DOUBLE_EQ(j["ranks"][0]["comm_comp_overlap_pct"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(j["ranks"][0]["temporal"]["kernel_span_us"].get<double>(), 15.0);
  Feedback f = hta_feedback(r);
  EXPECT_EQ(f.probe, "analyze.hta");
  EXPECT_EQ(f.tier, 0);
  ASSERT_NE(f.find_metric("rank3.comm_comp_overlap_pct"), nullptr);
  EXPECT_DOUBLE_EQ(f.find_metric("rank3.comm_comp_overlap_pct")->value, 50.0);
  EXPECT_TRUE(validate_feedback(f));
  EXPECT_NE(hta_report_text(r).find("COMPUTATION overlapping COMMUNICATION"), std::string::npos);
}

TEST(HtaErrors, MissingAndMalformedPathsNameTheInput) {
  auto missing = analyze_hta("/nonexistent/hta/trace.json");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("/nonexistent/hta/trace.json"), std::string::npos);
  std::string dir = ::testing::TempDir() + "hta_bad";
  std::filesystem::create_directories(dir);
  { std::ofstream(dir + "/bad.json") << R"({"traceEvents":[{"ph":"X","name":"a","ts":"x"}]})"; }
  auto bad = analyze_hta(dir);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("bad.json: byte"), std::string::npos) << bad.error().message();
  std::filesystem::remove(dir + "/bad.json");
  auto empty = analyze_hta(dir);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message().find("no trace files"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace recur::analyze
