#include "transfer/transfer_bench.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstring>
#include <thread>

#include "core/aligned_buffer.h"
#include "transfer/kv_transfer.h"
#include "transfer/socket_io.h"
#include "transfer/transfer_engine.h"

namespace recur::transfer {
namespace {

using BenchClock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double bench_thread_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double seconds_since(BenchClock::time_point t0) { return std::chrono::duration<double>(BenchClock::now() - t0).count(); }

// The peer process: its pid, its stdin (closing it ends the peer) and what it announced.
struct BenchPeer {
  pid_t pid = -1;
  int stdin_fd = -1;
  uint64_t area_offset = 0;
  int port = 0;

  ~BenchPeer() {
    if (stdin_fd >= 0) ::close(stdin_fd);
    if (pid > 0) {
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  }
};

Status start_bench_peer(BenchPeer& peer, const std::string& program, const std::string& segment, bool tcp,
                        bool ucx, uint64_t bytes) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return io_error("pipe: {}", std::strerror(errno));
  std::vector<std::string> args = {program, "transfer", "peer", "--segment", segment, "--bytes", std::to_string(bytes)};
  if (tcp) {
    args.push_back("--listen");
    args.push_back("127.0.0.1:0");
  }
  if (ucx) args.push_back("--ucx");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  if (pid < 0) {
    ::close(in[1]);
    ::close(out[0]);
    return io_error("fork: {}", std::strerror(errno));
  }
  peer.pid = pid;
  peer.stdin_fd = in[1];
  std::string line;
  char c;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  ::close(out[0]);
  unsigned long long offset = 0;
  int port = 0;
  if (std::sscanf(line.c_str(), "ready %llu %d", &offset, &port) != 2)
    return make_error(ErrorCode::kFailedPrecondition, "transfer bench: peer '{}' did not start (said '{}')", program, line);
  peer.area_offset = offset;
  peer.port = port;
  return ok_status();
}

double percentile_of(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1) + 0.5)];
}

}  // namespace

Result<double> tcp_loopback_gbps(uint64_t bytes) {
  int port = 0;
  RECUR_ASSIGN_OR_RETURN(UniqueFd listener, tcp_listen("127.0.0.1", 0, &port));
  RECUR_ASSIGN_OR_RETURN(UniqueFd client, tcp_connect("127.0.0.1", port, 10s));
  UniqueFd server(::accept(listener.get(), nullptr, nullptr));
  if (!server.valid()) return io_error("loopback accept: {}", std::strerror(errno));
  constexpr size_t kChunk = 1 << 20;
  uint64_t received = 0;
  std::thread sink([&] {
    std::vector<std::byte> buf(kChunk);
    while (received < bytes) {
      ssize_t n = ::recv(server.get(), buf.data(), buf.size(), 0);
      if (n <= 0) break;
      received += uint64_t(n);
    }
  });
  std::vector<std::byte> chunk(kChunk, std::byte{1});
  auto t0 = BenchClock::now();
  Status sent = ok_status();
  for (uint64_t done = 0; done < bytes && sent; done += kChunk)
    sent = send_all(client.get(), chunk.data(), size_t(std::min<uint64_t>(kChunk, bytes - done)), "loopback");
  if (!sent) ::shutdown(server.get(), SHUT_RDWR);
  sink.join();
  double s = seconds_since(t0);
  RECUR_RETURN_IF_ERROR(sent);
  return double(received) / s / 1e9;
}

TransferBenchSummary summarize_transfer_samples(std::vector<double> samples) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  return {percentile_of(samples, 0.5), samples.front(), samples.back()};
}

Status run_transfer_peer(const TransferPeerOptions& options, std::FILE* out) {
  RECUR_ASSIGN_OR_RETURN(auto engine, TransferEngine::create({.segment_name = options.segment, .listen = options.listen,
                                                          .peer_key = options.peer_key, .ucx = options.ucx}));
  RECUR_ASSIGN_OR_RETURN(void* area, engine->allocate_shared(options.bytes));
  RECUR_ASSIGN_OR_RETURN(RegionInfo region, engine->register_memory(area, options.bytes, "cpu"));
  std::fprintf(out, "ready %llu %d\n", static_cast<unsigned long long>(region.segment_offset), engine->port());
  std::fflush(out);
  char buf[256];
  while (::read(0, buf, sizeof buf) > 0) {
  }
  return ok_status();
}

Result<TransferBenchReport> run_transfer_bench(const TransferBenchOptions& o) {
  if (o.transport != "shm" && o.transport != "tcp" && o.transport != "ucx")
    return invalid_argument("transfer bench: transport '{}', expected shm, tcp or ucx", o.transport);
  if (o.blocks <= 0 || o.bytes < uint64_t(o.blocks) || o.rounds <= 0 || o.latency_samples < 0)
    return invalid_argument("transfer bench: {} bytes in {} blocks, {} rounds: expected blocks >= 1, bytes >= blocks, rounds >= 1",
                            o.bytes, o.blocks, o.rounds);
  const bool ucx = o.transport == "ucx" || o.peer.starts_with("ucx://");
  if (ucx && !ucx_transport_built())
    return make_error(ErrorCode::kUnsupported, "transfer bench: the ucx transport is not in this build (configure with "
                                               "libucx-dev installed and -DRECUR_WITH_UCX=ON)");
  // ucx, too, reaches the peer through its TCP listener (the authenticated setup).
  const bool tcp = ucx || o.transport == "tcp" || o.peer.find('/') != std::string::npos;
  TransferBenchReport report;
  report.options = o;
  report.options.transport = ucx ? "ucx" : tcp ? "tcp" : "shm";
  report.block_bytes = o.bytes / uint64_t(o.blocks);
  KvLayout layout{1, o.blocks, report.block_bytes};

  std::string stem = fmt::format("bench-{}", ::getpid());
  BenchPeer peer;
  if (o.peer.empty())
    RECUR_RETURN_IF_ERROR(start_bench_peer(peer, o.peer_program, stem + "-peer", tcp, ucx, layout.sequence_bytes()));
  RECUR_ASSIGN_OR_RETURN(auto engine, TransferEngine::create({.segment_name = stem + "-self", .timeout = 10s, .peer_key = o.peer_key}));
  AlignedBuffer kv(report.block_bytes * size_t(o.blocks), false);
  AlignedBuffer copy(kv.size(), false);
  for (size_t i = 0; i < kv.size(); ++i) kv.data()[i] = std::byte(i * 31 + 7);
  std::memset(copy.data(), 0, copy.size());
  RECUR_RETURN_IF_ERROR(engine->register_memory(kv.data(), kv.size(), "cpu"));
  std::string target = !o.peer.empty() ? o.peer
                       : tcp ? fmt::format("{}127.0.0.1:{}/{}-peer", ucx ? "ucx://" : "", peer.port, stem)
                                       : stem + "-peer";
  RECUR_ASSIGN_OR_RETURN(SegmentHandle seg, engine->open_segment(target));
  RECUR_ASSIGN_OR_RETURN(report.path, engine->segment_transport(seg));
  if (!o.peer.empty()) {
    RECUR_ASSIGN_OR_RETURN(std::vector<RegionInfo> regions, engine->segment_regions(seg));
    if (regions.empty() || regions.front().length < layout.sequence_bytes())
      return make_error(ErrorCode::kFailedPrecondition, "transfer bench: peer {} needs a region of {} bytes (has {})",
                        o.peer, layout.sequence_bytes(), regions.empty() ? 0 : regions.front().length);
    peer.area_offset = regions.front().segment_offset;
  }
  std::vector<KvPage> pages;
  for (int b = 0; b < o.blocks; ++b) pages.push_back({kv.data() + size_t(b) * report.block_bytes, report.block_bytes});

  KvSender sender(*engine, seg, layout);
  int64_t seq = 0;
  // Of the last send: the CPU time send_layer takes on its caller's thread (the prefill thread);
  // CPU, not wall time, which on a loaded machine also counts waiting for a core.
  double submit_s = 0;
  auto send_one = [&](std::span<const KvPage> p, uint64_t generation) -> Result<double> {
    RECUR_RETURN_IF_ERROR(sender.begin_sequence(seq, peer.area_offset, generation));
    auto t0 = BenchClock::now();
    double cpu0 = bench_thread_cpu_s();
    RECUR_RETURN_IF_ERROR(sender.send_layer(seq, 0, p));
    submit_s = bench_thread_cpu_s() - cpu0;
    RECUR_RETURN_IF_ERROR(sender.finish_sequence(seq, 60s));
    ++seq;
    return seconds_since(t0);
  };
  uint64_t generation = 0;
  RECUR_RETURN_IF_ERROR(send_one(pages, ++generation));  // warm-up: page faults, connection, caches
  for (int r = 0; r < o.rounds; ++r) {
    // Interleaved with the roofline: the same bytes copied locally.
    auto t0 = BenchClock::now();
    std::memcpy(copy.data(), kv.data(), kv.size());
    report.memcpy_gbps.push_back(double(kv.size()) / seconds_since(t0) / 1e9);
    RECUR_ASSIGN_OR_RETURN(double s, send_one(pages, ++generation));
    report.round_gbps.push_back(double(kv.size()) / s / 1e9);
    report.submit_us_per_mib.push_back(submit_s * 1e6 / (double(kv.size()) / double(1 << 20)));
    if (tcp && o.peer.empty()) {  // the loopback ceiling says nothing about another host's link
      RECUR_ASSIGN_OR_RETURN(double loopback, tcp_loopback_gbps(kv.size()));
      report.loopback_gbps.push_back(loopback);
    }
  }
  for (int i = 0; i < o.latency_samples; ++i) {
    RECUR_ASSIGN_OR_RETURN(double s, send_one(std::span(pages).first(1), ++generation));
    report.block_latency_us.push_back(s * 1e6);
  }
  // Read the area back (layer 0 of the last full round, then the single blocks over block 0)
  // and verify every block with its checksum.
  std::vector<std::byte> area(layout.sequence_bytes());
  RECUR_RETURN_IF_ERROR(engine->register_memory(area.data(), area.size(), "cpu"));
  RECUR_ASSIGN_OR_RETURN(BatchId b, engine->allocate_batch(1));
  RECUR_RETURN_IF_ERROR(engine->submit(b, std::vector<TransferRequest>{{TransferOpcode::kRead, area.data(), seg,
                                                                        peer.area_offset, area.size()}}));
  RECUR_RETURN_IF_ERROR(engine->wait_batch(b, 60s));
  uint64_t last_full = uint64_t(o.rounds) + 1;
  int64_t last_full_seq = int64_t(o.rounds);
  std::vector<std::byte> out(report.block_bytes);
  bool ok = true;
  for (int blk = 0; blk < o.blocks; ++blk) {
    bool single = blk == 0 && o.latency_samples > 0;
    KvBlockId id{single ? seq - 1 : last_full_seq, 0, blk};
    auto got = try_read_kv_block(area.data() + layout.slot_offset(0, blk), layout.slot_bytes(), id,
                                 single ? generation : last_full, out);
    ok = ok && got && *got && std::memcmp(out.data(), pages[size_t(blk)].data, out.size()) == 0;
  }
  report.verified = ok;
  return report;
}

nlohmann::json transfer_bench_json(const TransferBenchReport& r) {
  auto summary = [](const std::vector<double>& v) {
    TransferBenchSummary s = summarize_transfer_samples(v);
    return nlohmann::json{{"median", s.median}, {"min", s.min}, {"max", s.max}, {"samples", v}};
  };
  TransferBenchSummary gbps = summarize_transfer_samples(r.round_gbps);
  TransferBenchSummary roof = summarize_transfer_samples(r.memcpy_gbps);
  return {{"transport", r.options.transport},
          {"path", r.path},
          {"bytes", r.options.bytes},
          {"blocks", r.options.blocks},
          {"block_bytes", r.block_bytes},
          {"rounds", r.options.rounds},
          {"gbps", summary(r.round_gbps)},
          {"memcpy_gbps", summary(r.memcpy_gbps)},
          {"fraction_of_memcpy", roof.median > 0 ? gbps.median / roof.median : 0.0},
          {"tcp_loopback_gbps", summary(r.loopback_gbps)},
          {"submit_us_per_mib", summary(r.submit_us_per_mib)},
          {"block_latency_us", {{"median", percentile_of(r.block_latency_us, 0.5)},
                                {"p90", percentile_of(r.block_latency_us, 0.9)},
                                {"samples", r.block_latency_us.size()}}},
          {"verified", r.verified}};
}

std::string transfer_bench_table(const TransferBenchReport& r) {
  TransferBenchSummary gbps = summarize_transfer_samples(r.round_gbps);
  TransferBenchSummary roof = summarize_transfer_samples(r.memcpy_gbps);
  std::string s = fmt::format("transfer bench: {} , {} bytes in {} blocks of {} bytes, {} rounds\n", r.path,
                              r.options.bytes, r.options.blocks, r.block_bytes, r.options.rounds);
  s += fmt::format("  bandwidth      {:.2f} GB/s median [{:.2f} .. {:.2f}]\n", gbps.median, gbps.min, gbps.max);
  s += fmt::format("  memcpy         {:.2f} GB/s median [{:.2f} .. {:.2f}]  (roofline; transfer at {:.2f} of it)\n",
                   roof.median, roof.min, roof.max, roof.median > 0 ? gbps.median / roof.median : 0.0);
  if (!r.loopback_gbps.empty()) {
    TransferBenchSummary lo = summarize_transfer_samples(r.loopback_gbps);
    s += fmt::format("  tcp loopback   {:.2f} GB/s median [{:.2f} .. {:.2f}]  (raw stream of the same bytes; transfer at {:.2f} of it)\n",
                     lo.median, lo.min, lo.max, gbps.median / lo.median);
  }
  TransferBenchSummary submit = summarize_transfer_samples(r.submit_us_per_mib);
  s += fmt::format("  submit cost    {:.0f} us per MiB median [{:.0f} .. {:.0f}]  (send_layer's CPU time on the caller's thread)\n",
                   submit.median, submit.min, submit.max);
  s += fmt::format("  block latency  {:.1f} us median, {:.1f} us p90 ({} single blocks of {} bytes)\n",
                   percentile_of(r.block_latency_us, 0.5), percentile_of(r.block_latency_us, 0.9),
                   r.block_latency_us.size(), r.block_bytes);
  s += fmt::format("  verified       {}\n", r.verified ? "yes (read back, every block's checksum)" : "NO");
  return s;
}

}  // namespace recur::transfer
