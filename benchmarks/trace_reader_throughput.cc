// Chrome JSON reader throughput and peak memory on the real Kineto traces of HTA's test data.
//
//   build/benchmarks/bench_trace_reader_throughput [--rounds N] [--dir DIR]
//
// Each .json.gz under DIR (default ../shared/testdata/hta) is inflated once to a temporary
// .json file. Per round, for every file in a rotated order, a fresh child process (this
// program re-executed with --child FILE) reads the uncompressed file with read_trace() on one
// core and reports its wall time; the parent takes the child's peak RSS (ru_maxrss from
// wait4). An empty child (--child with no file) gives the process's baseline RSS. Throughput
// is uncompressed bytes / time (file read included, page cache warm), beside the ~33 GB/s
// single-core memory read bandwidth of this machine (docs/performance.md) as the roofline.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trace/trace_io.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
constexpr double kRooflineGBs = 33.0;

int child(const char* path) {
  if (path == nullptr) {
    std::printf("0 0\n");
    return 0;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto t = recur::trace::read_trace(path);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!t) {
    std::fprintf(stderr, "%s\n", t.error().to_string().c_str());
    return 1;
  }
  std::printf("%.9f %zu\n", s, t->size());
  return 0;
}

struct Run {
  double seconds = 0;
  size_t events = 0;
  long maxrss_kb = 0;
};

Run spawn_child(const std::string& self, const std::string& file) {
  int pipefd[2];
  if (pipe(pipefd) != 0) std::exit(1);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  std::vector<std::string> args = {self, "--child"};
  if (!file.empty()) args.push_back(file);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), environ) != 0) std::exit(1);
  close(pipefd[1]);
  char buf[256] = {0};
  ssize_t n = read(pipefd[0], buf, sizeof buf - 1);
  close(pipefd[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  Run r;
  if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "child failed on %s\n", file.c_str());
    std::exit(1);
  }
  std::sscanf(buf, "%lf %zu", &r.seconds, &r.events);
  r.maxrss_kb = ru.ru_maxrss;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--child") == 0) return child(argc >= 3 ? argv[2] : nullptr);
  int rounds = 7;
  std::string dir = RECUR_HTA_TESTDATA;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(5, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
  }
  std::string self = fs::read_symlink("/proc/self/exe").string();
  fs::path tmp = fs::temp_directory_path() / fmt::format("recur_reader_bench_{}", getpid());
  fs::create_directories(tmp);
  struct File {
    std::string name, path;
    size_t bytes;
    std::vector<double> secs, rss;
    size_t events = 0;
  };
  std::vector<File> files;
  std::vector<fs::path> gz;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().string().ends_with(".json.gz")) gz.push_back(e.path());
  }
  std::sort(gz.begin(), gz.end());
  for (auto& p : gz) {
    auto bytes = recur::trace::read_file_bytes(p.string());
    auto json = bytes ? recur::trace::gunzip(p.string(), bytes->span()) : decltype(recur::trace::gunzip("", {}))();
    if (!bytes || !json) {
      std::fprintf(stderr, "cannot read %s\n", p.c_str());
      return 1;
    }
    std::string rel = fs::relative(p, dir).string();
    fs::path out = tmp / fmt::format("{}.json", files.size());
    FILE* f = std::fopen(out.c_str(), "wb");
    std::fwrite(json->data(), 1, json->size(), f);
    std::fclose(f);
    files.push_back(File{rel, out.string(), json->size(), {}, {}});
  }
  std::vector<double> base_rss;
  for (int r = 0; r < rounds; ++r) {
    base_rss.push_back(double(spawn_child(self, "").maxrss_kb));
    for (size_t k = 0; k < files.size(); ++k) {
      File& f = files[(k + size_t(r)) % files.size()];
      Run run = spawn_child(self, f.path);
      f.secs.push_back(run.seconds);
      f.rss.push_back(double(run.maxrss_kb) * 1024.0);
      f.events = run.events;
    }
  }
  double base = median(base_rss) * 1024.0;
  fmt::print("trace reader: {} files, {} interleaved rounds, one core; baseline process RSS {:.1f} MiB\n",
             files.size(), rounds, base / (1 << 20));
  fmt::print("| trace | MB | events | ms (median) | MB/s median [min .. max] | of {:.0f} GB/s | peak RSS MB | RSS / JSON |\n",
             kRooflineGBs);
  fmt::print("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  double total_bytes = 0, total_secs = 0;
  for (File& f : files) {
    double mb = double(f.bytes) / 1e6;
    double med = median(f.secs);
    double lo = *std::min_element(f.secs.begin(), f.secs.end());
    double hi = *std::max_element(f.secs.begin(), f.secs.end());
    double rss = median(f.rss);
    fmt::print("| {} | {:.2f} | {} | {:.2f} | {:.0f} [{:.0f} .. {:.0f}] | {:.1f}% | {:.1f} | {:.2f} |\n", f.name, mb,
               f.events, med * 1e3, mb / med, mb / hi, mb / lo, 100.0 * mb / med / (kRooflineGBs * 1e3), rss / 1e6,
               rss / double(f.bytes));
    total_bytes += double(f.bytes);
    total_secs += med;
  }
  fmt::print("all files: {:.1f} MB in {:.1f} ms = {:.0f} MB/s\n", total_bytes / 1e6, total_secs * 1e3,
             total_bytes / 1e6 / total_secs);
  fs::remove_all(tmp);
  return 0;
}
