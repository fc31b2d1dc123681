// `recur transfer bench`: KV transfer bandwidth and latency to a peer process over shared memory
// or TCP; `recur transfer peer`: that peer (started by bench, or by hand on another host).
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "cli/cli.h"
#include "transfer/transfer_bench.h"

namespace recur::cli {
namespace {

struct TransferBenchFlags {
  transfer::TransferBenchOptions options;
  bool json = false;
};

// RECUR_PEER_KEY, the key TCP peers prove to each other (docs/transfer.md, "Peer authentication").
std::string transfer_peer_key() {
  const char* key = std::getenv("RECUR_PEER_KEY");
  return key != nullptr ? key : "";
}

std::string transfer_self_path() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string("recur");
}

int run_transfer_bench_verb(TransferBenchFlags f) {
  f.options.peer_program = transfer_self_path();
  f.options.peer_key = transfer_peer_key();
  auto report = transfer::run_transfer_bench(f.options);
  if (!report) return report_failure(report.error());
  if (f.json)
    print_json(transfer::transfer_bench_json(*report));
  else
    fmt::print("{}", transfer::transfer_bench_table(*report));
  return report->verified ? kExitOk : kExitFailure;
}

void register_transfer(CLI::App& app, Invocation& inv) {
  auto* group = app.add_subcommand("transfer", "KV transfer engine tools (docs/transfer.md)");
  group->require_subcommand(1);

  auto f = std::make_shared<TransferBenchFlags>();
  auto* bench = group->add_subcommand(
      "bench", "Send KV blocks to a peer process (this binary, forked) and report GB/s per round, single-block "
               "latency and the memcpy roofline; the last round is read back and verified. Exits 1 if not.");
  bench->add_option("--transport", f->options.transport, "shm, tcp or ucx (UCX_TLS steers UCX: e.g. sm, tcp, rc)")
      ->check(CLI::IsMember({"shm", "tcp", "ucx"}))
      ->capture_default_str();
  bench->add_option("--bytes", f->options.bytes, "bytes per round")->check(CLI::Range(uint64_t(1), uint64_t(1) << 34))->capture_default_str();
  bench->add_option("--blocks", f->options.blocks, "blocks per round")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  bench->add_option("--rounds", f->options.rounds, "timed rounds")->check(CLI::Range(1, 10000))->capture_default_str();
  bench->add_option("--latency-samples", f->options.latency_samples, "single-block sends timed")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  bench->add_option("--peer", f->options.peer,
                    "a running `recur transfer peer` to send to instead of forking one: HOST:PORT/NAME (tcp, e.g. "
                    "on another host), ucx://HOST:PORT/NAME (ucx) or NAME (shared memory); its area must hold --bytes plus headers");
  bench->add_flag("--json", f->json, "print one JSON object instead of the table");
  bench->callback([&inv, f] { inv.run = [f] { return run_transfer_bench_verb(*f); }; });

  auto p = std::make_shared<transfer::TransferPeerOptions>();
  auto* peer = group->add_subcommand(
      "peer", "Serve a segment with a receive area; print 'ready SEGMENT_OFFSET PORT' and run until stdin closes.");
  peer->add_option("--segment", p->segment, "segment name")->required();
  peer->add_option("--listen", p->listen, "host:port for TCP peers (port 0 = any); default: shared memory only");
  peer->add_flag("--ucx", p->ucx, "also serve UCX peers (ucx://HOST:PORT/NAME; needs --listen)");
  peer->add_option("--bytes", p->bytes, "receive area bytes")->required()->check(CLI::Range(uint64_t(1), uint64_t(1) << 36));
  peer->callback([&inv, p] {
    inv.run = [p] {
      p->peer_key = transfer_peer_key();
      auto s = transfer::run_transfer_peer(*p, stdout);
      return s ? kExitOk : report_failure(s.error());
    };
  });
}

}  // namespace

RECUR_CLI_COMMAND(transfer, register_transfer);

}  // namespace recur::cli
