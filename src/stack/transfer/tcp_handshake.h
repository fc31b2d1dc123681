// The serving side of a TCP connection's handshake (frame.h: hello, and with a peer key the
// challenge and auth), run by the server's accept thread on a non-blocking socket: a connection
// costs no thread until it has proved the key, and one that says nothing, or too little, is
// closed at its deadline. The first frame must be a hello and, with a key, the second an auth;
// any other request before then is refused (error reply, connection closed) unread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "transfer/frame.h"
#include "transfer/memory_registry.h"
#include "transfer/socket_io.h"

namespace recur::transfer {

struct HandshakeConfig {
  std::string segment_name;
  std::string peer_key;  // empty: no authentication (hello answered with the region table)
  const MemoryRegistry* registry = nullptr;
};

class ServerHandshake {
 public:
  enum class Progress { kWaiting, kAuthenticated, kFailed };

  ServerHandshake(UniqueFd fd, std::string peer, std::chrono::steady_clock::time_point deadline)
      : fd_(std::move(fd)), peer_(std::move(peer)), deadline_(deadline) {}

  // Reads what has arrived and answers it. kFailed: refused (an error reply was sent where the
  // socket allowed) or the peer closed; why() says which.
  Progress advance(const HandshakeConfig& config);

  int fd() const { return fd_.get(); }
  UniqueFd take_fd() { return std::move(fd_); }
  const std::string& peer() const { return peer_; }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  const std::string& why() const { return why_; }
  // The peer closed the connection itself (not worth a warning: e.g. a port probe).
  bool peer_closed() const { return peer_closed_; }

 private:
  Progress refuse(uint64_t request_id, const Error& error);
  Progress answer_hello(const HandshakeConfig& config, std::span<const std::byte> payload);
  Progress answer_auth(const HandshakeConfig& config, std::span<const std::byte> payload);

  UniqueFd fd_;
  std::string peer_;  // "ip:port"
  std::chrono::steady_clock::time_point deadline_;
  std::vector<std::byte> buffer_;       // the frame being received
  std::optional<FrameHeader> header_;   // its header, once decoded
  std::optional<AuthBytes> challenge_;  // the nonce sent, once the hello was answered with one
  std::string why_;
  bool peer_closed_ = false;
};

}  // namespace recur::transfer
