// KV transfer: shared memory vs TCP to a peer process on this host, interleaved (shm, tcp, shm,
// tcp, ...) so load drifts hit both alike, against the in-run memcpy bandwidth of the same
// bytes as the roofline. Each run is one `run_transfer_bench` (src/stack/transfer/transfer_bench.h):
// a warm-up round, then timed rounds of one layer of --blocks blocks through KvSender, then
// single-block latency samples, then a verified read-back. Figures: docs/performance.md
// "KV transfer".
//
//   bench_transfer [--runs 5] [--bytes 67108864] [--blocks 64] [--rounds 5] [--json]
//
// The peer is this program again (`bench_transfer transfer peer ...`, what `recur transfer
// peer` does), so the benchmark does not need the recur binary.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "bench_args.h"
#include "transfer/transfer_bench.h"

using namespace recur::transfer;

namespace {

int run_peer_mode(int argc, char** argv) {
  TransferPeerOptions p;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--segment") p.segment = recur::bench::flag_value(argc, argv, i, "bench_transfer");
    else if (a == "--listen") p.listen = recur::bench::flag_value(argc, argv, i, "bench_transfer");
    else if (a == "--bytes") p.bytes = std::strtoull(recur::bench::flag_value(argc, argv, i, "bench_transfer"), nullptr, 10);
  }
  auto s = run_transfer_peer(p, stdout);
  if (!s) std::fprintf(stderr, "bench_transfer peer: %s\n", s.error().to_string().c_str());
  return s ? 0 : 1;
}

std::string self_path() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "transfer") == 0 && std::strcmp(argv[2], "peer") == 0)
    return run_peer_mode(argc, argv);
  int runs = 5;
  bool json = false;
  TransferBenchOptions o;
  o.peer_program = self_path();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::atoi(recur::bench::flag_value(argc, argv, i, "bench_transfer"));
    else if (a == "--bytes") o.bytes = std::strtoull(recur::bench::flag_value(argc, argv, i, "bench_transfer"), nullptr, 10);
    else if (a == "--blocks") o.blocks = std::atoi(recur::bench::flag_value(argc, argv, i, "bench_transfer"));
    else if (a == "--rounds") o.rounds = std::atoi(recur::bench::flag_value(argc, argv, i, "bench_transfer"));
    else if (a == "--json") json = true;
    else {
      std::fprintf(stderr, "bench_transfer: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  // Per transport: each run's median GB/s, memcpy GB/s, fraction, block latency median.
  struct Series {
    std::vector<double> gbps, memcpy_gbps, fraction, latency_us, loopback_gbps, submit_us_per_mib;
    bool verified = true;
  };
  Series series[2];
  const char* names[2] = {"shm", "tcp"};
  for (int run = 0; run < runs; ++run) {
    for (int t = 0; t < 2; ++t) {
      o.transport = names[t];
      auto r = run_transfer_bench(o);
      if (!r) {
        std::fprintf(stderr, "bench_transfer: %s\n", r.error().to_string().c_str());
        return 1;
      }
      auto g = summarize_transfer_samples(r->round_gbps);
      auto m = summarize_transfer_samples(r->memcpy_gbps);
      series[t].gbps.push_back(g.median);
      series[t].memcpy_gbps.push_back(m.median);
      series[t].fraction.push_back(g.median / m.median);
      series[t].latency_us.push_back(summarize_transfer_samples(r->block_latency_us).median);
      series[t].submit_us_per_mib.push_back(summarize_transfer_samples(r->submit_us_per_mib).median);
      if (!r->loopback_gbps.empty()) series[t].loopback_gbps.push_back(summarize_transfer_samples(r->loopback_gbps).median);
      series[t].verified = series[t].verified && r->verified;
    }
  }
  nlohmann::json out = nlohmann::json::array();
  if (!json)
    fmt::print("KV transfer, {} runs interleaved, {} bytes in {} blocks of {} bytes, {} rounds per run\n", runs, o.bytes,
               o.blocks, o.bytes / uint64_t(o.blocks), o.rounds);
  for (int t = 0; t < 2; ++t) {
    auto g = summarize_transfer_samples(series[t].gbps);
    auto m = summarize_transfer_samples(series[t].memcpy_gbps);
    auto f = summarize_transfer_samples(series[t].fraction);
    auto l = summarize_transfer_samples(series[t].latency_us);
    auto lo = summarize_transfer_samples(series[t].loopback_gbps);
    auto sub = summarize_transfer_samples(series[t].submit_us_per_mib);
    if (json) {
      out.push_back({{"transport", names[t]}, {"gbps", {g.median, g.min, g.max}}, {"memcpy_gbps", {m.median, m.min, m.max}},
                     {"fraction", {f.median, f.min, f.max}}, {"block_latency_us", {l.median, l.min, l.max}},
                     {"tcp_loopback_gbps", {lo.median, lo.min, lo.max}},
                     {"submit_us_per_mib", {sub.median, sub.min, sub.max}}, {"verified", series[t].verified}});
    } else {
      fmt::print("  {}  {:.2f} GB/s [{:.2f} .. {:.2f}]   memcpy {:.2f} [{:.2f} .. {:.2f}]   fraction {:.2f} [{:.2f} .. {:.2f}]   "
                 "block {:.0f} us [{:.0f} .. {:.0f}]   verified {}\n",
                 names[t], g.median, g.min, g.max, m.median, m.min, m.max, f.median, f.min, f.max, l.median, l.min,
                 l.max, series[t].verified ? "yes" : "NO");
      fmt::print("       send_layer's CPU time on the caller's thread {:.1f} us per MiB [{:.1f} .. {:.1f}]\n", sub.median, sub.min,
                 sub.max);
      if (!series[t].loopback_gbps.empty())
        fmt::print("       raw loopback TCP of the same bytes {:.2f} GB/s [{:.2f} .. {:.2f}]\n", lo.median, lo.min, lo.max);
    }
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  return series[0].verified && series[1].verified ? 0 : 1;
}
