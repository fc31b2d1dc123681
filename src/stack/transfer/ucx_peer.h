// The UCX transport's client side (built only with RECUR_WITH_UCX): one peer segment reached by
// one-sided UCX operations. Setup runs over the peer's TCP listener: the usual handshake (hello
// and, with a peer key, challenge and auth) and then kUcxConnect, whose reply brings the peer's
// worker address and a remote key per region (ucx_wire.h); an endpoint to that address then
// carries ucp_put_nbx (writes), ucp_get_nbx (reads) and the ready flags.
//
// Completion: a write completes when a flush issued after its put does (the bytes are in the
// peer's memory, as a TCP reply says), a read when its get does.
// Ordering: a flag store first flushes the endpoint (ucp_ep_flush_nbx: every earlier write of
// this peer is complete at the target) and only then puts the 8 bytes, so a reader that sees the
// flag sees the data, as over shared memory and TCP.
//
// Peer gone: the TCP control connection stays open; the peer's exit closes it, and the progress
// thread then fails every request in flight ("peer gone") and closes the endpoint. So does a
// failed request, and one not complete within the timeout. (UCX's own peer-failure mode is not
// used: in UCX 1.13 it excludes the shared-memory transports.) The next send reconnects.
// Range errors are caught here, against the region table the peer sent (one-sided operations
// have no target side to refuse them); a region the table lacks triggers one reconnect (the peer
// may have registered it since) before the request fails.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "transfer/frame.h"
#include "transfer/socket_io.h"
#include "transfer/tcp_peer.h"
#include "transfer/ucx_runtime.h"

namespace recur::transfer {

class UcxPeer final : public UcxWatcher {
 public:
  static Result<std::unique_ptr<UcxPeer>> connect(UcxRuntime& runtime, const TcpAddress& address,
                                                  std::chrono::milliseconds timeout, std::string peer_key);
  ~UcxPeer() override;  // fails what is still in flight ("segment closed")
  UcxPeer(const UcxPeer&) = delete;
  UcxPeer& operator=(const UcxPeer&) = delete;

  // As TcpPeer::send: the outcome reaches `ref` from the progress thread, or now.
  void send(const RequestRef& ref, FrameOp op, uint32_t region, uint64_t offset, std::byte* local, uint64_t length);
  void drain();
  // The transports UCX picked for this endpoint ("sm/posix, cma, tcp ..."), from ucp_ep_print_info.
  std::string transports();

  int watch_fd() const override { return control_fd_.load(); }
  void on_fd_ready() override;
  void on_tick(std::chrono::steady_clock::time_point now) override;

  // A request's UCX callback forwards here.
  void on_done(uint64_t id, ucs_status_t status);

 private:
  struct RemoteRegion {
    uint64_t base = 0;
    uint64_t length = 0;
    ucp_rkey_h rkey = nullptr;
  };
  struct InFlight {
    RequestRef ref;
    FrameOp op = FrameOp::kWrite;
    uint32_t region = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
    std::chrono::steady_clock::time_point deadline;
  };
  UcxPeer(UcxRuntime& runtime, TcpAddress address, std::chrono::milliseconds timeout, std::string peer_key);
  Status reconnect();  // conn_mu_ held
  void break_connection(const Error& why);
  void fail(const RequestRef& ref, const Error& why);
  std::string where(FrameOp op, uint32_t region, uint64_t offset, uint64_t length) const;
  // The remote address and key for [offset, offset + length) of `region`; conn_mu_ held.
  Result<std::pair<uint64_t, ucp_rkey_h>> resolve(uint32_t region, uint64_t offset, uint64_t length);

  UcxRuntime& runtime_;
  TcpAddress address_;
  std::string label_;  // "ucx://host:port/name"
  std::chrono::milliseconds timeout_;
  std::string peer_key_;

  // The connection: the transfer thread uses it, the progress thread may break it.
  std::mutex conn_mu_;
  UniqueFd control_;
  std::atomic<int> control_fd_{-1};
  ucp_ep_h ep_ = nullptr;
  std::map<uint32_t, RemoteRegion> regions_;

  std::mutex mu_;  // the requests in flight; taken inside UCX callbacks: never call UCX holding it
  std::map<uint64_t, InFlight> in_flight_;
  uint64_t next_id_ = 1;
  std::atomic<int> request_error_{UCS_OK};  // a request failed: the progress thread breaks the connection
  std::atomic<size_t> outstanding_{0};  // UCX requests whose callback has not run yet
};

}  // namespace recur::transfer
