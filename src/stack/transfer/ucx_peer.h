// The UCX transport's client side (built only with RECUR_WITH_UCX): one peer segment reached by
// one-sided UCX operations. Setup runs over the peer's TCP listener: the usual handshake (hello
// and, with a peer key, challenge and auth) and then kUcxConnect, whose reply brings the peer's
// worker address and a remote key per region (ucx_wire.h); an endpoint to that address then
// carries ucp_put_nbx (writes), ucp_get_nbx (reads) and the ready flags.
//
// Threads: the transfer thread calls send(); the TCP part of a (re)connect runs there, every UCX
// call on the runtime's progress thread (ucx_runtime.h), which keeps this peer's requests in
// submission order.
// Completion: a write completes when a flush issued after its put does (the bytes are in the
// peer's memory, as a TCP reply says), a read when its get does.
// Ordering: a flag store waits for a flush of the endpoint (every earlier write of this peer is
// complete at the target) and only then puts its 8 bytes; requests behind it wait their turn, so
// a reader that sees the flag sees the data, as over shared memory and TCP. A request of a batch
// whose earlier request to this segment failed is not run.
// Without native RMA (no rma lane: UCX 1.13 over tcp, where every put is emulated by messages the
// target applies, fragment by fragment), writes and flags go as active messages instead
// (ucx_am_wire.h; large blocks by rendezvous, received in place: ucx_block_receiver.h): a write
// completes when its send has and the target acknowledged the bytes in place. Blocks go out
// without waiting (pipelined, as over recur's TCP): the target stores a flag only once every
// earlier block of the link is in place, and acknowledges it then. A read waits until every
// earlier block is acknowledged.
//
// Peer gone: the TCP control connection stays open; the peer's exit closes it, and the progress
// thread then fails every request queued or in flight ("peer gone") and closes the endpoint. So
// does a failed request, and one not complete within the timeout. (UCX's own peer-failure mode
// is not used: in UCX 1.13 it excludes the shared-memory transports.) The next send reconnects.
// Range errors are caught against the region table the peer sent (one-sided operations have no
// target side to refuse them); a region the table lacks triggers one reconnect (the peer may
// have registered it since) before the request fails.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "core/status.h"
#include "transfer/frame.h"
#include "transfer/socket_io.h"
#include "transfer/tcp_peer.h"
#include "transfer/ucx_runtime.h"

namespace recur::transfer {

class UcxLink;

class UcxPeer {
 public:
  static Result<std::unique_ptr<UcxPeer>> connect(UcxRuntime& runtime, const TcpAddress& address,
                                                  std::chrono::milliseconds timeout, std::string peer_key);
  ~UcxPeer();  // fails what is still queued or in flight ("segment closed")
  UcxPeer(const UcxPeer&) = delete;
  UcxPeer& operator=(const UcxPeer&) = delete;

  // As TcpPeer::send: the outcome reaches `ref` from the progress thread, or now.
  void send(const RequestRef& ref, FrameOp op, uint32_t region, uint64_t offset, std::byte* local, uint64_t length);
  void drain();
  // The transports UCX picked for the endpoint ("posix/memory.0, sysv/memory.0"), from ucp_ep_print_info.
  std::string transports();

 private:
  UcxPeer(UcxRuntime& runtime, TcpAddress address, std::chrono::milliseconds timeout, std::string peer_key);
  Status reconnect();  // the transfer thread's (or connect's)

  UcxRuntime& runtime_;
  TcpAddress address_;
  std::string label_;  // "ucx://host:port/name"
  std::chrono::milliseconds timeout_;
  std::string peer_key_;
  std::set<uint32_t> known_regions_;  // in the last connect reply
  std::shared_ptr<UcxLink> link_;     // the progress thread's side (UCX callbacks hold it too)
};

}  // namespace recur::transfer
