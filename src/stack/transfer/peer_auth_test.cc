// Peer authentication of the TCP transport (peer_auth.h, tcp_handshake.h): the right key
// passes, a wrong or missing one is refused on both sides with the peer named, a client that
// says nothing is closed at the handshake deadline without holding up others, and no request is
// served before the handshake.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "core/aligned_buffer.h"
#include "transfer/checksum.h"
#include "transfer/frame.h"
#include "transfer/peer_auth.h"
#include "transfer/socket_io.h"
#include "transfer/transfer_engine.h"
#include "transfer/transfer_test_util.h"

namespace recur::transfer {
namespace {

using namespace std::chrono_literals;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A listening engine with one registered 4 KiB region (zeroed).
struct KeyedServer {
  explicit KeyedServer(const std::string& key, std::chrono::milliseconds timeout = 5000ms)
      : name(testing::unique_segment("auth-server")), memory(4096, true) {
    auto e = TransferEngine::create({.segment_name = name, .listen = "127.0.0.1:0", .timeout = timeout, .peer_key = key});
    EXPECT_TRUE(e) << e.error().message();
    engine = std::move(*e);
    std::memset(memory.data(), 0, memory.size());
    region = *engine->register_memory(memory.data(), memory.size(), "cpu:0");
  }
  std::string address() const { return fmt::format("127.0.0.1:{}/{}", engine->port(), name); }

  std::string name;
  AlignedBuffer memory;
  std::unique_ptr<TransferEngine> engine;
  RegionInfo region;
};

// Opens the server's segment with `key` and writes 1 KiB of pattern `seed`: "" on success, else the error.
std::string write_with_key(const KeyedServer& server, const std::string& key, uint64_t seed) {
  // The buffer outlives the engine: its transfer thread may still be reading it when a refused
  // batch reports its error.
  AlignedBuffer local(1024, true);
  auto e = TransferEngine::create({.segment_name = testing::unique_segment("auth-client"), .timeout = 2000ms, .peer_key = key});
  if (!e) return e.error().message();
  testing::fill_pattern(local.data(), local.size(), seed);
  EXPECT_TRUE((*e)->register_memory(local.data(), local.size(), "cpu:0"));
  auto seg = (*e)->open_segment(server.address());
  if (!seg) return seg.error().message();
  BatchId b = testing::run_batch(**e, {{TransferOpcode::kWrite, local.data(), *seg, server.region.segment_offset, 1024}});
  auto st = (*e)->status(b, 0);
  return st->state == TransferState::kCompleted ? "" : st->error;
}

// One frame on a raw socket.
void send_test_frame(int fd, FrameOp op, uint32_t region, uint64_t offset, std::span<const std::byte> payload) {
  FrameHeader h;
  h.op = op;
  h.request_id = 9;
  h.region = region;
  h.offset = offset;
  h.length = payload.size();
  h.checksum = checksum64(payload);
  FrameHeaderBytes raw = encode_frame_header(h);
  ASSERT_TRUE(send_all(fd, raw.data(), raw.size(), "test", true));
  ASSERT_TRUE(send_all(fd, payload.data(), payload.size(), "test"));
}

// Reads one frame: its header and payload.
std::pair<FrameHeader, std::vector<std::byte>> receive_frame(int fd) {
  FrameHeaderBytes raw;
  auto got = recv_all(fd, raw.data(), raw.size(), "test");
  EXPECT_TRUE(got && *got == raw.size());
  auto h = decode_frame_header(raw);
  EXPECT_TRUE(h) << h.error().message();
  std::vector<std::byte> payload(h ? h->length : 0);
  EXPECT_TRUE(recv_all(fd, payload.data(), payload.size(), "test"));
  return {h ? *h : FrameHeader{}, payload};
}

// Whether the server closed the connection within `within` (a reset when it left what we sent unread).
bool closed_within(int fd, std::chrono::milliseconds within) {
  set_socket_timeouts(fd, within);
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

std::string text_of(std::span<const std::byte> payload) {
  return std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
}

bool all_zero(const AlignedBuffer& memory) {
  for (size_t i = 0; i < memory.size(); ++i)
    if (memory.data()[i] != std::byte{0}) return false;
  return true;
}

TEST(PeerAuth, ProofsDependOnKeySideNonceAndSegment) {
  AuthBytes nonce{};
  nonce[0] = std::byte{1};
  AuthBytes other = nonce;
  other[31] = std::byte{2};
  const AuthBytes p = peer_auth_proof("key", AuthSide::kClient, nonce, "seg");
  EXPECT_TRUE(same_auth_bytes(p, peer_auth_proof("key", AuthSide::kClient, nonce, "seg")));
  EXPECT_FALSE(same_auth_bytes(p, peer_auth_proof("kez", AuthSide::kClient, nonce, "seg")));
  EXPECT_FALSE(same_auth_bytes(p, peer_auth_proof("key", AuthSide::kServer, nonce, "seg")));
  EXPECT_FALSE(same_auth_bytes(p, peer_auth_proof("key", AuthSide::kClient, other, "seg")));
  EXPECT_FALSE(same_auth_bytes(p, peer_auth_proof("key", AuthSide::kClient, nonce, "seh")));
  EXPECT_FALSE(same_auth_bytes(*random_auth_nonce(), *random_auth_nonce()));
}

TEST(PeerAuth, TheRightKeyWritesAndReads) {
  KeyedServer server("s3cret");
  EXPECT_EQ(write_with_key(server, "s3cret", 7), "");
  EXPECT_TRUE(testing::has_pattern(server.memory.data(), 1024, 7));
}

TEST(PeerAuth, AWrongKeyIsRefusedOnBothSidesAndTheServerGoesOn) {
  KeyedServer server("s3cret");
  ::testing::internal::CaptureStderr();
  const std::string error = write_with_key(server, "guess", 7);
  std::this_thread::sleep_for(200ms);  // the accept thread logs right after its error reply
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(error, "peer authentication failed: wrong peer key")) << error;
  EXPECT_TRUE(contains(error, server.address())) << error;
  EXPECT_TRUE(contains(log, "refused peer 127.0.0.1:")) << log;
  EXPECT_TRUE(contains(log, "wrong peer key")) << log;
  EXPECT_TRUE(all_zero(server.memory));
  EXPECT_EQ(write_with_key(server, "s3cret", 8), "");  // the next peer with the key is served
  EXPECT_TRUE(testing::has_pattern(server.memory.data(), 1024, 8));
}

TEST(PeerAuth, NoKeyIsRefusedByAServerWithOne) {
  KeyedServer server("s3cret");
  const std::string error = write_with_key(server, "", 7);
  EXPECT_TRUE(contains(error, "asks for a peer key and this engine has none")) << error;
  EXPECT_TRUE(contains(error, server.address())) << error;
  EXPECT_TRUE(all_zero(server.memory));
}

TEST(PeerAuth, AClientWithAKeyRefusesAnOpenServer) {
  ::testing::internal::CaptureStderr();
  KeyedServer server("");
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(log, "without a peer key")) << log;  // the open listener is announced
  const std::string error = write_with_key(server, "s3cret", 7);
  EXPECT_TRUE(contains(error, "serves without a peer key")) << error;
  EXPECT_EQ(write_with_key(server, "", 8), "");  // without keys on either side: as before
  EXPECT_TRUE(testing::has_pattern(server.memory.data(), 1024, 8));
}

TEST(PeerAuth, ASilentClientIsClosedAtTheDeadlineWithoutHoldingOthers) {
  KeyedServer server("s3cret", 400ms);
  const auto t0 = std::chrono::steady_clock::now();
  auto silent = tcp_connect("127.0.0.1", server.engine->port(), 1000ms);
  ASSERT_TRUE(silent);
  auto half = tcp_connect("127.0.0.1", server.engine->port(), 1000ms);  // starts a hello, never finishes it
  ASSERT_TRUE(half);
  ASSERT_TRUE(send_all(half->get(), "RKVT", 4, "test"));
  EXPECT_EQ(write_with_key(server, "s3cret", 7), "");  // served while both wait
  EXPECT_TRUE(closed_within(silent->get(), 3000ms));
  EXPECT_TRUE(closed_within(half->get(), 3000ms));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 350ms);
  EXPECT_LT(waited, 2000ms);
}

TEST(PeerAuth, NoRequestIsServedBeforeTheHandshake) {
  KeyedServer server("s3cret");
  std::vector<std::byte> data(64, std::byte{0xAB});
  const uint32_t region = server.region.id;
  {  // a write as the first frame
    auto fd = tcp_connect("127.0.0.1", server.engine->port(), 1000ms);
    ASSERT_TRUE(fd);
    send_test_frame(fd->get(), FrameOp::kWrite, region, 0, data);
    auto [h, payload] = receive_frame(fd->get());
    EXPECT_NE(h.status, 0);
    EXPECT_TRUE(contains(text_of(payload), "before the handshake")) << text_of(payload);
    EXPECT_TRUE(closed_within(fd->get(), 1000ms));
  }
  {  // hello, then a write instead of the answer to the challenge
    auto fd = tcp_connect("127.0.0.1", server.engine->port(), 1000ms);
    ASSERT_TRUE(fd);
    send_test_frame(fd->get(), FrameOp::kHello, 0, 0, std::as_bytes(std::span(server.name.data(), server.name.size())));
    auto [challenge, nonce] = receive_frame(fd->get());
    EXPECT_EQ(challenge.op, FrameOp::kChallenge);
    EXPECT_EQ(nonce.size(), kAuthBytes);
    send_test_frame(fd->get(), FrameOp::kWrite, region, 0, data);
    auto [h, payload] = receive_frame(fd->get());
    EXPECT_NE(h.status, 0);
    EXPECT_TRUE(contains(text_of(payload), "peer authentication failed")) << text_of(payload);
    EXPECT_TRUE(closed_within(fd->get(), 1000ms));
  }
  {  // a replayed answer: another connection's challenge, so the proof does not match
    auto fd = tcp_connect("127.0.0.1", server.engine->port(), 1000ms);
    ASSERT_TRUE(fd);
    send_test_frame(fd->get(), FrameOp::kHello, 0, 0, std::as_bytes(std::span(server.name.data(), server.name.size())));
    (void)receive_frame(fd->get());
    AuthBytes stale{};
    AuthPayload auth{*random_auth_nonce(), peer_auth_proof("s3cret", AuthSide::kClient, stale, server.name)};
    send_test_frame(fd->get(), FrameOp::kAuth, 0, 0, encode_auth_payload(auth));
    auto [h, payload] = receive_frame(fd->get());
    EXPECT_TRUE(contains(text_of(payload), "wrong peer key")) << text_of(payload);
  }
  EXPECT_TRUE(all_zero(server.memory));
}

}  // namespace
}  // namespace recur::transfer
