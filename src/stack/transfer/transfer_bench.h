// `recur transfer bench`: KV blocks from this process to a peer process (the same binary run as
// `recur transfer peer`), over shared memory, TCP or UCX on this host. Reports bandwidth per round
// (one layer of `blocks` blocks through KvSender, submit to last completion), the latency of
// single blocks, and the in-run memcpy bandwidth of the same bytes as the roofline. The last
// round is read back and every block verified.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace recur::transfer {

struct TransferBenchOptions {
  std::string transport = "shm";  // shm | tcp | ucx (UCX_TLS picks UCX's own transports)
  uint64_t bytes = uint64_t(64) << 20;  // per round
  int blocks = 64;                 // per round; block size = bytes / blocks
  int rounds = 5;
  int latency_samples = 64;
  std::string peer_program;  // the recur binary to run as the peer
  // A peer already running (`recur transfer peer`, e.g. on another host): "HOST:PORT/NAME" or a
  // shared-memory segment name. Its first region is the receive area. Empty: fork one here.
  std::string peer;
  std::string peer_key;  // TCP peer authentication (RECUR_PEER_KEY; the forked peer inherits it)
};

struct TransferBenchReport {
  TransferBenchOptions options;
  uint64_t block_bytes = 0;
  std::vector<double> round_gbps;        // per round
  std::vector<double> memcpy_gbps;       // per round, same bytes, local
  std::vector<double> loopback_gbps;     // tcp only, per round: the same bytes streamed raw over loopback TCP
  std::vector<double> block_latency_us;  // per single-block sample
  std::vector<double> submit_us_per_mib; // per round: send_layer's CPU time on the caller's thread
  bool verified = false;
  std::string path;  // how the blocks travelled: "shm", "tcp" or "ucx (<UCX's lanes>)"
};

Result<TransferBenchReport> run_transfer_bench(const TransferBenchOptions& options);

// Streams `bytes` over a fresh loopback TCP connection (1 MiB sends, one receiving thread): the
// ceiling of the TCP transport on this host. GB/s.
Result<double> tcp_loopback_gbps(uint64_t bytes);

// The peer: serves a segment with a receive area of `bytes`, prints "ready SEGMENT_OFFSET PORT"
// on `out`, and returns when standard input closes.
struct TransferPeerOptions {
  std::string segment;
  std::string listen;  // empty = shared memory only
  uint64_t bytes = 0;
  std::string peer_key;  // TCP peer authentication (RECUR_PEER_KEY); empty: an open listener
  bool ucx = false;      // serve UCX peers too (needs listen)
};
Status run_transfer_peer(const TransferPeerOptions& options, std::FILE* out);

nlohmann::json transfer_bench_json(const TransferBenchReport& report);
std::string transfer_bench_table(const TransferBenchReport& report);

// Median and [min, max] of samples (a copy is sorted).
struct TransferBenchSummary {
  double median = 0, min = 0, max = 0;
};
TransferBenchSummary summarize_transfer_samples(std::vector<double> samples);

}  // namespace recur::transfer
