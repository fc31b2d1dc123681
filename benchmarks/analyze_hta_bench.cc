// `recur analyze hta` on HTA's test-data folders: wall time and peak RSS, each run in a fresh
// process, and peak RSS against the number of ranks in a folder.
//
//   build/benchmarks/bench_analyze_hta [--rounds N] [--dir DIR] [--ranks 1,4,16] [--jobs 1,2]
//   build/benchmarks/bench_analyze_hta --child FOLDER JOBS
//
// Part 1: for each folder of DIR (default ../shared/testdata/hta) with traces in it, N rounds
// (default 7, at least 5; folders rotated per round) of a child process that runs
// analyze_hta() and renders the tables (what `recur analyze hta FOLDER` does). Reported per
// folder: the process wall time (spawn to exit, which includes loading the program, as
// HTA's recorded times include starting Python), the time inside analyze_hta(), both as
// median [min .. max], the child's peak RSS (VmHWM) and the input: gzip bytes, JSON bytes of all
// ranks and of the largest.
// Part 2: a folder of R copies of the largest trace (ns_resolution_trace), each given its own
// distributedInfo.rank and written as plain JSON to a temporary folder, analysed with each of
// --jobs; peak RSS against R shows memory follows the largest rank (x jobs), not the sum.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analyze/hta.h"
#include "analyze/hta_report.h"
#include "bench_process.h"
#include "trace/trace_io.h"

namespace {

namespace fs = std::filesystem;
using recur::bench::now_s;
using recur::bench::peak_rss_bytes;
using recur::bench::stat;
using recur::bench::Stat;

// Child: analyses FOLDER with JOBS, prints "analysis_s peak_rss_bytes ranks".
int child(const char* folder, const char* jobs) {
  recur::analyze::HtaOptions o;
  o.jobs = unsigned(std::max(1, std::atoi(jobs)));
  o.reserve_heap = true;  // as `recur analyze hta` does
  double t0 = now_s();
  auto r = recur::analyze::analyze_hta(folder, o);
  if (!r) {
    std::fprintf(stderr, "%s\n", r.error().to_string().c_str());
    return 1;
  }
  std::string text = recur::analyze::hta_report_text(*r);
  double t = now_s() - t0;
  std::printf("%.9f %zu %zu %zu\n", t, peak_rss_bytes(), r->ranks.size(), text.size());
  return 0;
}

struct Run {
  double wall = 0, analysis = 0;
  size_t rss = 0, ranks = 0;
};

Run spawn_child(const std::string& self, const std::string& folder, unsigned jobs) {
  auto child = recur::bench::run_child({self, "--child", folder, std::to_string(jobs)});
  Run r;
  size_t text = 0;
  if (!child || std::sscanf(child->out.c_str(), "%lf %zu %zu %zu", &r.analysis, &r.rss, &r.ranks, &text) != 4) {
    std::fprintf(stderr, "child failed on %s\n", folder.c_str());
    std::exit(1);
  }
  r.wall = child->wall_s;
  return r;
}

std::string ms(const std::vector<double>& secs) {
  Stat s = stat(secs);
  return fmt::format("{:.1f} [{:.1f} .. {:.1f}]", s.med * 1e3, s.lo * 1e3, s.hi * 1e3);
}

std::vector<unsigned> parse_list(const char* text) {
  std::vector<unsigned> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(unsigned(std::max(1, std::atoi(item.c_str()))));
  return out;
}

// Gzip and JSON bytes of the traces in a folder (the files analyze_hta reads).
struct Input {
  size_t files = 0, gz = 0, json = 0, largest_json = 0;
};
Input input_of(const std::string& folder) {
  Input in;
  for (const auto& e : fs::directory_iterator(folder)) {
    std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !(name.ends_with(".json") || name.ends_with(".gz"))) continue;
    auto bytes = recur::trace::read_file_bytes(e.path().string());
    if (!bytes) continue;
    size_t json = bytes->size();
    if (recur::trace::is_gzip(bytes->span())) {
      auto inflated = recur::trace::gunzip(name, bytes->span());
      json = inflated ? inflated->size() : 0;
    }
    ++in.files;
    in.gz += bytes->size();
    in.json += json;
    in.largest_json = std::max(in.largest_json, json);
  }
  return in;
}

// Writes `ranks` copies of `trace` (a .json.gz with "distributedInfo": {..., "rank": 0, ...})
// to `dir`, each with its own rank.
bool write_rank_copies(const std::string& trace, const std::string& dir, unsigned ranks) {
  auto gz = recur::trace::read_file_bytes(trace);
  if (!gz) return false;
  auto json = recur::trace::gunzip(trace, gz->span());
  if (!json) return false;
  std::string text(reinterpret_cast<const char*>(json->data()), json->size());
  size_t info = text.find("\"distributedInfo\"");
  size_t key = info == std::string::npos ? info : text.find("\"rank\":", info);
  if (key == std::string::npos) return false;
  size_t value = text.find_first_of("0123456789", key);
  size_t value_end = text.find_first_not_of("0123456789", value);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (unsigned r = 0; r < ranks; ++r) {
    std::string copy = text;
    copy.replace(value, value_end - value, std::to_string(r));
    std::ofstream(fmt::format("{}/rank-{}.json", dir, r), std::ios::binary) << copy;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "--child") == 0) return child(argv[2], argv[3]);
  int rounds = 7;
  std::string dir = RECUR_HTA_TESTDATA;
  std::vector<unsigned> rank_counts = {1, 4, 16}, jobs = {1, 2};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(5, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
    if (std::strcmp(argv[i], "--ranks") == 0) rank_counts = parse_list(argv[i + 1]);
    if (std::strcmp(argv[i], "--jobs") == 0) jobs = parse_list(argv[i + 1]);
  }
  std::string self = fs::read_symlink("/proc/self/exe").string();

  struct Folder {
    std::string name, path;
    Input input;
    std::vector<double> wall, analysis, rss;
    size_t ranks = 0;
  };
  std::vector<Folder> folders;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_directory()) continue;
    Input in = input_of(e.path().string());
    if (in.files > 0) folders.push_back({e.path().filename().string(), e.path().string(), in, {}, {}, {}, 0});
  }
  std::sort(folders.begin(), folders.end(), [](const Folder& a, const Folder& b) { return a.name < b.name; });
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < folders.size(); ++k) {
      Folder& f = folders[(k + size_t(r)) % folders.size()];
      Run run = spawn_child(self, f.path, 1);
      f.wall.push_back(run.wall);
      f.analysis.push_back(run.analysis);
      f.rss.push_back(double(run.rss));
      f.ranks = run.ranks;
    }
  }
  fmt::print("recur analyze hta: {} folders, {} rounds (folders rotated), one fresh process per run, --jobs 1\n\n",
             folders.size(), rounds);
  fmt::print("| folder | ranks | gzip MB | JSON MB (largest rank) | process wall ms | analyze_hta ms | "
             "peak RSS MB | peak RSS / largest JSON |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Folder& f : folders) {
    double rss = stat(f.rss).med;
    fmt::print("| {} | {} | {:.2f} | {:.2f} ({:.2f}) | {} | {} | {:.1f} | {:.2f} |\n", f.name, f.ranks,
               double(f.input.gz) / 1e6, double(f.input.json) / 1e6, double(f.input.largest_json) / 1e6,
               ms(f.wall), ms(f.analysis), rss / 1e6, rss / double(f.input.largest_json));
  }

  std::string big = dir + "/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
  if (rank_counts.empty() || !fs::exists(big)) return 0;
  std::string tmp = (fs::temp_directory_path() / fmt::format("recur_hta_bench_{}", getpid())).string();
  fmt::print("\nPeak RSS against ranks: copies of ns_resolution_trace (plain JSON, one rank each), median of {} "
             "runs\n\n| ranks | JSON MB (all ranks) | --jobs | process wall ms | peak RSS MB | peak RSS / all JSON |\n"
             "| --- | --- | --- | --- | --- | --- |\n",
             std::max(3, rounds / 2));
  for (unsigned ranks : rank_counts) {
    if (!write_rank_copies(big, tmp, ranks)) {
      std::fprintf(stderr, "cannot write rank copies to %s\n", tmp.c_str());
      return 1;
    }
    Input in = input_of(tmp);
    for (unsigned j : jobs) {
      std::vector<double> wall, rss;
      for (int r = 0; r < std::max(3, rounds / 2); ++r) {
        Run run = spawn_child(self, tmp, j);
        wall.push_back(run.wall);
        rss.push_back(double(run.rss));
      }
      fmt::print("| {} | {:.1f} | {} | {} | {:.1f} | {:.3f} |\n", ranks, double(in.json) / 1e6, j, ms(wall),
                 stat(rss).med / 1e6, stat(rss).med / double(in.json));
    }
  }
  fs::remove_all(tmp);
  return 0;
}
