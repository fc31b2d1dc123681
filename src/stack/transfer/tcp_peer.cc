#include "transfer/tcp_peer.h"

#include <poll.h>
#include <sys/socket.h>

#include <cstring>

#include "transfer/checksum.h"
#include "transfer/frame_io.h"
#include "transfer/peer_auth.h"

namespace recur::transfer {
namespace {

constexpr uint64_t kMaxErrorMessage = 64 * 1024;

}  // namespace

// The next handshake frame from the server (a reply or a challenge), its payload verified; an
// error reply becomes its error.
Result<HandshakeFrame> receive_handshake_frame(int fd, const std::string& label) {
  FrameHeaderBytes raw;
  RECUR_ASSIGN_OR_RETURN(size_t got, recv_all(fd, raw.data(), raw.size(), label));
  if (got != raw.size())
    return make_error(ErrorCode::kFailedPrecondition, "peer gone: {} closed the connection during hello", label);
  RECUR_ASSIGN_OR_RETURN(FrameHeader h, decode_frame_header(raw));
  if ((h.op != FrameOp::kReply && h.op != FrameOp::kChallenge) || h.length > kMaxErrorMessage + 1024 * 1024)
    return parse_error("{}: hello answered with a bad frame", label);
  HandshakeFrame frame{h, std::vector<std::byte>(h.length)};
  RECUR_ASSIGN_OR_RETURN(got, recv_all(fd, frame.payload.data(), frame.payload.size(), label));
  if (got != frame.payload.size())
    return make_error(ErrorCode::kFailedPrecondition, "peer gone: {} closed the connection during hello", label);
  RECUR_RETURN_IF_ERROR(verify_frame_payload(h, frame.payload));
  if (h.status != 0) return unexpected<Error>(reply_error(h.status, frame.payload).with_context(label));
  return frame;
}

// Sends hello and reads the reply: the peer's region table. With a peer key, answers the
// server's challenge and checks the server's proof (peer_auth.h); a client with a key refuses a
// server without one, and a client without one cannot pass a server that has one.
Result<std::vector<RegionEntry>> tcp_hello(int fd, const std::string& name, const std::string& label,
                                           const std::string& peer_key) {
  RECUR_RETURN_IF_ERROR(send_frame(fd, FrameOp::kHello, 0, 0, std::as_bytes(std::span(name.data(), name.size())), label));
  RECUR_ASSIGN_OR_RETURN(HandshakeFrame hello, receive_handshake_frame(fd, label));
  if (hello.header.op == FrameOp::kReply) {
    if (!peer_key.empty())
      return make_error(ErrorCode::kFailedPrecondition,
                        "{}: peer authentication failed: the peer serves without a peer key (its listener is open to "
                        "anyone) while this engine has one; refusing an unauthenticated peer (give both the same "
                        "RECUR_PEER_KEY)", label);
    return decode_region_table(hello.payload);
  }
  if (peer_key.empty())
    return make_error(ErrorCode::kFailedPrecondition,
                      "{}: peer authentication failed: the peer asks for a peer key and this engine has none (set "
                      "RECUR_PEER_KEY or --peer-key-file to the key of the engine serving it)", label);
  AuthBytes challenge;
  std::memcpy(challenge.data(), hello.payload.data(), challenge.size());  // kChallenge is exactly 32 bytes
  AuthPayload auth;
  RECUR_ASSIGN_OR_RETURN(auth.client_nonce, random_auth_nonce());
  auth.proof = peer_auth_proof(peer_key, AuthSide::kClient, challenge, name);
  RECUR_RETURN_IF_ERROR(send_frame(fd, FrameOp::kAuth, 0, 0, encode_auth_payload(auth), label));
  RECUR_ASSIGN_OR_RETURN(HandshakeFrame answer, receive_handshake_frame(fd, label));
  if (answer.header.op != FrameOp::kReply) return parse_error("{}: auth answered with a {} frame", label, int(answer.header.op));
  RECUR_ASSIGN_OR_RETURN(AuthReply reply, decode_auth_reply(answer.payload));
  if (!same_auth_bytes(reply.server_proof, peer_auth_proof(peer_key, AuthSide::kServer, auth.client_nonce, name)))
    return make_error(ErrorCode::kFailedPrecondition,
                      "{}: peer authentication failed: the peer's proof does not match this engine's peer key (it "
                      "holds another key, or is not the engine it claims to be)", label);
  return std::move(reply.regions);
}

TcpPeer::TcpPeer(TcpAddress address, std::chrono::milliseconds timeout, std::string peer_key)
    : address_(std::move(address)),
      label_(fmt::format("{}:{}/{}", address_.host, address_.port, address_.name)),
      timeout_(timeout),
      peer_key_(std::move(peer_key)) {}

Result<std::unique_ptr<TcpPeer>> TcpPeer::connect(const TcpAddress& address, std::chrono::milliseconds timeout,
                                                  std::string peer_key) {
  auto peer = std::unique_ptr<TcpPeer>(new TcpPeer(address, timeout, std::move(peer_key)));
  RECUR_RETURN_IF_ERROR(peer->reconnect());
  return peer;
}

TcpPeer::~TcpPeer() {
  {
    std::lock_guard lock(mu_);
    if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
  }
  if (receiver_.joinable()) receiver_.join();
  fail_all(Error(ErrorCode::kFailedPrecondition, fmt::format("segment {} closed", label_)));
}

Status TcpPeer::reconnect() {
  if (receiver_.joinable()) receiver_.join();  // it exits once the connection broke
  fd_.reset();
  auto fd = tcp_connect(address_.host, address_.port, timeout_);
  if (!fd)
    return make_error(fd.error().code() == ErrorCode::kTimeout ? ErrorCode::kTimeout : ErrorCode::kFailedPrecondition,
                      "peer gone: {}: {}", label_, fd.error().message());
  RECUR_RETURN_IF_ERROR(tcp_hello(fd->get(), address_.name, label_, peer_key_));
  fd_ = std::move(*fd);
  {
    std::lock_guard lock(mu_);
    broken_ = false;
    server_closing_ = false;
  }
  receiver_ = std::thread([this, fd = fd_.get()] { receive_loop(fd); });
  return ok_status();
}

void TcpPeer::drain() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (in_flight_.empty()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Result<std::vector<RegionEntry>> tcp_segment_regions(const TcpAddress& address, std::chrono::milliseconds timeout,
                                                     const std::string& peer_key) {
  std::string label = fmt::format("{}:{}/{}", address.host, address.port, address.name);
  RECUR_ASSIGN_OR_RETURN(UniqueFd fd, tcp_connect(address.host, address.port, timeout));
  return tcp_hello(fd.get(), address.name, label, peer_key);
}

void TcpPeer::fail_one(InFlight& f, const Error& why) {
  f.ref.batch->mark_segment_failed(f.ref.segment);
  f.ref.batch->fail(f.ref.index, why);
}

void TcpPeer::fail_all(const Error& why) {
  std::map<uint64_t, InFlight> failed;
  {
    std::lock_guard lock(mu_);
    broken_ = true;
    if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
    failed.swap(in_flight_);
  }
  for (auto& [id, f] : failed) fail_one(f, why);
}

void TcpPeer::send(const RequestRef& ref, FrameOp op, uint32_t region, uint64_t offset, std::byte* local,
                   uint64_t length) {
  bool broken;
  {
    std::lock_guard lock(mu_);
    broken = broken_ || server_closing_;
  }
  if (broken) {
    if (auto s = reconnect(); !s) {
      InFlight f{ref};
      fail_one(f, s.error());
      return;
    }
  }
  FrameHeader h;
  h.op = op;
  h.request_id = next_id_++;
  h.region = region;
  h.offset = offset;
  h.length = length;
  std::span<const std::byte> payload;
  if (op != FrameOp::kRead) payload = std::span<const std::byte>(local, length);
  h.checksum = checksum64(payload);
  {
    std::lock_guard lock(mu_);
    in_flight_[h.request_id] =
        InFlight{ref, op, local, length, offset, region, std::chrono::steady_clock::now() + timeout_};
  }
  FrameHeaderBytes raw = encode_frame_header(h);
  Status s = send_all(fd_.get(), raw.data(), raw.size(), label_, !payload.empty());
  if (s && !payload.empty()) s = send_all(fd_.get(), payload.data(), payload.size(), label_);
  if (!s) {
    fail_all(Error(s.error().code() == ErrorCode::kTimeout ? ErrorCode::kTimeout : ErrorCode::kFailedPrecondition,
                   fmt::format("peer gone: {} (region {} offset {} length {})", s.error().message(), region, offset,
                               length)));
  }
}

void TcpPeer::receive_loop(int fd) {
  std::vector<std::byte> message;
  bool server_failed = false;  // after an error reply the server closes the connection
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, 50);
    if (rc == 0) {
      std::unique_lock lock(mu_);
      if (broken_) return;
      if (in_flight_.empty() || std::chrono::steady_clock::now() < in_flight_.begin()->second.deadline) continue;
      const InFlight& oldest = in_flight_.begin()->second;
      Error why(ErrorCode::kTimeout,
                fmt::format("{}: no reply within {} ms (region {} offset {} length {}; {} requests in flight)", label_,
                            timeout_.count(), oldest.region, oldest.offset, oldest.length, in_flight_.size()));
      lock.unlock();
      fail_all(why);
      return;
    }
    FrameHeaderBytes raw;
    auto got = recv_all(fd, raw.data(), raw.size(), label_);
    auto gone = [&](std::string_view how) {
      fail_all(Error(ErrorCode::kFailedPrecondition, fmt::format("peer gone: {} {}", label_, how)));
    };
    if (!got) {  // the message already names the peer
      return fail_all(Error(got.error().code() == ErrorCode::kTimeout ? ErrorCode::kTimeout : ErrorCode::kFailedPrecondition,
                            fmt::format("peer gone: {}", got.error().message())));
    }
    if (*got != raw.size()) {
      if (server_failed) {
        return fail_all(Error(ErrorCode::kFailedPrecondition,
                              fmt::format("{}: not applied: an earlier request on this connection failed", label_)));
      }
      return gone("closed the connection");
    }
    auto h = decode_frame_header(raw);
    if (!h) return gone(fmt::format("sent a malformed reply: {}", h.error().message()));
    InFlight f;
    {
      std::lock_guard lock(mu_);
      auto it = in_flight_.find(h->request_id);
      if (h->op != FrameOp::kReply || it == in_flight_.end() || it != in_flight_.begin()) {
        f = {};
      } else {
        f = std::move(it->second);
        in_flight_.erase(it);
      }
    }
    if (f.ref.batch == nullptr) return gone(fmt::format("replied out of order (request {})", h->request_id));
    if (h->status != 0) {
      if (h->length > kMaxErrorMessage) {
        fail_one(f, Error(ErrorCode::kParse, fmt::format("{}: error reply of {} bytes", label_, h->length)));
        return gone("sent an oversized error reply");
      }
      message.resize(h->length);
      auto m = recv_all(fd, message.data(), message.size(), label_);
      Error why = (m && *m == message.size()) ? reply_error(h->status, message)
                                               : Error(ErrorCode::kFailedPrecondition, "error reply cut short");
      {
        std::lock_guard lock(mu_);
        server_closing_ = true;  // before the caller hears: a later send must reconnect, not use this connection
      }
      fail_one(f, why.with_context(label_));
      server_failed = true;
      continue;  // the server closes the connection next; that fails the rest
    }
    uint64_t expected = f.op == FrameOp::kRead ? f.length : 0;
    if (h->length != expected) {
      fail_one(f, Error(ErrorCode::kParse, fmt::format("{}: reply of {} bytes to a request of {}", label_, h->length, expected)));
      return gone("sent a reply of the wrong length");
    }
    if (f.op == FrameOp::kRead) {
      auto r = recv_all(fd, f.local, f.length, label_);
      if (!r || *r != f.length) {
        fail_one(f, Error(ErrorCode::kFailedPrecondition,
                          fmt::format("peer gone: {}: read reply cut short (region {} offset {} length {})", label_,
                                      f.region, f.offset, f.length)));
        return gone("closed the connection mid-reply");
      }
      if (auto v = verify_frame_payload(*h, std::span<const std::byte>(f.local, f.length)); !v) {
        fail_one(f, v.error().with_context(label_));
        return gone("sent a corrupted reply");
      }
    }
    f.ref.batch->complete(f.ref.index, f.length);
  }
}

}  // namespace recur::transfer
