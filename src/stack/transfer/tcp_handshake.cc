#include "transfer/tcp_handshake.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>

#include "transfer/frame_io.h"
#include "transfer/peer_auth.h"

namespace recur::transfer {

ServerHandshake::Progress ServerHandshake::refuse(uint64_t request_id, const Error& error) {
  why_ = error.message();
  (void)send_error_reply(fd_.get(), request_id, error, peer_);
  return Progress::kFailed;
}

ServerHandshake::Progress ServerHandshake::advance(const HandshakeConfig& config) {
  for (;;) {
    const size_t want = kFrameHeaderBytes + (header_ ? header_->length : 0);
    if (buffer_.size() < want) {
      const size_t have = buffer_.size();
      buffer_.resize(want);
      ssize_t n = ::recv(fd_.get(), buffer_.data() + have, want - have, MSG_DONTWAIT);
      buffer_.resize(have + size_t(std::max<ssize_t>(n, 0)));
      if (n == 0) {
        why_ = "closed the connection during the handshake";
        peer_closed_ = true;
        return Progress::kFailed;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Progress::kWaiting;
        why_ = fmt::format("receive: {}", std::strerror(errno));
        return Progress::kFailed;
      }
      continue;
    }
    if (!header_) {
      auto h = decode_frame_header(buffer_);
      if (!h) return refuse(0, h.error());
      const FrameOp expected = challenge_ ? FrameOp::kAuth : FrameOp::kHello;
      if (h->op != expected)
        return refuse(h->request_id,
                      Error(ErrorCode::kFailedPrecondition,
                            challenge_ ? fmt::format("peer authentication failed: frame opcode {} where the answer to "
                                                     "the challenge (auth, 7) was expected",
                                                     int(h->op))
                                       : fmt::format("frame opcode {} before the handshake: a connection must start "
                                                     "with hello (1)",
                                                     int(h->op))));
      header_ = *h;  // its payload is bounded (hello: 64 bytes, auth: 64), so it is read next
      continue;
    }
    const FrameHeader h = *header_;
    const std::span<const std::byte> payload = std::span<const std::byte>(buffer_).subspan(kFrameHeaderBytes);
    if (auto v = verify_frame_payload(h, payload); !v) return refuse(h.request_id, v.error());
    const Progress p = h.op == FrameOp::kHello ? answer_hello(config, payload) : answer_auth(config, payload);
    buffer_.clear();
    header_.reset();
    if (p != Progress::kWaiting) return p;
  }
}

ServerHandshake::Progress ServerHandshake::answer_hello(const HandshakeConfig& config, std::span<const std::byte> payload) {
  const uint64_t id = header_->request_id;
  std::string_view asked(reinterpret_cast<const char*>(payload.data()), payload.size());
  if (asked != config.segment_name)
    return refuse(id, Error(ErrorCode::kNotFound, fmt::format("unknown segment '{}': this engine serves '{}'", asked,
                                                              config.segment_name)));
  Status sent = ok_status();
  if (config.peer_key.empty()) {
    sent = send_frame(fd_.get(), FrameOp::kReply, id, 0, encode_region_table(config.registry->table()), peer_);
    if (sent) return Progress::kAuthenticated;
  } else {
    auto nonce = random_auth_nonce();
    if (!nonce) return refuse(id, nonce.error());
    challenge_ = *nonce;
    sent = send_frame(fd_.get(), FrameOp::kChallenge, id, 0, *challenge_, peer_);
    if (sent) return Progress::kWaiting;
  }
  why_ = sent.error().message();
  return Progress::kFailed;
}

ServerHandshake::Progress ServerHandshake::answer_auth(const HandshakeConfig& config, std::span<const std::byte> payload) {
  const uint64_t id = header_->request_id;
  auto auth = decode_auth_payload(payload);
  if (!auth) return refuse(id, auth.error());
  const AuthBytes expected = peer_auth_proof(config.peer_key, AuthSide::kClient, *challenge_, config.segment_name);
  if (!same_auth_bytes(auth->proof, expected))
    return refuse(id, Error(ErrorCode::kFailedPrecondition,
                            fmt::format("peer authentication failed: wrong peer key for segment '{}' (the proof does "
                                        "not match this engine's key; give both sides the same RECUR_PEER_KEY)",
                                        config.segment_name)));
  const AuthBytes proof = peer_auth_proof(config.peer_key, AuthSide::kServer, auth->client_nonce, config.segment_name);
  Status sent = send_frame(fd_.get(), FrameOp::kReply, id, 0, encode_auth_reply(proof, config.registry->table()), peer_);
  if (sent) return Progress::kAuthenticated;
  why_ = sent.error().message();
  return Progress::kFailed;
}

}  // namespace recur::transfer
