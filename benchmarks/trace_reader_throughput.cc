// Chrome JSON reader throughput and peak memory on the real Kineto traces of HTA's test data,
// beside simdjson's DOM parser (a peer) and a memchr pass over the same bytes (the ceiling).
//
//   build/benchmarks/bench_trace_reader_throughput [--rounds N] [--warm K] [--dir DIR] [--clock cpu|wall]
//   build/benchmarks/bench_trace_reader_throughput --child MODE FILE.json.gz [--warm K]
//
// Every *.json.gz under DIR (default ../shared/testdata/hta, recursively) is measured in fresh
// child processes (this program re-executed with --child), one process per (file, mode), so
// each peak RSS is that of one parse. A child reads the .json.gz, inflates it into memory and
// frees the compressed bytes (not timed), then times, on one core:
//   recur     parse_chrome_json() of the inflated bytes into an EventTable (the reader);
//   simdjson  simdjson::dom::parser::parse() of the same bytes (a full DOM: the peer);
//   memchr    memchr() for a byte the text never holds: one pass over the bytes, the ceiling
//             of any parser on this core (this VM reads ~33 GB/s from DRAM on one thread);
//   none      nothing: the RSS of a process that only inflated the file.
// And, as a separate child that does not inflate first:
//   file      read_trace() of the .json.gz: read, inflate and parse, what `recur trace stats`
//             does (time and peak RSS end to end).
// The first parse in the process is "cold" (fresh pages for the table and scratch: on this VM
// a first-touched 4 KiB page costs ~18 us); then K more are "warm" (the median is reported).
// Peak RSS is VmHWM from /proc/self/status after the cold parse; an empty child (no file) gives
// the process's baseline RSS. Per round the files and, per file, the modes run in a rotated
// order; figures are the median and [min .. max] over rounds. Throughput is uncompressed JSON
// bytes / seconds, by default of the child's thread-CPU time (CLOCK_THREAD_CPUTIME_ID: user +
// system time, page faults included, time spent descheduled left out, which keeps figures
// readable when other work shares the cores); --clock wall uses the wall clock.
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "bench_process.h"
#include "trace/chrome_json.h"
#include "trace/trace_io.h"


namespace {

namespace fs = std::filesystem;
using recur::trace::PaddedBytes;
constexpr double kRooflineGBs = 33.0;
const char* const kModes[] = {"recur", "simdjson", "memchr", "file"};

bool g_wall_clock = false;

double clock_s() {
  if (g_wall_clock) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// One timed pass of `mode` over `json`; returns the number of events (or elements) seen.
size_t run_mode(const std::string& mode, const char* path, const PaddedBytes& json, simdjson::dom::parser& dom) {
  if (mode == "recur") {
    auto t = recur::trace::parse_chrome_json("bench", json);
    if (!t) {
      std::fprintf(stderr, "%s\n", t.error().to_string().c_str());
      std::exit(1);
    }
    return t->size();
  }
  if (mode == "file") {
    auto t = recur::trace::read_trace(path);
    if (!t) {
      std::fprintf(stderr, "%s\n", t.error().to_string().c_str());
      std::exit(1);
    }
    return t->size();
  }
  if (mode == "simdjson") {
    simdjson::dom::element doc;
    if (auto err = dom.parse(reinterpret_cast<const char*>(json.data()), json.size(), false).get(doc)) {
      std::fprintf(stderr, "simdjson: %s\n", simdjson::error_message(err));
      std::exit(1);
    }
    simdjson::dom::array events;
    if (doc.is_array()) return doc.get_array().value().size();
    if (doc["traceEvents"].get_array().get(events)) return 0;
    return events.size();
  }
  // memchr: one pass over every byte (0x01 never occurs in JSON text).
  const void* hit = std::memchr(json.data(), 1, json.size());
  asm volatile("" : : "r"(hit) : "memory");
  return hit == nullptr ? 0 : 1;
}

// Child: prints "cold_s warm_median_s events peak_rss_bytes".
int child(int argc, char** argv) {
  std::string mode = argc >= 3 ? argv[2] : "none";
  int warm = 5;
  for (int i = 4; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--warm") == 0) warm = std::max(0, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--clock") == 0) g_wall_clock = std::strcmp(argv[i + 1], "wall") == 0;
  }
  if (argc < 4) {
    std::printf("0 0 0 %zu 0\n", recur::bench::peak_rss_bytes());
    return 0;
  }
  PaddedBytes json;
  if (mode != "file") {
    auto gz = recur::trace::read_file_bytes(argv[3]);
    auto inflated = gz ? recur::trace::gunzip(argv[3], gz->span()) : decltype(recur::trace::gunzip("", {}))();
    if (!gz || !inflated) {
      std::fprintf(stderr, "cannot read %s\n", argv[3]);
      return 1;
    }
    json = std::move(*inflated);
  }
  simdjson::dom::parser dom;
  if (mode == "none") {
    std::printf("0 0 0 %zu 0\n", recur::bench::peak_rss_bytes());
    return 0;
  }
  rusage ru0{}, ru1{};
  getrusage(RUSAGE_THREAD, &ru0);
  double t0 = clock_s();
  size_t events = run_mode(mode, argv[3], json, dom);
  double cold = clock_s() - t0;
  getrusage(RUSAGE_THREAD, &ru1);
  size_t rss = recur::bench::peak_rss_bytes();
  long faults = ru1.ru_minflt - ru0.ru_minflt;
  std::vector<double> w;
  for (int k = 0; k < warm; ++k) {
    t0 = clock_s();
    run_mode(mode, argv[3], json, dom);
    w.push_back(clock_s() - t0);
  }
  std::sort(w.begin(), w.end());
  std::printf("%.9f %.9f %zu %zu %ld\n", cold, w.empty() ? cold : w[w.size() / 2], events, rss, faults);
  return 0;
}

// Microseconds to first-touch one fresh 4 KiB page (mmap, write a byte per page, median of 5
// passes over 16 MiB): what each page a parse allocates costs on this machine.
double first_touch_us_per_page() {
  constexpr size_t kBytes = 16 << 20;
  std::vector<double> us;
  for (int r = 0; r < 5; ++r) {
    void* m = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 0;
    auto* p = static_cast<volatile char*>(m);
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < kBytes; i += 4096) p[i] = 1;
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                 double(kBytes / 4096));
    munmap(m, kBytes);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

struct Run {
  double cold = 0, warm = 0;
  size_t events = 0, rss = 0;
  long faults = 0;  // page faults of the cold parse
};

Run spawn_child(const std::string& self, const std::string& mode, const std::string& file, int warm) {
  std::vector<std::string> args = {self, "--child", mode};
  if (!file.empty()) {
    args.insert(args.end(), {file, "--warm", std::to_string(warm), "--clock", g_wall_clock ? "wall" : "cpu"});
  }
  auto child = recur::bench::run_child(args);
  Run r;
  if (!child || std::sscanf(child->out.c_str(), "%lf %lf %zu %zu %ld", &r.cold, &r.warm, &r.events, &r.rss,
                            &r.faults) != 5) {
    std::fprintf(stderr, "child failed: %s %s\n", mode.c_str(), file.c_str());
    std::exit(1);
  }
  return r;
}

using recur::bench::Stat;
using recur::bench::stat;

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--child") == 0) return child(argc, argv);
  int rounds = 7, warm = 5;
  std::string dir = RECUR_HTA_TESTDATA;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(5, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--warm") == 0) warm = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
    if (std::strcmp(argv[i], "--clock") == 0) g_wall_clock = std::strcmp(argv[i + 1], "wall") == 0;
  }
  std::string self = fs::read_symlink("/proc/self/exe").string();
  constexpr size_t kModeCount = std::size(kModes);
  struct File {
    std::string name, path;
    size_t bytes = 0, events = 0;
    std::vector<double> cold[kModeCount], warm[kModeCount], rss[kModeCount], faults[kModeCount], input_rss;
  };
  std::vector<File> files;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.path().string().ends_with(".json.gz")) continue;
    auto gz = recur::trace::read_file_bytes(e.path().string());
    auto json = gz ? recur::trace::gunzip(e.path().string(), gz->span()) : decltype(recur::trace::gunzip("", {}))();
    if (!gz || !json) {
      std::fprintf(stderr, "cannot read %s\n", e.path().c_str());
      return 1;
    }
    files.push_back(File{.name = fs::relative(e.path(), dir).string(), .path = e.path().string(), .bytes = json->size()});
  }
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.name < b.name; });
  std::vector<double> base_rss;
  for (int r = 0; r < rounds; ++r) {
    base_rss.push_back(double(spawn_child(self, "none", "", 0).rss));
    for (size_t k = 0; k < files.size(); ++k) {
      File& f = files[(k + size_t(r)) % files.size()];
      f.input_rss.push_back(double(spawn_child(self, "none", f.path, 0).rss));
      for (size_t m = 0; m < kModeCount; ++m) {
        size_t mode = (m + size_t(r)) % kModeCount;
        Run run = spawn_child(self, kModes[mode], f.path, warm);
        f.cold[mode].push_back(run.cold);
        f.warm[mode].push_back(run.warm);
        f.rss[mode].push_back(double(run.rss));
        f.faults[mode].push_back(double(run.faults));
        if (mode == 0) f.events = run.events;
      }
    }
  }
  double base = stat(base_rss).med;
  fmt::print("trace reader: {} files, {} interleaved rounds (files and modes rotated), one core, "
             "{} warm repeats per child\n", files.size(), rounds, warm);
  fmt::print("baseline RSS of an empty child process: {:.1f} MB; roofline: {:.0f} GB/s (one-thread "
             "DRAM read); first touch of a fresh 4 KiB page: {:.1f} us\n\n", base / 1e6, kRooflineGBs,
             first_touch_us_per_page());
  fmt::print("Throughput, MB/s of uncompressed JSON ({} time): median [min .. max] over rounds\n\n",
             g_wall_clock ? "wall-clock" : "thread-CPU");
  fmt::print("| trace | JSON MB | events | recur cold | recur warm | simdjson DOM cold | simdjson DOM warm | "
             "memchr warm | recur / DOM (warm) | recur warm of roofline | read_trace(.json.gz) cold |\n"
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  auto mbs = [](double mb, const std::vector<double>& secs) {
    Stat s = stat(secs);
    return fmt::format("{:.0f} [{:.0f} .. {:.0f}]", mb / s.med, mb / s.hi, mb / s.lo);
  };
  double total_mb = 0, cold_s[kModeCount] = {}, warm_s[kModeCount] = {};
  for (File& f : files) {
    double mb = double(f.bytes) / 1e6;
    total_mb += mb;
    for (size_t m = 0; m < kModeCount; ++m) {
      cold_s[m] += stat(f.cold[m]).med;
      warm_s[m] += stat(f.warm[m]).med;
    }
    fmt::print("| {} | {:.2f} | {} | {} | {} | {} | {} | {} | {:.2f}x | {:.1f}% | {} |\n", f.name, mb, f.events,
               mbs(mb, f.cold[0]), mbs(mb, f.warm[0]), mbs(mb, f.cold[1]), mbs(mb, f.warm[1]), mbs(mb, f.warm[2]),
               stat(f.warm[1]).med / stat(f.warm[0]).med,
               100.0 * mb / stat(f.warm[0]).med / (kRooflineGBs * 1e3), mbs(mb, f.cold[3]));
  }
  fmt::print("| all files (sum of medians) | {:.2f} | | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.2f}x | {:.1f}% | {:.0f} |\n\n",
             total_mb, total_mb / cold_s[0], total_mb / warm_s[0], total_mb / cold_s[1], total_mb / warm_s[1],
             total_mb / warm_s[2], warm_s[1] / warm_s[0], 100.0 * total_mb / warm_s[0] / (kRooflineGBs * 1e3),
             total_mb / cold_s[3]);
  fmt::print("Peak RSS (VmHWM, MB, median over rounds). 'inflated only': a child that inflated the file "
             "and parsed nothing; '/ JSON': peak / uncompressed bytes; 'added': (peak - empty process) / "
             "uncompressed bytes; 'reader': (peak - inflated only) / uncompressed bytes; 'faults': minor page "
             "faults during the cold parse (each a first-touched 4 KiB page)\n\n");
  fmt::print("| trace | JSON MB | inflated only | recur peak | / JSON | added | reader | faults | simdjson DOM peak | "
             "DOM added | read_trace(.json.gz) peak | / JSON | added | faults |\n"
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (File& f : files) {
    double b = double(f.bytes);
    double in = stat(f.input_rss).med, rec = stat(f.rss[0]).med, dom = stat(f.rss[1]).med;
    double file = stat(f.rss[3]).med;
    fmt::print("| {} | {:.2f} | {:.1f} | {:.1f} | {:.2f} | {:.2f} | {:.2f} | {:.0f} | {:.1f} | {:.2f} | {:.1f} | {:.2f} | {:.2f} | {:.0f} |\n",
               f.name, b / 1e6, in / 1e6, rec / 1e6, rec / b, (rec - base) / b, (rec - in) / b,
               stat(f.faults[0]).med, dom / 1e6, (dom - base) / b, file / 1e6, file / b, (file - base) / b,
               stat(f.faults[3]).med);
  }
  return 0;
}
