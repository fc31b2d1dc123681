// The TCP transport's client side: one connection to a peer's segment. The transfer thread sends
// frames (requests are pipelined); a receiver thread reads the replies in order, completes the
// requests, and fails every request in flight when the peer closes the connection, resets it or
// stays silent past the timeout, so a batch never hangs on a dead peer. The next send reconnects.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "transfer/batch.h"
#include "transfer/frame.h"
#include "transfer/socket_io.h"

namespace recur::transfer {

// Who to tell when a request ends.
struct RequestRef {
  std::shared_ptr<Batch> batch;
  size_t index = 0;
  SegmentHandle segment = -1;
};

// The client side of the handshake on a connected socket: hello and, with a peer key, the
// challenge and auth (frame.h "Peer authentication"). Returns the peer's region table.
Result<std::vector<RegionEntry>> tcp_hello(int fd, const std::string& name, const std::string& label,
                                           const std::string& peer_key);
// The next reply or challenge from the server, its payload verified; an error reply becomes its error.
struct HandshakeFrame {
  FrameHeader header;
  std::vector<std::byte> payload;
};
Result<HandshakeFrame> receive_handshake_frame(int fd, const std::string& label);

// The regions a peer reports now (a short connection of its own, authenticated like any).
Result<std::vector<RegionEntry>> tcp_segment_regions(const TcpAddress& address, std::chrono::milliseconds timeout,
                                                     const std::string& peer_key);

class TcpPeer {
 public:
  // Connects and exchanges hello (the peer must serve `address.name`), proving `peer_key` when
  // the peer asks for it (frame.h, "Peer authentication"); so does every reconnect.
  static Result<std::unique_ptr<TcpPeer>> connect(const TcpAddress& address, std::chrono::milliseconds timeout,
                                                  std::string peer_key);
  ~TcpPeer();  // fails what is still in flight ("segment closed")
  TcpPeer(const TcpPeer&) = delete;
  TcpPeer& operator=(const TcpPeer&) = delete;

  // Sends one request (kRead, kWrite or kStoreFlag); `local` is the source (write, flag) or the
  // destination (read). The outcome reaches `ref` later, from the receiver thread (or now, if
  // the send itself fails).
  void send(const RequestRef& ref, FrameOp op, uint32_t region, uint64_t offset, std::byte* local, uint64_t length);
  // Returns once nothing is in flight (replies arrived, or the receiver failed them: the timeout
  // bounds the wait).
  void drain();
  const std::string& label() const { return label_; }

 private:
  struct InFlight {
    RequestRef ref;
    FrameOp op = FrameOp::kWrite;
    std::byte* local = nullptr;
    uint64_t length = 0;
    uint64_t offset = 0;
    uint32_t region = 0;
    std::chrono::steady_clock::time_point deadline;
  };
  TcpPeer(TcpAddress address, std::chrono::milliseconds timeout, std::string peer_key);
  Status reconnect();
  void receive_loop(int fd);
  // Fails every request in flight with `why` and marks the connection broken.
  void fail_all(const Error& why);
  void fail_one(InFlight& f, const Error& why);

  TcpAddress address_;
  std::string label_;  // "host:port/name"
  std::chrono::milliseconds timeout_;
  std::string peer_key_;
  UniqueFd fd_;
  std::thread receiver_;
  uint64_t next_id_ = 1;
  std::mutex mu_;
  bool broken_ = true;
  bool server_closing_ = false;  // it sent an error reply, so it closes the connection next
  std::map<uint64_t, InFlight> in_flight_;
};

}  // namespace recur::transfer
