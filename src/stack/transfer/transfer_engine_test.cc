#include "transfer/transfer_engine.h"

#include <sys/wait.h>

#include <filesystem>

#include <fmt/format.h>

#include "transfer/shm_segment.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstring>
#include <limits>
#include <thread>

#include "core/aligned_buffer.h"
#include "core/knobs.h"
#include "transfer/checksum.h"
#include "transfer/frame.h"
#include "transfer/socket_io.h"
#include "transfer/transfer_test_util.h"

namespace recur::transfer {
namespace {

using namespace std::chrono_literals;
using testing::fill_pattern;
using testing::has_pattern;
using testing::unique_segment;

std::unique_ptr<TransferEngine> make_engine(const std::string& name, std::string listen = "",
                                            std::chrono::milliseconds timeout = 5000ms) {
  auto e = TransferEngine::create({name, listen, timeout});
  EXPECT_TRUE(e) << e.error().message();
  return e ? std::move(*e) : nullptr;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(TransferEngine, ApiErrorsNameWhatIsWrong) {
  EXPECT_FALSE(TransferEngine::create({"bad/name"}));
  auto e = make_engine(unique_segment("api"));
  ASSERT_TRUE(e);
  AlignedBuffer mem(8192, true);
  auto r = e->register_memory(mem.data(), 4096, "cpu:0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->segment_offset, segment_offset(r->id, 0));
  EXPECT_FALSE(r->shared);
  auto overlap = e->register_memory(mem.data() + 100, 100, "cpu:0");
  ASSERT_FALSE(overlap);
  EXPECT_TRUE(contains(overlap.error().message(), "overlaps region")) << overlap.error().message();
  EXPECT_FALSE(e->unregister_memory(mem.data() + 1));

  auto missing = e->open_segment(unique_segment("nobody"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(contains(missing.error().message(), "no engine of that name")) << missing.error().message();
  EXPECT_FALSE(e->open_segment("127.0.0.1:0/x")) << "port 0 is not a peer";
  EXPECT_FALSE(e->open_segment("127.0.0.1:1/x")) << "nothing listens on port 1";

  // Loop back to our own segment through shared memory.
  auto peer_mem = e->allocate_shared(4096);
  ASSERT_TRUE(peer_mem);
  auto shared = e->register_memory(*peer_mem, 4096, "cpu:0");
  ASSERT_TRUE(shared);
  EXPECT_TRUE(shared->shared);
  auto self = e->open_segment(e->segment_name());
  ASSERT_TRUE(self) << self.error().message();

  BatchId b = *e->allocate_batch(2);
  std::byte unregistered[16];
  auto s = e->submit(b, std::vector<TransferRequest>{{TransferOpcode::kWrite, unregistered, *self, shared->segment_offset, 16}});
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.error().message(), "not inside registered memory")) << s.error().message();
  s = e->submit(b, std::vector<TransferRequest>{{TransferOpcode::kWrite, mem.data(), 99, shared->segment_offset, 16}});
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.error().message(), "segment handle 99")) << s.error().message();
  s = e->submit(b, std::vector<TransferRequest>{{TransferOpcode::kWrite, mem.data(), *self, 64, 16}});
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.error().message(), "region 0")) << s.error().message();
  s = e->submit(b, std::vector<TransferRequest>{{TransferOpcode::kStoreFlag, mem.data(), *self, shared->segment_offset, 4}});
  ASSERT_FALSE(s);
  std::vector<TransferRequest> three(3, {TransferOpcode::kWrite, mem.data(), *self, shared->segment_offset, 16});
  s = e->submit(b, three);
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.error().message(), "2 more fit")) << s.error().message();
  EXPECT_FALSE(e->submit(12345, three));
  EXPECT_FALSE(e->status(b, 0)) << "nothing submitted yet";

  // Past the end of the peer's region: the request fails with segment, region, offset and length;
  // the next request of the batch to that segment is not run.
  std::vector<TransferRequest> past = {
      {TransferOpcode::kWrite, mem.data(), *self, shared->segment_offset + 4000, 200},
      {TransferOpcode::kWrite, mem.data(), *self, shared->segment_offset, 16}};
  ASSERT_TRUE(e->submit(b, past));
  auto waited = e->wait_batch(b, 10s);
  ASSERT_FALSE(waited);
  auto st = e->status(b, 0);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, TransferState::kFailed);
  EXPECT_TRUE(contains(st->error, fmt::format("segment {}: region {}: offset 4000 + length 200 is past its end",
                                              e->segment_name(), shared->id)))
      << st->error;
  st = e->status(b, 1);
  EXPECT_EQ(st->state, TransferState::kFailed);
  EXPECT_TRUE(contains(st->error, "not run")) << st->error;
  EXPECT_TRUE(e->free_batch(b));
  EXPECT_FALSE(e->free_batch(b));

  EXPECT_TRUE(e->close_segment(*self));
  EXPECT_FALSE(e->close_segment(*self));
  b = *e->allocate_batch(1);
  EXPECT_FALSE(e->submit(b, std::vector<TransferRequest>{{TransferOpcode::kWrite, mem.data(), *self, shared->segment_offset, 16}}));
  EXPECT_TRUE(e->unregister_memory(mem.data()));
}

TEST(TransferEngine, SharedMemoryRoundTripInOneProcess) {
  auto a = make_engine(unique_segment("shm-a"));
  auto b = make_engine(unique_segment("shm-b"));
  ASSERT_TRUE(a && b);
  void* target = *b->allocate_shared(1 << 20);
  RegionInfo region = *b->register_memory(target, 1 << 20, "cpu:0");
  AlignedBuffer local(1 << 20, true);
  ASSERT_TRUE(a->register_memory(local.data(), local.size(), "cpu:0"));
  SegmentHandle peer = *a->open_segment(b->segment_name());
  auto regions = a->segment_regions(peer);
  ASSERT_TRUE(regions);
  ASSERT_EQ(regions->size(), 1u);
  EXPECT_EQ((*regions)[0].length, 1u << 20);

  fill_pattern(local.data(), 1 << 20, 1);
  BatchId w = testing::run_batch(*a, {{TransferOpcode::kWrite, local.data(), peer, region.segment_offset, 1 << 19},
                                      {TransferOpcode::kWrite, local.data() + (1 << 19), peer,
                                       region.segment_offset + (1 << 19), 1 << 19}});
  EXPECT_TRUE(a->wait_batch(w, 0ms));
  EXPECT_EQ(a->status(w, 1)->bytes, 1u << 19);
  EXPECT_TRUE(has_pattern(target, 1 << 20, 1));
  // A write that also checksums what it sends (the KV sender's block checksum): same value as
  // hashing in one piece, though the shared-memory path hashes 64 KiB chunks as it copies.
  uint64_t sum = 0;
  TransferRequest hashed{TransferOpcode::kWrite, local.data(), peer, region.segment_offset, 200000};
  hashed.checksum_out = &sum;
  hashed.checksum_seed = 99;
  BatchId h = testing::run_batch(*a, {hashed});
  EXPECT_TRUE(a->wait_batch(h, 0ms));
  EXPECT_EQ(sum, checksum64({local.data(), 200000}, 99));
  hashed.opcode = TransferOpcode::kRead;
  EXPECT_FALSE(a->submit(h, std::vector<TransferRequest>{hashed})) << "checksum_out is for writes";
  std::memset(local.data(), 0, local.size());
  BatchId r = testing::run_batch(*a, {{TransferOpcode::kRead, local.data(), peer, region.segment_offset, 1 << 20}});
  EXPECT_TRUE(a->wait_batch(r, 0ms));
  EXPECT_TRUE(has_pattern(local.data(), 1 << 20, 1));
}

// The peer in its own process: it registers memory, reports where, and checks what arrived.
// Steps over `to_child`: 1 = the parent wrote pattern 7; the child then writes pattern 8 and
// answers 1 (or 2 if the data was wrong).
int run_round_trip_peer(const std::string& name, bool tcp, testing::TestPipe& to_parent, testing::TestPipe& to_child) {
  auto e = TransferEngine::create({name, tcp ? "127.0.0.1:0" : ""});
  if (!e) return 10;
  // 1 MiB of data, then the ready flag the parent stores after writing it.
  void* mem = *(*e)->allocate_shared((1 << 20) + 8);
  auto region = (*e)->register_memory(mem, (1 << 20) + 8, "cpu:0");
  if (!region) return 11;
  to_parent.send(region->segment_offset);
  to_parent.send(uint64_t((*e)->port()));
  if (to_child.receive() != 1) return 12;
  auto* flag = reinterpret_cast<uint64_t*>(static_cast<std::byte*>(mem) + (1 << 20));
  if (std::atomic_ref<uint64_t>(*flag).load(std::memory_order_acquire) != 77) return 14;
  bool ok = has_pattern(mem, 1 << 20, 7);
  fill_pattern(mem, 1 << 20, 8);
  to_parent.send(ok ? 1 : 2);
  to_child.receive();  // the parent is done when this pipe closes or says so
  return ok ? 0 : 13;
}

void round_trip_across_processes(bool tcp) {
  std::string name = unique_segment(tcp ? "tcp-peer" : "shm-peer");
  testing::TestPipe to_parent, to_child;
  pid_t child = testing::fork_peer([&] { return run_round_trip_peer(name, tcp, to_parent, to_child); });
  uint64_t offset = to_parent.receive();
  int port = int(to_parent.receive());
  ASSERT_NE(offset, 0u);
  auto e = make_engine(unique_segment(tcp ? "tcp-self" : "shm-self"));
  AlignedBuffer local(1 << 20, true);
  ASSERT_TRUE(e->register_memory(local.data(), local.size(), "cpu:0"));
  auto peer = e->open_segment(tcp ? fmt::format("127.0.0.1:{}/{}", port, name) : name);
  ASSERT_TRUE(peer) << peer.error().message();
  fill_pattern(local.data(), local.size(), 7);
  std::vector<TransferRequest> writes;
  for (size_t i = 0; i < 16; ++i)
    writes.push_back({TransferOpcode::kWrite, local.data() + i * 65536, *peer, offset + i * 65536, 65536});
  alignas(8) static uint64_t ready = 77;
  ASSERT_TRUE(e->register_memory(&ready, sizeof ready, "cpu:0"));
  writes.push_back({TransferOpcode::kStoreFlag, &ready, *peer, offset + (1 << 20), 8});
  BatchId w = testing::run_batch(*e, writes);
  auto ok = e->wait_batch(w, 0ms);
  EXPECT_TRUE(ok) << ok.error().message();
  to_child.send(1);
  EXPECT_EQ(to_parent.receive(), 1u) << "the peer saw the data";
  BatchId r = testing::run_batch(*e, {{TransferOpcode::kRead, local.data(), *peer, offset, 1 << 20}});
  ok = e->wait_batch(r, 0ms);
  EXPECT_TRUE(ok) << ok.error().message();
  EXPECT_TRUE(has_pattern(local.data(), 1 << 20, 8));
  to_child.send(2);
  EXPECT_EQ(testing::wait_exit_code(child), 0);
}

TEST(TransferEngine, SharedMemoryRoundTripAcrossProcesses) { round_trip_across_processes(false); }
TEST(TransferEngine, TcpRoundTripAcrossProcesses) { round_trip_across_processes(true); }

TEST(TransferEngine, TcpUnknownSegmentNameIsRefused) {
  auto server = make_engine(unique_segment("named"), "127.0.0.1:0");
  auto client = make_engine(unique_segment("asker"));
  auto peer = client->open_segment(fmt::format("127.0.0.1:{}/someone-else", server->port()));
  ASSERT_FALSE(peer);
  EXPECT_EQ(peer.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(contains(peer.error().message(), "unknown segment 'someone-else'")) << peer.error().message();
}

// A peer killed while requests are in flight: they fail (peer gone), nothing hangs, and the
// engine stays usable.
TEST(TransferEngine, PeerKilledMidTransferFailsTheBatch) {
  std::string name = unique_segment("victim");
  testing::TestPipe to_parent, to_child;
  pid_t child = testing::fork_peer([&] { return run_round_trip_peer(name, true, to_parent, to_child); });
  uint64_t offset = to_parent.receive();
  int port = int(to_parent.receive());
  // A long timeout: whatever fails here fails because the peer died, not because it was slow.
  auto e = make_engine(unique_segment("survivor"), "", 60s);
  AlignedBuffer local(1 << 20, true);
  ASSERT_TRUE(e->register_memory(local.data(), local.size(), "cpu:0"));
  SegmentHandle peer = *e->open_segment(fmt::format("127.0.0.1:{}/{}", port, name));
  // Stop the peer so the requests pile up in flight, then kill it.
  ::kill(child, SIGSTOP);
  int status = 0;
  ::waitpid(child, &status, WUNTRACED);
  std::vector<TransferRequest> writes;
  for (size_t i = 0; i < 64; ++i)
    writes.push_back({TransferOpcode::kWrite, local.data(), *&peer, offset, 1 << 20});
  BatchId b = *e->allocate_batch(writes.size());
  ASSERT_TRUE(e->submit(b, writes));
  EXPECT_FALSE(e->free_batch(b)) << "pending requests keep the batch";
  EXPECT_EQ(e->wait_batch(b, 0ms).error().code(), ErrorCode::kTimeout);
  ::kill(child, SIGKILL);
  EXPECT_EQ(testing::wait_exit_code(child), 128 + SIGKILL);
  auto waited = e->wait_batch(b, 50s);
  ASSERT_FALSE(waited);
  EXPECT_NE(waited.error().code(), ErrorCode::kTimeout) << waited.error().message();
  size_t failed = 0;
  for (size_t i = 0; i < writes.size(); ++i) {
    TransferStatus s = *e->status(b, i);
    EXPECT_NE(s.state, TransferState::kPending);
    if (s.state == TransferState::kFailed) {
      ++failed;
      EXPECT_TRUE(contains(s.error, "peer gone") || contains(s.error, "not run")) << s.error;
    }
  }
  EXPECT_GT(failed, 0u);
  EXPECT_TRUE(e->free_batch(b));
  // A later request reconnects, finds nobody and fails at once.
  BatchId again = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), peer, offset, 64}});
  auto st = e->status(again, 0);
  EXPECT_EQ(st->state, TransferState::kFailed);
  EXPECT_TRUE(contains(st->error, "peer gone")) << st->error;
  EXPECT_TRUE(make_engine(name)) << "serving the dead peer's name again also removes its leftovers";
  // The surviving engine goes on serving other peers.
  auto other = make_engine(unique_segment("other"), "127.0.0.1:0");
  void* mem = *other->allocate_shared(4096);
  RegionInfo region = *other->register_memory(mem, 4096, "cpu:0");
  SegmentHandle next = *e->open_segment(fmt::format("127.0.0.1:{}/{}", other->port(), other->segment_name()));
  fill_pattern(local.data(), 4096, 3);
  BatchId ok = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), next, region.segment_offset, 4096}});
  EXPECT_TRUE(e->wait_batch(ok, 0ms));
  EXPECT_TRUE(has_pattern(mem, 4096, 3));
}

TEST(TransferEngine, SharedMemoryPeerThatExitedIsReportedGone) {
  std::string name = unique_segment("shm-gone");
  testing::TestPipe to_parent, to_child;
  pid_t child = testing::fork_peer([&] { return run_round_trip_peer(name, false, to_parent, to_child); });
  uint64_t offset = to_parent.receive();
  to_parent.receive();
  auto e = make_engine(unique_segment("shm-left"));
  AlignedBuffer local(4096, true);
  ASSERT_TRUE(e->register_memory(local.data(), local.size(), "cpu:0"));
  SegmentHandle peer = *e->open_segment(name);
  ::kill(child, SIGKILL);
  testing::wait_exit_code(child);
  BatchId b = testing::run_batch(*e, {{TransferOpcode::kWrite, local.data(), peer, offset, 64}});
  auto st = e->status(b, 0);
  EXPECT_EQ(st->state, TransferState::kFailed);
  EXPECT_TRUE(contains(st->error, "peer gone")) << st->error;
  EXPECT_TRUE(contains(st->error, "exited")) << st->error;
  // Its name can be served again: a dead owner's directory is replaced.
  EXPECT_TRUE(make_engine(name));
}

// A fake peer speaking the protocol: answers hello, then misbehaves on the first request.
enum class FakeFault { kCorruptReply, kCloseMidReply, kSilent };

void fake_peer(int listener, const std::string& name, FakeFault fault) {
  int fd = ::accept(listener, nullptr, nullptr);
  FrameHeaderBytes raw;
  std::vector<std::byte> payload(256);
  auto reply = [&](uint64_t id, std::span<const std::byte> body, uint64_t sum) {
    FrameHeader h;
    h.op = FrameOp::kReply;
    h.request_id = id;
    h.length = body.size();
    h.checksum = sum;
    auto bytes = encode_frame_header(h);
    (void)send_all(fd, bytes.data(), bytes.size(), "fake");
    (void)send_all(fd, body.data(), body.size() / (fault == FakeFault::kCloseMidReply && h.length > 100 ? 2 : 1), "fake");
  };
  (void)recv_all(fd, raw.data(), raw.size(), "fake");
  FrameHeader hello = *decode_frame_header(raw);
  (void)recv_all(fd, payload.data(), hello.length, "fake");
  auto table = encode_region_table(std::vector<RegionEntry>{{1, 4096}});
  FrameHeader h;
  reply(hello.request_id, table, checksum64(table));
  (void)recv_all(fd, raw.data(), raw.size(), "fake");
  if (fault == FakeFault::kSilent) {
    // Never answer; hold the connection until the client gives up and closes it.
    char byte;
    while (::recv(fd, &byte, 1, 0) > 0) {
    }
    ::close(fd);
    return;
  }
  FrameHeader read = *decode_frame_header(raw);
  std::vector<std::byte> data(read.length, std::byte{5});
  uint64_t sum = checksum64(data);
  if (fault == FakeFault::kCorruptReply) data[3] = std::byte{6};
  reply(read.request_id, data, sum);
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
  (void)name;
}

std::string read_through_fake_peer(FakeFault fault, std::chrono::milliseconds timeout = 5000ms) {
  int port = 0;
  auto listener = tcp_listen("127.0.0.1", 0, &port);
  EXPECT_TRUE(listener);
  std::thread peer([&] { fake_peer(listener->get(), "fake", fault); });
  auto e = make_engine(unique_segment("reader"), "", timeout);
  AlignedBuffer local(4096, true);
  EXPECT_TRUE(e->register_memory(local.data(), local.size(), "cpu:0"));
  auto seg = e->open_segment(fmt::format("127.0.0.1:{}/fake", port));
  EXPECT_TRUE(seg) << seg.error().message();
  BatchId b = testing::run_batch(*e, {{TransferOpcode::kRead, local.data(), *seg, segment_offset(1, 0), 1024}});
  auto st = e->status(b, 0);
  e.reset();  // closes the connection, which ends a silent peer
  peer.join();
  EXPECT_EQ(st->state, TransferState::kFailed);
  return st->error;
}

TEST(TransferEngine, CorruptedTcpPayloadIsCaughtByTheChecksum) {
  std::string error = read_through_fake_peer(FakeFault::kCorruptReply);
  EXPECT_TRUE(contains(error, "checksum")) << error;
}

TEST(TransferEngine, TruncatedTcpPayloadFailsTheRequest) {
  std::string error = read_through_fake_peer(FakeFault::kCloseMidReply);
  EXPECT_TRUE(contains(error, "cut short")) << error;
}

// A peer that accepts a request and never answers: the request fails once the engine's timeout
// passes (never a hang).
TEST(TransferEngine, SilentPeerTimesOut) {
  std::string error = read_through_fake_peer(FakeFault::kSilent, 200ms);
  EXPECT_TRUE(contains(error, "no reply within 200 ms")) << error;
  EXPECT_TRUE(contains(error, "region 1 offset 0 length 1024")) << error;
}

TEST(TransferEngine, ServerAnswersMalformedFramesWithAnErrorAndCloses) {
  auto e = make_engine(unique_segment("strict"), "127.0.0.1:0");
  auto fd = tcp_connect("127.0.0.1", e->port(), 5000ms);
  ASSERT_TRUE(fd);
  FrameHeader h;
  h.op = FrameOp::kWrite;
  h.region = 1;
  h.length = 16;
  FrameHeaderBytes raw = encode_frame_header(h);
  raw[0] = std::byte{'Z'};
  ASSERT_TRUE(send_all(fd->get(), raw.data(), raw.size(), "test"));
  ASSERT_EQ(*recv_all(fd->get(), raw.data(), raw.size(), "test"), raw.size());
  FrameHeader reply = *decode_frame_header(raw);
  EXPECT_EQ(reply.status, reply_status(ErrorCode::kParse));
  std::string message(reply.length, '\0');
  ASSERT_EQ(*recv_all(fd->get(), message.data(), message.size(), "test"), message.size());
  EXPECT_TRUE(contains(message, "byte 0: magic")) << message;
  EXPECT_EQ(*recv_all(fd->get(), raw.data(), 1, "test"), 0u) << "then the connection closes";
}

// ---- the emulated link (EngineOptions::link_bytes_per_s, knob transfer.link_mbps) ----
// Only lower bounds on time: pacing guarantees them; an upper bound would depend on the load.

using LinkSeconds = std::chrono::duration<double>;
LinkSeconds link_wire_time(uint64_t bytes, double rate) { return LinkSeconds(double(bytes) / rate); }

std::unique_ptr<TransferEngine> make_linked_engine(const std::string& name, double rate) {
  auto e = TransferEngine::create({.segment_name = name, .link_bytes_per_s = rate});
  EXPECT_TRUE(e) << e.error().message();
  return e ? std::move(*e) : nullptr;
}

TEST(TransferEngineLink, PacesABatchOverSharedMemoryAndDeliversItIntact) {
  constexpr double kRate = 200e6;  // 200 MB/s: 2 MiB take >= 10.5 ms
  constexpr size_t kBytes = 2 << 20, kPiece = 64 << 10;
  auto a = make_linked_engine(unique_segment("link-a"), kRate);
  auto b = make_engine(unique_segment("link-b"));
  ASSERT_TRUE(a && b);
  void* target = *b->allocate_shared(kBytes + 8);
  RegionInfo region = *b->register_memory(target, kBytes + 8, "cpu:0");
  AlignedBuffer local(kBytes + 8, true);
  ASSERT_TRUE(a->register_memory(local.data(), local.size(), "cpu:0"));
  SegmentHandle peer = *a->open_segment(b->segment_name());
  fill_pattern(local.data(), kBytes, 21);
  std::vector<uint64_t> sums(kBytes / kPiece);
  std::vector<TransferRequest> writes;
  for (size_t i = 0; i < kBytes / kPiece; ++i) {
    TransferRequest w{TransferOpcode::kWrite, local.data() + i * kPiece, peer, region.segment_offset + i * kPiece, kPiece};
    w.checksum_out = &sums[i];
    w.checksum_seed = i;
    writes.push_back(w);
  }
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(local.data() + kBytes)).store(5);
  writes.push_back({TransferOpcode::kStoreFlag, local.data() + kBytes, peer, region.segment_offset + kBytes, 8});

  const auto submitted = std::chrono::steady_clock::now();
  BatchId batch = testing::run_batch(*a, writes);
  const LinkSeconds took = std::chrono::steady_clock::now() - submitted;
  auto ok = a->wait_batch(batch, 0ms);
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_GE(took, link_wire_time(kBytes + 8, kRate)) << "the batch finished before the link could carry it";
  EXPECT_TRUE(has_pattern(target, kBytes, 21));
  EXPECT_EQ(std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(static_cast<std::byte*>(target) + kBytes)).load(), 5u);
  for (size_t i = 0; i < sums.size(); ++i)
    EXPECT_EQ(sums[i], checksum64({local.data() + i * kPiece, kPiece}, i)) << "piece " << i;
  EXPECT_EQ(a->status(batch, 0)->bytes, kPiece);
}

TEST(TransferEngineLink, RequestsQueueBehindEachOtherOverTcp) {
  constexpr double kRate = 100e6;  // two 1 MiB requests: the second completes >= 21 ms after submit
  constexpr size_t kBytes = 1 << 20;
  auto a = make_linked_engine(unique_segment("link-tcp-a"), kRate);
  auto b = make_engine(unique_segment("link-tcp-b"), "127.0.0.1:0");
  ASSERT_TRUE(a && b);
  AlignedBuffer target(2 * kBytes, true);
  RegionInfo region = *b->register_memory(target.data(), target.size(), "cpu:0");
  AlignedBuffer local(2 * kBytes, true);
  ASSERT_TRUE(a->register_memory(local.data(), local.size(), "cpu:0"));
  auto peer = a->open_segment(fmt::format("127.0.0.1:{}/{}", b->port(), b->segment_name()));
  ASSERT_TRUE(peer) << peer.error().message();
  fill_pattern(local.data(), local.size(), 22);
  BatchId first = *a->allocate_batch(1), second = *a->allocate_batch(1);
  const auto submitted = std::chrono::steady_clock::now();
  ASSERT_TRUE(a->submit(first, std::vector<TransferRequest>{{TransferOpcode::kWrite, local.data(), *peer,
                                                             region.segment_offset, kBytes}}));
  ASSERT_TRUE(a->submit(second, std::vector<TransferRequest>{{TransferOpcode::kWrite, local.data() + kBytes, *peer,
                                                              region.segment_offset + kBytes, kBytes}}));
  auto ok = a->wait_batch(second, 20s);
  const LinkSeconds took = std::chrono::steady_clock::now() - submitted;
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_GE(took, 2 * link_wire_time(kBytes, kRate)) << "the second request did not wait for the first on the link";
  EXPECT_TRUE(a->wait_batch(first, 20s));
  EXPECT_TRUE(has_pattern(target.data(), target.size(), 22));
}

TEST(TransferEngineLink, ZeroIsUnlimitedAndBadRatesAreRefused) {
  EXPECT_EQ(EngineOptions{}.link_bytes_per_s, 0.0) << "no emulation unless asked";
  for (double bad : {-1.0, 0.5, std::numeric_limits<double>::infinity(), std::nan("")}) {
    auto e = TransferEngine::create({.segment_name = unique_segment("link-bad"), .link_bytes_per_s = bad});
    ASSERT_FALSE(e) << bad;
    EXPECT_TRUE(contains(e.error().message(), "link_bytes_per_s")) << e.error().message();
  }
  // Unlimited: a write completes (with its data) as it always did.
  auto a = make_linked_engine(unique_segment("link-zero"), 0);
  ASSERT_TRUE(a);
  void* target = *a->allocate_shared(4096);
  RegionInfo region = *a->register_memory(target, 4096, "cpu:0");
  AlignedBuffer local(4096, true);
  ASSERT_TRUE(a->register_memory(local.data(), local.size(), "cpu:0"));
  fill_pattern(local.data(), 4096, 23);
  BatchId batch = testing::run_batch(
      *a, {{TransferOpcode::kWrite, local.data(), *a->open_segment(a->segment_name()), region.segment_offset, 4096}});
  EXPECT_TRUE(a->wait_batch(batch, 0ms));
  EXPECT_TRUE(has_pattern(target, 4096, 23));
}

TEST(TransferEngineLink, ShutdownWakesARequestWaitingOnTheLink) {
  // 4 MiB at 1 MB/s would wait 4 s: destroying the engine must not (the test would be slow).
  auto a = make_linked_engine(unique_segment("link-stop"), 1e6);
  ASSERT_TRUE(a);
  void* target = *a->allocate_shared(4 << 20);
  RegionInfo region = *a->register_memory(target, 4 << 20, "cpu:0");
  AlignedBuffer local(4 << 20, true);
  ASSERT_TRUE(a->register_memory(local.data(), local.size(), "cpu:0"));
  BatchId batch = *a->allocate_batch(1);
  ASSERT_TRUE(a->submit(batch, std::vector<TransferRequest>{{TransferOpcode::kWrite, local.data(),
                                                             *a->open_segment(a->segment_name()),
                                                             region.segment_offset, 4 << 20}}));
  EXPECT_EQ(a->wait_batch(batch, 1ms).error().code(), ErrorCode::kTimeout) << "still on the link";
  a.reset();
}

TEST(TransferEngineLink, KnobIsRegisteredWithItsDefault) {
  const KnobSpec* spec = KnobRegistry::global().find("transfer.link_mbps");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->type, KnobType::kInt);
  EXPECT_EQ(spec->default_value, "0");
  EXPECT_EQ(spec->max, 1000000);
  EXPECT_EQ(spec->components, std::vector<std::string>{"transfer:link"});
  Config knobs;
  EXPECT_EQ(*link_bytes_per_s(knobs), 0.0);
  ASSERT_TRUE(knobs.set("transfer.link_mbps", "250"));
  EXPECT_EQ(*link_bytes_per_s(knobs), 250e6) << "MB = 10^6 bytes";
  EXPECT_FALSE(knobs.set("transfer.link_mbps", "-1"));
}

std::vector<std::string> shm_objects_with_prefix(const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().filename().string());
  return out;
}

// An engine whose process died without its destructor (kill -9) leaves its directory and
// allocations in /dev/shm; the sweep removes exactly those, and nothing of a live process.
TEST(ShmSweep, RemovesADeadProcessesObjectsAndKeepsLiveOnes) {
  const std::string dead_name = fmt::format("sweep-dead-{}", getpid());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto e = TransferEngine::create({.segment_name = dead_name});
    if (!e || !(*e)->allocate_shared(4096)) _exit(1);
    _exit(0);  // no destructors: what kill -9 leaves
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(shm_objects_with_prefix("recur-kv." + dead_name).size(), 2u);  // directory + allocation
  const std::string live_name = fmt::format("sweep-live-{}", getpid());
  auto live = TransferEngine::create({.segment_name = live_name});
  ASSERT_TRUE(live);
  ASSERT_TRUE((*live)->allocate_shared(4096));
  sweep_dead_shm_objects();
  EXPECT_TRUE(shm_objects_with_prefix("recur-kv." + dead_name).empty());
  EXPECT_EQ(shm_objects_with_prefix("recur-kv." + live_name).size(), 2u);
}

}  // namespace
}  // namespace recur::transfer
